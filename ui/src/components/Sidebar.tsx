import { useStore } from '../lib/store'
import { VIEWS, navigate, type View } from '../lib/nav'
import { shortcutLabel } from '../lib/platform'
import { modelsStore } from '../features/models/modelsStore'
import { isActive, jobsStore } from '../features/transcribe/jobsStore'
import { isRunning as speaking, speakStore } from '../features/speak/speakStore'
import { batchStore, isRunning as batching } from '../features/batch/batchStore'
import { chatStore } from '../features/chat/chatStore'
import { dictateStore } from '../features/dictate/dictateStore'
import { Icon } from './Icon'

export function Sidebar({ view, onShowShortcuts }: { view: View; onShowShortcuts: () => void }) {
  const activeJobs = useStore(jobsStore, (s) => s.order.filter((id) => isActive(s.items[id]?.job.status ?? '')).length)
  const downloading = useStore(modelsStore, (s) => Object.keys(s.downloads).length)
  const speakBusy = useStore(speakStore, speaking)
  const batchBusy = useStore(batchStore, batching)
  const chatBusy = useStore(chatStore, (s) => s.activity != null)
  const dictating = useStore(dictateStore, (s) => s.phase !== 'idle')
  return (
    <nav className="sidebar" aria-label="Main">
      <div className="brand">
        <span className="brand-mark" aria-hidden="true">
          <Icon name="transcribe" size={14} />
        </span>
        <span className="brand-name">Izwi</span>
      </div>
      <ul className="nav-list">
        {VIEWS.map((v) => (
          <li key={v.id}>
            <button
              type="button"
              className={`nav-item${view === v.id ? ' nav-item-on' : ''}`}
              aria-current={view === v.id ? 'page' : undefined}
              data-tooltip={`${v.label} (${shortcutLabel(v.key)})`}
              data-tooltip-side="right"
              onClick={() => navigate(v.id)}
            >
              <Icon name={v.id} />
              <span className="nav-label">{v.label}</span>
              {v.id === 'transcribe' && activeJobs > 0 && (
                <span className="nav-badge" aria-label={`${activeJobs} in progress`}>
                  {activeJobs}
                </span>
              )}
              {((v.id === 'speak' && speakBusy) ||
                (v.id === 'batch' && batchBusy) ||
                (v.id === 'chat' && chatBusy) ||
                (v.id === 'dictate' && dictating)) && (
                <span className="nav-badge nav-badge-dot" aria-label="In progress">
                  <Icon name="spinner" size={10} />
                </span>
              )}
              {v.id === 'models' && downloading > 0 && (
                <span className="nav-badge nav-badge-dot" aria-label="Downloading">
                  <Icon name="download" size={10} />
                </span>
              )}
              <span className="nav-key" aria-hidden="true">
                {shortcutLabel(v.key)}
              </span>
            </button>
          </li>
        ))}
      </ul>
      <div className="sidebar-foot">
        <button
          type="button"
          className="btn btn-ghost btn-sm"
          onClick={onShowShortcuts}
          data-tooltip="Keyboard shortcuts (?)"
          data-tooltip-side="right"
        >
          <Icon name="keyboard" size={14} /> Shortcuts
        </button>
      </div>
    </nav>
  )
}

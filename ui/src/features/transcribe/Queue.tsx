import { clearFinished, isActive, useJobs } from './jobsStore'
import { QueueRow } from './QueueRow'

export function Queue({ selected, onOpen }: { selected: number | null; onOpen: (jobId: number) => void }) {
  const { items, order } = useJobs()
  const list = order.map((id) => items[id]).filter(Boolean)
  const active = list.filter((it) => isActive(it.job.status)).length
  const running = list.filter((it) => it.job.status === 'running').length
  const finished = list.length - active
  // The runtime runs a few at once; the rest wait for a slot.
  const summary = active
    ? [running && `${running} running`, active - running && `${active - running} queued`].filter(Boolean).join(' · ')
    : 'All done'
  return (
    <section className="queue" aria-label="Queue">
      <header className="pane-header">
        <h2 className="section-label">
          Queue <span className="count">{list.length}</span>
        </h2>
        <span className="muted small" data-testid="queue-summary">
          {summary}
        </span>
        {finished > 0 && (
          <button type="button" className="btn btn-ghost btn-sm" onClick={clearFinished}>
            Clear finished
          </button>
        )}
      </header>
      <ul className="queue-list">
        {list.map((it) => (
          <QueueRow key={it.job.id} item={it} selected={selected === it.job.id} onOpen={onOpen} />
        ))}
      </ul>
    </section>
  )
}

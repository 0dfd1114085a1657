// A transcript's header: its title and facts, and the toolbar (find, copy, export).

import type { ExportFormat } from '../../bindings'
import { Icon } from '../../components/Icon'
import { Menu } from '../../components/Menu'
import { copyText } from '../../lib/clipboard'
import { formatDuration, formatSpeed, languageName, plural } from '../../lib/format'
import { shortcutLabel } from '../../lib/platform'
import { toast } from '../../lib/toast'
import { EXPORT_FORMATS, exportTranscriptAs } from './exportTranscript'

export function TranscriptHeader({
  jobId,
  title,
  sourcePath,
  language,
  duration,
  modelId,
  rtf,
  texts,
  edited,
  exportable,
  exportOpen,
  onExportOpenChange,
  searchOpen,
  onToggleSearch,
  onClose,
}: {
  jobId: number
  title: string
  sourcePath: string | null
  language: string | null
  duration: number
  modelId: string | null
  rtf: number | null
  /** The segments' text, in order. */
  texts: string[]
  /** How many segments the user corrected. */
  edited: number
  exportable: boolean
  exportOpen: boolean
  onExportOpenChange: (open: boolean) => void
  searchOpen: boolean
  onToggleSearch: () => void
  onClose?: () => void
}) {
  const copyAll = async () => {
    const ok = await copyText(texts.map((t) => t.trim()).join('\n'))
    toast(
      ok ? { kind: 'success', title: 'Transcript copied' } : { kind: 'error', title: 'Could not copy the transcript.' },
    )
  }
  const count = texts.length
  return (
    <header className="transcript-header">
      <div className="transcript-heading">
        {onClose && (
          <button
            type="button"
            className="btn btn-icon btn-ghost"
            aria-label="Close transcript"
            data-tooltip="Close"
            onClick={onClose}
          >
            <Icon name="arrowLeft" />
          </button>
        )}
        <div className="transcript-titles">
          <h2 className="transcript-title" title={sourcePath ?? undefined}>
            {title}
          </h2>
          <div className="meta">
            {language && <span>{languageName(language)}</span>}
            {duration > 0 && <span>{formatDuration(duration)}</span>}
            {modelId && <span>{modelId}</span>}
            {rtf != null && <span title={`Real-time factor ${rtf.toFixed(3)}`}>{formatSpeed(rtf)}</span>}
            {count > 0 && <span>{plural(count, 'segment')}</span>}
            {edited > 0 && <span>{edited === 1 ? '1 corrected' : `${edited} corrected`}</span>}
          </div>
        </div>
      </div>
      <div className="toolbar">
        <button
          type="button"
          className={`btn btn-icon${searchOpen ? ' btn-active' : ''}`}
          aria-label="Search in transcript"
          data-tooltip={`Search (${shortcutLabel('F')})`}
          onClick={onToggleSearch}
        >
          <Icon name="search" />
        </button>
        <button
          type="button"
          className="btn btn-icon"
          aria-label="Copy all"
          data-tooltip="Copy all text"
          disabled={!count}
          onClick={copyAll}
        >
          <Icon name="copy" />
        </button>
        <Menu
          label="Export formats"
          open={exportOpen}
          onOpenChange={onExportOpenChange}
          items={EXPORT_FORMATS.map((f) => ({ id: f.id, label: f.label, hint: f.hint, disabled: !exportable }))}
          onSelect={(id) => exportTranscriptAs(jobId, id as ExportFormat, title, sourcePath)}
          button={(p) => (
            <button
              type="button"
              className="btn"
              disabled={!exportable}
              data-tooltip={exportable ? `Export (${shortcutLabel('E')})` : 'Available when the transcript is done'}
              {...p}
            >
              <Icon name="export" /> Export
            </button>
          )}
        />
      </div>
    </header>
  )
}

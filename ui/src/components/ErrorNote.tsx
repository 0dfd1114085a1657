import { describeError } from '../lib/errors'
import { Icon } from './Icon'

/** An error where it happened: one plain sentence, the detail under it. */
export function ErrorNote({
  error,
  title,
  onRetry,
  onDismiss,
  compact,
}: {
  error: unknown
  title?: string
  onRetry?: () => void
  onDismiss?: () => void
  compact?: boolean
}) {
  const { title: lead, detail } = describeError(error)
  return (
    <div className={`error-note${compact ? ' error-note-compact' : ''}`} role="alert">
      <Icon name="alert" size={14} />
      <div className="error-note-text">
        <strong>{title ?? lead}</strong>
        {detail && <span className="error-note-detail">{title ? `${lead} ${detail}` : detail}</span>}
        {!detail && title && lead !== title && <span className="error-note-detail">{lead}</span>}
      </div>
      {onRetry && (
        <button type="button" className="btn btn-ghost btn-sm" onClick={onRetry}>
          Try again
        </button>
      )}
      {onDismiss && (
        <button type="button" className="btn btn-icon btn-ghost btn-sm" aria-label="Dismiss" onClick={onDismiss}>
          <Icon name="close" size={12} />
        </button>
      )}
    </div>
  )
}

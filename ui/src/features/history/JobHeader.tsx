// The header of a speech or batch job's view: close, kind and title, facts, actions.

import type { ReactNode } from 'react'
import type { Job } from '../../bindings'
import { Icon } from '../../components/Icon'
import { StatusBadge } from '../transcribe/QueueRow'
import { JOB_KINDS } from './jobKind'

export function JobHeader({
  job,
  title,
  titleHint,
  meta,
  actions,
  onClose,
}: {
  job: Job
  title: string
  titleHint?: string
  meta: ReactNode
  actions?: ReactNode
  onClose?: () => void
}) {
  const kind = JOB_KINDS[job.kind]
  return (
    <header className="transcript-header">
      <div className="transcript-heading">
        {onClose && (
          <button
            type="button"
            className="btn btn-icon btn-ghost"
            aria-label="Close"
            data-tooltip="Close"
            onClick={onClose}
          >
            <Icon name="arrowLeft" />
          </button>
        )}
        <div className="transcript-titles">
          <h2 className="transcript-title" title={titleHint}>
            <Icon name={kind.icon} size={16} aria-hidden="true" /> {title}
          </h2>
          <div className="meta">
            <span>{kind.label}</span>
            {job.status !== 'done' && <StatusBadge status={job.status} />}
            {meta}
          </div>
        </div>
      </div>
      {actions && <div className="toolbar">{actions}</div>}
    </header>
  )
}

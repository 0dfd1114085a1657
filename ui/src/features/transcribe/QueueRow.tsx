// One file in the queue: name, status, progress with ETA, cancel; the reason when it failed.

import { Icon } from '../../components/Icon'
import { ProgressBar } from '../../components/ProgressBar'
import { toast } from '../../lib/toast'
import { describeError, jobFailureText } from '../../lib/errors'
import { basename, dirname, formatDuration, formatSpeed } from '../../lib/format'
import { activeStage, cancelJob, removeFromQueue, retryJob, type QueueItem } from './jobsStore'

const STATUS_LABEL: Record<string, string> = {
  queued: 'Queued',
  running: 'Running',
  done: 'Done',
  failed: 'Failed',
  cancelled: 'Cancelled',
  interrupted: 'Interrupted',
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${status}`}>{STATUS_LABEL[status] ?? status}</span>
}

export function QueueRow({
  item,
  selected,
  onOpen,
}: {
  item: QueueItem
  selected?: boolean
  onOpen?: (jobId: number) => void
}) {
  const { job } = item
  const name = basename(job.input)
  const active = job.status === 'queued' || job.status === 'running'
  const problem = job.status === 'failed' || job.status === 'interrupted'
  const cancel = async () => {
    try {
      await cancelJob(job.id)
    } catch (e) {
      const { title, detail } = describeError(e)
      toast({ kind: 'error', title: `Could not cancel ${name}: ${title}`, detail })
    }
  }
  const retry = async () => {
    try {
      await retryJob(job.id)
    } catch (e) {
      const { title, detail } = describeError(e)
      toast({ kind: 'error', title: `Could not queue ${name} again: ${title}`, detail })
    }
  }
  const stage = active ? activeStage(item) : null
  let detail: string
  if (stage) detail = stage.text
  else if (job.status === 'done')
    detail = [formatDuration(job.metrics.audio_seconds), job.metrics.rtf != null ? formatSpeed(job.metrics.rtf) : '']
      .filter((x) => x && x !== '—')
      .join(' · ')
  else detail = ''

  return (
    <li
      className={`queue-row${selected ? ' queue-row-selected' : ''}${problem ? ' queue-row-problem' : ''}`}
      aria-label={name}
      data-status={job.status}
      data-job={job.id}
    >
      <button
        type="button"
        className="queue-row-main"
        onClick={() => onOpen?.(job.id)}
        aria-current={selected ? 'true' : undefined}
        title={job.input}
      >
        <span className="queue-row-top">
          <Icon name="file" size={14} />
          <span className="queue-row-name">{name}</span>
          <StatusBadge status={job.status} />
        </span>
        <span className="queue-row-dir">
          <bdi>{dirname(job.input)}</bdi>
        </span>
        {active && (
          <ProgressBar
            value={stage?.value ?? null}
            label={`Progress of ${name}`}
            tone={job.status === 'queued' ? 'muted' : 'accent'}
            size="xs"
          />
        )}
        {detail && (
          <span className="queue-row-detail tabular" data-testid="queue-detail">
            {detail}
          </span>
        )}
        {problem && <span className="queue-row-error">{jobFailureText(job.status, job.error)}</span>}
      </button>
      <div className="queue-row-actions">
        {active ? (
          <button
            type="button"
            className="btn btn-icon btn-ghost btn-sm"
            aria-label={`Cancel ${name}`}
            data-tooltip="Cancel"
            disabled={item.cancelling}
            onClick={cancel}
          >
            <Icon name={item.cancelling ? 'spinner' : 'stop'} size={12} />
          </button>
        ) : (
          <>
            {(problem || job.status === 'cancelled') && (
              <button
                type="button"
                className="btn btn-icon btn-ghost btn-sm"
                aria-label={`Retry ${name}`}
                data-tooltip="Queue it again with the same options"
                data-tooltip-align="end"
                onClick={retry}
              >
                <Icon name="redo" size={12} />
              </button>
            )}
            <button
              type="button"
              className="btn btn-icon btn-ghost btn-sm"
              aria-label={`Remove ${name} from the list`}
              data-tooltip="Remove from list (stays in History)"
              data-tooltip-align="end"
              onClick={() => removeFromQueue(job.id)}
            >
              <Icon name="close" size={12} />
            </button>
          </>
        )}
      </div>
    </li>
  )
}

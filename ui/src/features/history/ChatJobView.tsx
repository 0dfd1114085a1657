// A chat completion of the API in History: what was asked last, and the reply.

import type { ChatJobDetail } from '../../bindings'
import { CopyButton } from '../../components/CopyButton'
import { ErrorNote } from '../../components/ErrorNote'
import { jobFailureText } from '../../lib/errors'
import { formatDate } from '../../lib/format'
import { JobHeader } from './JobHeader'

export function ChatJobView({ detail, onClose }: { detail: ChatJobDetail; onClose?: () => void }) {
  const { job } = detail
  const reason = jobFailureText(job.status, job.error)
  const reply = job.output
  return (
    <section className="transcript job-view" aria-label={`Chat job ${job.id}`}>
      <JobHeader
        job={job}
        title={job.input.split(/\s+/).slice(0, 8).join(' ') || `Chat ${job.id}`}
        onClose={onClose}
        meta={
          <>
            <span>{formatDate(job.created_at)}</span>
            {job.model_id && <span>{job.model_id}</span>}
            <span>
              {detail.messages} {detail.messages === 1 ? 'message' : 'messages'}
            </span>
          </>
        }
      />
      {reason && job.status !== 'cancelled' && (
        <ErrorNote error={{ kind: 'model', message: reason }} title="The reply failed" />
      )}
      <div className="job-body">
        <section className="job-text" aria-label="Asked">
          <div className="job-section-head">
            <h3>Asked</h3>
          </div>
          <p className="job-text-body">{job.input}</p>
        </section>
        <section className="job-text" aria-label="Reply">
          <div className="job-section-head">
            <h3>Reply</h3>
            {reply && <CopyButton text={reply} label="Copy reply" />}
          </div>
          <p className="job-text-body">{reply ?? <span className="muted">No reply.</span>}</p>
        </section>
      </div>
    </section>
  )
}

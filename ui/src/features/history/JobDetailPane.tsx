// What History shows for an open job: a transcript, a speech job, a batch or a chat
// completion, by its kind.

import type { Job } from '../../bindings'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { TranscriptView } from '../transcribe/TranscriptView'
import { BatchJobView } from './BatchJobView'
import { ChatJobView } from './ChatJobView'
import { SpeechJobView } from './SpeechJobView'
import { useJobDetail } from './useJobDetail'

interface Props {
  jobId: number
  focusSegment?: number | null
  focusNonce?: number
  onClose?: () => void
}

/** The job as the list knows it, so a transcript opens without a detour. */
export function JobDetailPane({ listed, ...props }: Props & { listed: Job | null }) {
  if (listed?.kind === 'transcribe') return <TranscriptView listed={listed} {...props} />
  return <SpeechOrBatch {...props} />
}

function SpeechOrBatch({ jobId, focusSegment, focusNonce, onClose }: Props) {
  const { detail, error, loading, reload } = useJobDetail(jobId)
  if (detail?.kind === 'transcript') {
    return <TranscriptView jobId={jobId} focusSegment={focusSegment} focusNonce={focusNonce} onClose={onClose} />
  }
  if (detail?.kind === 'speech') return <SpeechJobView detail={detail} onClose={onClose} />
  if (detail?.kind === 'batch') return <BatchJobView detail={detail} onClose={onClose} />
  if (detail?.kind === 'chat') return <ChatJobView detail={detail} onClose={onClose} />
  return (
    <section className="transcript job-view" aria-label={`Job ${jobId}`}>
      {error != null ? (
        <ErrorNote error={error} title="Could not load this job" onRetry={reload} />
      ) : loading ? (
        <div className="transcript-wait muted">
          <Icon name="spinner" /> Loading…
        </div>
      ) : null}
    </section>
  )
}

// One message: the user's on the right, the reply on the left, with how a reply ended
// and, for spoken turns, how long the answer took to start.

import type { MessageMetrics } from '../../bindings'
import { CopyButton } from '../../components/CopyButton'
import { formatDate, formatLatency } from '../../lib/format'

/** Every latency of a spoken turn, counted from the end of the user's speech. */
function latencies(m: MessageMetrics): string {
  const parts = [
    m.asr_ms != null && `heard in ${formatLatency(m.asr_ms)}`,
    m.first_token_ms != null && `first word after ${formatLatency(m.first_token_ms)}`,
    m.first_audio_ms != null && `first audio after ${formatLatency(m.first_audio_ms)}`,
    m.total_ms != null && `${formatLatency(m.total_ms)} in all`,
  ].filter(Boolean)
  return `From the end of your speech: ${parts.join(', ')}`
}

export function ChatBubble({
  who,
  text,
  metrics,
  at,
  ended,
  live,
}: {
  who: 'user' | 'assistant'
  text: string
  metrics?: MessageMetrics | null
  at?: number
  /** A reply cut short: by the user speaking over it, or by Stop (then it was not saved). */
  ended?: 'interrupted' | 'stopped' | null
  /** Still being written. */
  live?: boolean
}) {
  const spoken = who === 'assistant' && metrics?.first_audio_ms != null
  return (
    <li className={`bubble-row bubble-row-${who}`} aria-label={who === 'user' ? 'You' : 'Reply'}>
      <div className={`bubble bubble-${who}`} title={at != null ? formatDate(at) : undefined}>
        {text}
        {live && <span className="bubble-caret" aria-hidden="true" />}
      </div>
      {(ended || spoken || (who === 'assistant' && !live && text)) && (
        <div className="bubble-meta">
          {ended === 'interrupted' && <span className="badge badge-interrupted">Interrupted</span>}
          {ended === 'stopped' && <span className="badge badge-interrupted">Stopped · not saved</span>}
          {spoken && metrics && (
            <span className="tabular" title={latencies(metrics)} data-testid="turn-latency">
              first audio {formatLatency(metrics.first_audio_ms)}
            </span>
          )}
          {who === 'assistant' && !live && text && <CopyButton text={text} what="the reply" />}
        </div>
      )}
    </li>
  )
}

// After a batch: what Whisper heard of each line, the lines it flagged (their word error
// rate over the threshold) with their transcript, and a re-take of those with new seeds.

import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { plural } from '../../lib/format'
import { flaggedOf, isRetaking, retakeFlagged, useBatch } from './batchStore'

const percent = (wer: number | null) => (wer == null ? '—' : `${Math.round(wer * 100)}%`)

export function FlaggedLines() {
  const s = useBatch()
  if (s.checksError != null)
    return <ErrorNote error={s.checksError} title="Could not read what Whisper heard of each line" compact />
  if (!s.checks) return null
  const checked = s.checks.filter((r) => r.transcript != null)
  if (!checked.length)
    return (
      <p className="muted small" data-testid="batch-checks">
        Not checked: install a Whisper model to have each line heard back.
      </p>
    )
  const flagged = flaggedOf(s.checks)
  const retaking = isRetaking(s)
  return (
    <section className="batch-checks" aria-label="Flagged lines" data-testid="batch-checks">
      <div className="toolbar">
        <span className="muted small">
          Whisper heard {plural(checked.length, 'line')} back:{' '}
          {flagged.length ? `${flagged.length} flagged (words missed or added)` : 'none flagged'}
        </span>
        {flagged.length > 0 && (
          <button type="button" className="btn btn-sm" onClick={() => void retakeFlagged()} disabled={retaking}>
            <Icon name={retaking ? 'spinner' : 'redo'} size={13} />{' '}
            {retaking ? 'Re-taking…' : `Re-take ${plural(flagged.length, 'flagged line')}`}
          </button>
        )}
      </div>
      {flagged.length > 0 && (
        <ul className="batch-flagged" aria-label="Flagged">
          {flagged.map((r) => (
            <li key={r.line} aria-label={`Flagged line ${r.line}`}>
              <div>
                <span className="batch-line-num tabular">{r.line}</span> {r.text}
              </div>
              <div className="muted small">
                Heard: “{r.transcript}” · <span className="tabular">WER {percent(r.wer)}</span>
              </div>
            </li>
          ))}
        </ul>
      )}
      {s.retake?.status === 'done' && !retaking && (
        <p className="muted small" role="status">
          Re-take done: the flagged lines were said again with new seeds and heard again.
        </p>
      )}
      {s.retakeError != null && <ErrorNote error={s.retakeError} title="Could not re-take" compact />}
    </section>
  )
}

// A sample's waveform with two handles: the start and the end of the part to keep.

import { formatTimestamp } from '../../lib/format'
import { keptPeaks, moveHandle, type Trim } from './trim'

export function TrimRange({
  peaks,
  seconds,
  trim,
  onTrim,
}: {
  peaks: number[]
  seconds: number
  trim: Trim
  onTrim: (trim: Trim) => void
}) {
  const [from, to] = keptPeaks(trim, seconds, peaks.length)
  const step = seconds > 10 ? 0.1 : 0.05
  return (
    <div className="trim-range" data-testid="trim-range">
      <div className="trim-peaks" aria-hidden="true">
        {peaks.map((p, i) => (
          <span
            key={i}
            className={i >= from && i < to ? 'trim-peak kept' : 'trim-peak'}
            style={{ height: `${Math.max(4, p * 100)}%` }}
          />
        ))}
      </div>
      <input
        type="range"
        className="trim-handle"
        aria-label="Start"
        min={0}
        max={seconds}
        step={step}
        value={trim.start}
        onChange={(e) => onTrim(moveHandle(trim, seconds, 'start', Number(e.target.value)))}
      />
      <input
        type="range"
        className="trim-handle"
        aria-label="End"
        min={0}
        max={seconds}
        step={step}
        value={trim.end}
        onChange={(e) => onTrim(moveHandle(trim, seconds, 'end', Number(e.target.value)))}
      />
      <p className="muted small" data-testid="trim-kept">
        Keeps {formatTimestamp(trim.start, { fraction: true })} to {formatTimestamp(trim.end, { fraction: true })} of{' '}
        {formatTimestamp(seconds, { fraction: true })}
      </p>
    </div>
  )
}

// How loud the microphone is, from voice chat's `level` events (ten a second).

import { useChat } from './chatStore'

/** Decibels shown, from silence to the loudest: speech sits in the upper half. */
const FLOOR_DB = -60

/** A root-mean-square level (0 to 1) as a share of the meter, on a decibel scale as ears hear it. */
function meterShare(rms: number): number {
  if (!(rms > 0)) return 0
  const db = 20 * Math.log10(rms)
  return Math.max(0, Math.min(1, (db - FLOOR_DB) / -FLOOR_DB))
}

export function LevelMeter() {
  const level = useChat((s) => s.level)
  const pct = Math.round(meterShare(level) * 100)
  return (
    <div
      className="level-meter"
      role="meter"
      aria-label="Microphone level"
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={pct}
    >
      <div className="level-meter-fill" style={{ width: `${pct}%` }} />
    </div>
  )
}

// The part of a sample kept for cloning: a start and an end in seconds.

export interface Trim {
  start: number
  end: number
}

/** The longest part a clone takes (the runtime refuses more). */
export const MAX_SAMPLE_SECONDS = 60

/** The shortest part worth keeping: less holds no voice to clone. */
export const MIN_KEPT_SECONDS = 0.5

/** Moves one handle to `value`, kept inside the sample and at least MIN_KEPT_SECONDS from the other. */
export function moveHandle(trim: Trim, seconds: number, handle: 'start' | 'end', value: number): Trim {
  const gap = Math.min(MIN_KEPT_SECONDS, seconds)
  if (handle === 'start') return { ...trim, start: Math.min(Math.max(0, value), trim.end - gap) }
  return { ...trim, end: Math.max(Math.min(seconds, value), trim.start + gap) }
}

/** Whether the whole sample is kept (no new file is needed). */
export function isWhole(trim: Trim, seconds: number): boolean {
  return trim.start <= 0 && trim.end >= seconds
}

/** The index range of `peaks` (spread over `seconds`) that the trim keeps. */
export function keptPeaks(trim: Trim, seconds: number, count: number): [number, number] {
  if (seconds <= 0) return [0, count]
  return [Math.floor((trim.start / seconds) * count), Math.ceil((trim.end / seconds) * count)]
}

import { describe, expect, it } from 'vitest'
import { isWhole, keptPeaks, MIN_KEPT_SECONDS, moveHandle } from '../../src/features/voices/trim'

describe('trim', () => {
  const whole = { start: 0, end: 10 }

  it('keeps the handles inside the sample and apart', () => {
    expect(moveHandle(whole, 10, 'start', -3)).toEqual({ start: 0, end: 10 })
    expect(moveHandle(whole, 10, 'end', 12)).toEqual({ start: 0, end: 10 })
    expect(moveHandle({ start: 0, end: 4 }, 10, 'start', 9)).toEqual({ start: 4 - MIN_KEPT_SECONDS, end: 4 })
    expect(moveHandle({ start: 6, end: 10 }, 10, 'end', 1)).toEqual({ start: 6, end: 6 + MIN_KEPT_SECONDS })
    expect(moveHandle(whole, 10, 'start', 2.5)).toEqual({ start: 2.5, end: 10 })
  })

  it('keeps a sample shorter than the gap whole', () => {
    expect(moveHandle({ start: 0, end: 0.3 }, 0.3, 'start', 0.2)).toEqual({ start: 0, end: 0.3 })
  })

  it('says when all is kept', () => {
    expect(isWhole(whole, 10)).toBe(true)
    expect(isWhole({ start: 0.1, end: 10 }, 10)).toBe(false)
    expect(isWhole({ start: 0, end: 9.9 }, 10)).toBe(false)
  })

  it('maps the kept part onto the peaks', () => {
    expect(keptPeaks({ start: 2, end: 5 }, 10, 200)).toEqual([40, 100])
    expect(keptPeaks(whole, 10, 200)).toEqual([0, 200])
    expect(keptPeaks(whole, 0, 200)).toEqual([0, 200])
  })
})

import { describe, expect, it } from 'vitest'
import {
  basename,
  dirname,
  formatBytes,
  formatDate,
  formatDuration,
  formatEta,
  formatLatency,
  formatRate,
  formatRtf,
  formatSpeed,
  formatTimestamp,
  joinPath,
  languageName,
  stem,
} from '../../src/lib/format'

describe('formatBytes', () => {
  it('uses decimal units with three significant digits', () => {
    expect(formatBytes(0)).toBe('0 B')
    expect(formatBytes(999)).toBe('999 B')
    expect(formatBytes(1000)).toBe('1 KB')
    expect(formatBytes(1536)).toBe('1.54 KB')
    expect(formatBytes(290_000_000)).toBe('290 MB')
    expect(formatBytes(77_700_000)).toBe('77.7 MB')
    expect(formatBytes(1_620_000_000)).toBe('1.62 GB')
    expect(formatBytes(15_200_000)).toBe('15.2 MB')
    expect(formatBytes(2_000_000_000_000)).toBe('2 TB')
  })
  it('says nothing about values it cannot show', () => {
    expect(formatBytes(null)).toBe('—')
    expect(formatBytes(-1)).toBe('—')
    expect(formatBytes(Number.NaN)).toBe('—')
  })
  it('formats rates', () => {
    expect(formatRate(5_100_000)).toBe('5.1 MB/s')
    expect(formatRate(0)).toBe('')
  })
})

describe('formatEta', () => {
  it('reads naturally', () => {
    expect(formatEta(null)).toBe('Estimating…')
    // Work is left: never "Almost done" (Speak showed it at 2 of 3 sentences).
    expect(formatEta(0.4)).toBe('Under 1 s left')
    expect(formatEta(12.2)).toBe('13 s left')
    expect(formatEta(65)).toBe('1 min 5 s left')
    expect(formatEta(60 * 12 + 10)).toBe('12 min left')
    expect(formatEta(3600 + 5 * 60)).toBe('1 h 5 min left')
    expect(formatEta(7200)).toBe('2 h left')
  })
})

describe('formatTimestamp', () => {
  it('formats media positions', () => {
    expect(formatTimestamp(0)).toBe('0:00')
    expect(formatTimestamp(7.6)).toBe('0:07')
    expect(formatTimestamp(65)).toBe('1:05')
    expect(formatTimestamp(3723)).toBe('1:02:03')
    expect(formatTimestamp(7.68, { fraction: true })).toBe('0:07.6')
    expect(formatTimestamp(-3)).toBe('0:00')
  })
})

describe('formatDuration', () => {
  it('formats lengths of time', () => {
    expect(formatDuration(4.25)).toBe('4.3 s')
    expect(formatDuration(11)).toBe('11 s')
    expect(formatDuration(185)).toBe('3 min 5 s')
    expect(formatDuration(120)).toBe('2 min')
    expect(formatDuration(3720)).toBe('1 h 2 min')
    expect(formatDuration(null)).toBe('—')
  })

  it('formats latencies in milliseconds, then seconds', () => {
    expect(formatLatency(312.4)).toBe('312 ms')
    expect(formatLatency(1380)).toBe('1.4 s')
    expect(formatLatency(null)).toBe('—')
  })
})

describe('speed', () => {
  it('turns a real-time factor into a speed', () => {
    expect(formatSpeed(0.12)).toBe('8.3× real time')
    expect(formatSpeed(0.05)).toBe('20× real time')
    expect(formatSpeed(null)).toBe('—')
    expect(formatRtf(0.1234)).toBe('0.12')
    expect(formatRtf(2.345)).toBe('2.3')
  })
})

describe('formatDate', () => {
  const now = new Date(2025, 10, 20, 15, 0)
  it('says today and yesterday', () => {
    expect(formatDate(new Date(2025, 10, 20, 9, 5).getTime(), now)).toMatch(/^Today /)
    expect(formatDate(new Date(2025, 10, 19, 23, 59).getTime(), now)).toMatch(/^Yesterday /)
  })
  it('gives older dates with the year only when it differs', () => {
    expect(formatDate(new Date(2025, 0, 3).getTime(), now)).not.toMatch(/2025/)
    expect(formatDate(new Date(2023, 0, 3).getTime(), now)).toMatch(/2023/)
  })
})

describe('paths', () => {
  it('splits unix and windows paths', () => {
    expect(basename('/home/ada/Audio/jfk.wav')).toBe('jfk.wav')
    expect(basename('C:\\Users\\ada\\talk.mp3')).toBe('talk.mp3')
    expect(basename('/home/ada/Audio/')).toBe('Audio')
    expect(dirname('/home/ada/Audio/jfk.wav')).toBe('/home/ada/Audio')
    expect(dirname('/jfk.wav')).toBe('/')
    expect(stem('/a/b/interview.final.m4a')).toBe('interview.final')
    expect(joinPath('/data/izwi', 'audio/3.wav')).toBe('/data/izwi/audio/3.wav')
    expect(joinPath('/data/izwi/', '/abs/x.wav')).toBe('/abs/x.wav')
  })
  it('names languages', () => {
    expect(languageName('en')).toBe('English')
    expect(languageName('de')).toBe('German')
    expect(languageName('haw')).toBe('Hawaiian')
    expect(languageName('qq')).toBe('qq')
    expect(languageName('not a code')).toBe('not a code')
  })
})

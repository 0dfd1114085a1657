// Stand-in for @tauri-apps/api/core (mock builds): convertFileSrc gives a playable URL.
// The recorded files are not served, so the player gets silence of the transcript's length.

import { recordedTranscript } from './fixtures'

const cache = new Map<string, string>()

function silentWav(seconds: number, rate = 8000): Blob {
  const n = Math.max(1, Math.round(seconds * rate))
  const buf = new ArrayBuffer(44 + n)
  const v = new DataView(buf)
  const str = (o: number, s: string) => [...s].forEach((c, i) => v.setUint8(o + i, c.charCodeAt(0)))
  str(0, 'RIFF')
  v.setUint32(4, 36 + n, true)
  str(8, 'WAVE')
  str(12, 'fmt ')
  v.setUint32(16, 16, true)
  v.setUint16(20, 1, true) // PCM
  v.setUint16(22, 1, true) // mono
  v.setUint32(24, rate, true)
  v.setUint32(28, rate, true)
  v.setUint16(32, 1, true)
  v.setUint16(34, 8, true) // 8-bit
  str(36, 'data')
  v.setUint32(40, n, true)
  new Uint8Array(buf, 44).fill(128)
  return new Blob([buf], { type: 'audio/wav' })
}

export function convertFileSrc(path: string, _protocol = 'asset'): string {
  let url = cache.get(path)
  if (!url) {
    url = URL.createObjectURL(silentWav(recordedTranscript.record.duration || 11))
    cache.set(path, url)
  }
  return url
}

export async function invoke<T>(cmd: string): Promise<T> {
  throw new Error(`invoke(${cmd}) is not available in the mock build`)
}

export function isTauri(): boolean {
  return false
}

/** Stand-in for Tauri's Channel: the mock commands call `onmessage` themselves. */
export class Channel<T> {
  onmessage: (message: T) => void = () => {}
}

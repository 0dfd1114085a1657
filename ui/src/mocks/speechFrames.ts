// For the test doubles: a runtime `speech_audio` event as the app sends it to the page, a
// binary frame (layout: src-tauri/src/speech_audio.rs; held to the app's own encoding by
// tests/unit/speechAudio.test.ts against a frame the Rust side made).

import { HEADER_BYTES } from '../lib/speechAudioFrame'

export interface SpeechAudioEvent {
  job_id: number
  index: number
  total: number
  sample_rate: number
  gap_before: number
  samples: ArrayLike<number>
}

export function encodeSpeechAudio(e: SpeechAudioEvent): ArrayBuffer {
  const frame = new ArrayBuffer(HEADER_BYTES + 4 * e.samples.length)
  const v = new DataView(frame)
  v.setBigInt64(0, BigInt(e.job_id), true)
  v.setUint32(8, e.index, true)
  v.setUint32(12, e.total, true)
  v.setUint32(16, e.sample_rate, true)
  v.setFloat32(20, e.gap_before, true)
  for (let i = 0; i < e.samples.length; i++) v.setFloat32(HEADER_BYTES + 4 * i, e.samples[i], true)
  return frame
}

// A speech audio frame: each piece a speak job makes arrives as one ArrayBuffer
// over a Tauri channel, not as numbers in a JSON event. The layout is
// src-tauri/src/speech_audio.rs's: a 24-byte little-endian header (job id i64, piece
// index u32, pieces u32, sample rate u32, seconds of silence before it f32), then the
// samples as f32.

export const HEADER_BYTES = 24

/** One piece of a speak job, shaped like the runtime's `speech_audio` event. */
export interface SpeechAudio {
  type: 'speech_audio'
  job_id: number
  index: number
  total: number
  sample_rate: number
  gap_before: number
  samples: Float32Array
}

export function decodeSpeechAudio(frame: ArrayBuffer): SpeechAudio {
  if (frame.byteLength < HEADER_BYTES || (frame.byteLength - HEADER_BYTES) % 4 !== 0) {
    throw new Error(`not a speech audio frame: ${frame.byteLength} bytes`)
  }
  const v = new DataView(frame)
  return {
    type: 'speech_audio',
    job_id: Number(v.getBigInt64(0, true)),
    index: v.getUint32(8, true),
    total: v.getUint32(12, true),
    sample_rate: v.getUint32(16, true),
    gap_before: v.getFloat32(20, true),
    // Read in place: every platform Izwi runs on is little-endian.
    samples: new Float32Array(frame, HEADER_BYTES),
  }
}

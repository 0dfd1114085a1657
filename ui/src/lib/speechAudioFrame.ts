// A speech audio frame: each sentence a speak job makes arrives as one ArrayBuffer
// over a Tauri channel, not as numbers in a JSON event. The layout is
// src-tauri/src/speech_audio.rs's: a 20-byte little-endian header (job id i64, sentence
// index u32, sentences u32, sample rate u32), then the samples as f32.

export const HEADER_BYTES = 20

/** One sentence of a speak job, shaped like the runtime's `speech_audio` event. */
export interface SpeechAudio {
  type: 'speech_audio'
  job_id: number
  index: number
  total: number
  sample_rate: number
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
    // Read in place: every platform Izwi runs on is little-endian.
    samples: new Float32Array(frame, HEADER_BYTES),
  }
}

import { describe, expect, it } from 'vitest'
import { decodeSpeechAudio, HEADER_BYTES } from '../../src/lib/speechAudioFrame'
import { encodeSpeechAudio } from '../../src/mocks/speechFrames'
import recorded from '../fixtures/recorded/speech_audio_frame.json'

// A frame src-tauri made (src-tauri/tests/fixtures.rs writes it from the recorded speak job).
const frame = new Uint8Array(recorded.frame).buffer

describe('speech audio frames', () => {
  it('decode to what the app encoded', () => {
    const audio = decodeSpeechAudio(frame)
    expect(audio).toMatchObject({
      type: 'speech_audio',
      job_id: recorded.event.job_id,
      index: recorded.event.index,
      total: recorded.event.total,
      sample_rate: recorded.event.sample_rate,
      gap_before: Math.fround(recorded.event.gap_before),
    })
    // f32 in the frame: each sample is the recorded one, rounded to f32.
    expect([...audio.samples]).toEqual(recorded.event.samples.map(Math.fround))
  })

  it('are made by the test doubles byte for byte as the app makes them', () => {
    expect(new Uint8Array(encodeSpeechAudio(recorded.event))).toEqual(new Uint8Array(frame))
  })

  it('refuse what is not a frame, by its size', () => {
    expect(() => decodeSpeechAudio(new ArrayBuffer(HEADER_BYTES - 1))).toThrow('not a speech audio frame: 23 bytes')
    expect(() => decodeSpeechAudio(new ArrayBuffer(HEADER_BYTES + 3))).toThrow('27 bytes')
  })
})

// Speech audio from the app: the channel speak jobs' sentences arrive on, as frames
// (speechAudioFrame.ts), handed on decoded.

import { Channel } from '@tauri-apps/api/core'
import { api } from './api'
import { decodeSpeechAudio, type SpeechAudio } from './speechAudioFrame'

/** Opens the channel and hands every sentence that arrives on it to `handler`. */
export async function listenSpeechAudio(handler: (audio: SpeechAudio) => void): Promise<void> {
  const channel = new Channel<ArrayBuffer>()
  channel.onmessage = (frame) => {
    try {
      handler(decodeSpeechAudio(frame))
    } catch (e) {
      console.error('speech audio dropped', e)
    }
  }
  await api.streamSpeechAudio(channel)
}

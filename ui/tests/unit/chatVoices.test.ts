// Voice chat answers in Piper voices only: the backend refuses Qwen3-TTS and LFM2-Audio
// voices as chat replies, so the picker and the readiness check leave them out.
import { describe, expect, it } from 'vitest'
import type { ModelInfo, VoiceInfo } from '../../src/bindings'
import { chatVoices, voiceChatBlocker } from '../../src/features/chat/choices'

const model = (id: string, family: ModelInfo['family'], task: ModelInfo['task']): ModelInfo =>
  ({
    id,
    name: id,
    family,
    task,
    status: 'installed',
    source: { kind: 'local', imported_from: `/models/${id}` },
  }) as ModelInfo

const voice = (id: number, name: string, model_id: string): VoiceInfo =>
  ({
    id,
    name,
    source: 'preset',
    model_id,
    language: null,
    installed: true,
    settings: {},
  }) as VoiceInfo

const models = [
  model('local/smollm2', 'llama', 'chat'),
  model('whisper-base', 'whisper', 'transcribe'),
  model('piper/joe', 'piper', 'speak'),
  model('local/lfm2-audio', 'lfm2_audio', 'transcribe'),
]
const joe = voice(1, 'Joe', 'piper/joe')
const usMale = voice(2, 'US male', 'local/lfm2-audio')

describe('voice chat voices', () => {
  it('leaves out LFM2-Audio and Qwen3-TTS voices once the models are known', () => {
    expect(chatVoices([usMale, joe], models)).toEqual([joe])
    expect(chatVoices([usMale, joe], null)).toEqual([usMale, joe])
  })

  it('is not ready with only an LFM2-Audio voice to answer in', () => {
    expect(voiceChatBlocker(models, [usMale])?.fix).toBe('voices')
    expect(voiceChatBlocker(models, [usMale, joe])).toBeNull()
  })
})

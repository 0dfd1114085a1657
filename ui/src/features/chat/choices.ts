// What the chat pickers offer and which choice is in effect. The backend remembers the
// chat settings; a choice that is missing or no longer installed falls back to the first
// installed one, as the Speak page does with its voice.

import type { ChatSettings, ModelInfo, VoiceInfo } from '../../bindings'
import type { View } from '../../lib/nav'
import { installedTranscribers, isInstalled } from '../models/modelsStore'
import { usableVoices } from '../voices/voicesStore'

/** ChatSettings with every field: the backend fills in what saved settings leave out. */
export type FullChatSettings = Required<ChatSettings>

/** The backend's defaults (izwi-runtime ChatSettings::default). */
export function fullSettings(s: ChatSettings): FullChatSettings {
  return {
    llm: s.llm ?? null,
    asr: s.asr ?? null,
    voice: s.voice ?? null,
    s2s: s.s2s ?? null,
    input_device: s.input_device ?? null,
    output_device: s.output_device ?? null,
    end_silence_ms: s.end_silence_ms ?? 500,
    barge_in: s.barge_in ?? true,
  }
}

export const isChatModel = (m: ModelInfo) => m.task === 'chat'

export function installedChatModels(models: ModelInfo[]): ModelInfo[] {
  return models.filter((m) => isChatModel(m) && isInstalled(m))
}

/** LFM2-Audio models, installed: each that can speak answers voice chat speech to speech (one that only transcribes is refused by name when the chat starts). */
export function installedSpeechToSpeech(models: ModelInfo[]): ModelInfo[] {
  return models.filter((m) => m.family === 'lfm2_audio' && isInstalled(m))
}

/**
 * The voices voice chat can answer in: usable voices but Qwen3-TTS and LFM2-Audio ones (the
 * backend refuses them as chat replies). With `models` unknown (null), every usable one.
 */
export function chatVoices(voices: VoiceInfo[], models: ModelInfo[] | null): VoiceInfo[] {
  const sampled = new Set(
    (models ?? []).filter((m) => m.family === 'qwen3_tts' || m.family === 'lfm2_audio').map((m) => m.id),
  )
  return usableVoices(voices).filter((v) => !sampled.has(v.model_id))
}

/** The chat voice `spec` names: the backend takes a voice's name or its id. */
export function voiceNamed(voices: VoiceInfo[], spec: string | null, models: ModelInfo[] | null): VoiceInfo | null {
  if (spec == null) return null
  const usable = chatVoices(voices, models)
  return usable.find((v) => v.name === spec) ?? usable.find((v) => String(v.id) === spec) ?? null
}

/**
 * The settings as the pickers show them. `models` or `voices` is null while unknown (not
 * loaded, or failed): then the saved choice stands, so it is not replaced by mistake.
 */
export function effectiveSettings(
  saved: FullChatSettings,
  models: ModelInfo[] | null,
  voices: VoiceInfo[] | null,
): FullChatSettings {
  const next = { ...saved }
  if (models) {
    const chat = installedChatModels(models)
    next.llm = chat.find((m) => m.id === saved.llm)?.id ?? chat[0]?.id ?? null
    // A Whisper model that is gone falls back to the default transcription model.
    if (!installedTranscribers(models).some((m) => m.id === saved.asr)) next.asr = null
    // A speech-to-speech model that is gone leaves the cascade.
    if (!installedSpeechToSpeech(models).some((m) => m.id === saved.s2s)) next.s2s = null
  }
  if (voices) next.voice = (voiceNamed(voices, saved.voice, models) ?? chatVoices(voices, models)[0])?.name ?? null
  return next
}

export function sameSettings(a: FullChatSettings, b: FullChatSettings): boolean {
  return (Object.keys(a) as (keyof FullChatSettings)[]).every((k) => a[k] === b[k])
}

/**
 * Why voice chat cannot start, and the page that fixes it; null when it can. `s2s` is the
 * chosen speech-to-speech model, which needs nothing else.
 */
export function voiceChatBlocker(
  models: ModelInfo[],
  voices: VoiceInfo[],
  s2s: string | null = null,
): { reason: string; fix: View } | null {
  if (s2s != null && installedSpeechToSpeech(models).some((m) => m.id === s2s)) return null
  if (!installedChatModels(models).length) return { reason: 'Voice chat needs a chat model.', fix: 'models' }
  if (!installedTranscribers(models).length) {
    return { reason: 'Voice chat needs a Whisper model to hear you: download one in Models.', fix: 'models' }
  }
  if (!chatVoices(voices, models).length) {
    return { reason: 'Voice chat needs a voice to answer with: download a Piper voice in Voices.', fix: 'voices' }
  }
  return null
}

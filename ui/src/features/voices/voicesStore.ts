// The voice library: the voices (a preset for every installed Piper model, and the
// user's own), renames, settings, deletions, and previews of how a voice sounds.

import type { ClonedVoice, ModelInfo, VoiceInfo, VoiceSettings } from '../../bindings'
import { api } from '../../lib/api'
import { languageName } from '../../lib/format'
import { createStore, useStore } from '../../lib/store'
import { PcmPlayer } from '../speak/pcmPlayer'

export interface VoicesState {
  voices: VoiceInfo[]
  loaded: boolean
  loadError: unknown
  /** The voice whose preview is being made or played. */
  previewing: { id: number; phase: 'making' | 'playing' } | null
}

const initial: VoicesState = { voices: [], loaded: false, loadError: null, previewing: null }

export const voicesStore = createStore<VoicesState>(initial)

/** VoiceSettings with every field: the runtime fills in what a stored voice leaves out. */
export interface FullVoiceSettings {
  speed: number
  noise_scale: number | null
  noise_w: number | null
  pitch: number
  speaker: number | null
}

export function settingsOf(s: VoiceSettings): FullVoiceSettings {
  return {
    speed: s.speed ?? 1,
    noise_scale: s.noise_scale ?? null,
    noise_w: s.noise_w ?? null,
    pitch: s.pitch ?? 0,
    speaker: s.speaker ?? null,
  }
}

export const DEFAULT_SETTINGS: FullVoiceSettings = {
  speed: 1,
  noise_scale: null,
  noise_w: null,
  pitch: 0,
  speaker: null,
}

let previewPlayer: PcmPlayer | null = null
let previewRun = 0

export function resetVoices(): void {
  stopPreview()
  voicesStore.set(initial)
}

function putVoice(voice: VoiceInfo) {
  voicesStore.set((s) => {
    const i = s.voices.findIndex((v) => v.id === voice.id)
    const voices = i >= 0 ? s.voices.map((v, j) => (j === i ? voice : v)) : [...s.voices, voice]
    return { ...s, voices }
  })
}

export async function loadVoices(): Promise<VoiceInfo[]> {
  try {
    const voices = await api.listVoices()
    voicesStore.set((s) => ({ ...s, voices, loaded: true, loadError: null }))
    return voices
  } catch (loadError) {
    voicesStore.set((s) => ({ ...s, loaded: true, loadError }))
    return []
  }
}

export async function addVoice(modelId: string, name: string, settings = DEFAULT_SETTINGS): Promise<VoiceInfo> {
  const voice = await api.addVoice(modelId, name, settings)
  putVoice(voice)
  return voice
}

/** Designs a voice from a description with a Qwen3-TTS VoiceDesign model; it joins the library. */
export async function designVoice(modelId: string, name: string, description: string): Promise<VoiceInfo> {
  const voice = await api.designVoice(name, modelId, description)
  putVoice(voice)
  return voice
}

/** Clones a voice from a chosen recording with a Qwen3-TTS Base model; it joins the library. */
export async function cloneVoice(
  modelId: string,
  name: string,
  audio: string,
  text: string | null,
): Promise<ClonedVoice> {
  const cloned = await api.cloneVoice(name, modelId, audio, text)
  putVoice(cloned.voice)
  return cloned
}

export async function renameVoice(id: number, name: string): Promise<VoiceInfo> {
  const voice = await api.renameVoice(id, name)
  putVoice(voice)
  return voice
}

export async function updateVoiceSettings(id: number, settings: VoiceSettings): Promise<VoiceInfo> {
  const voice = await api.updateVoiceSettings(id, settings)
  putVoice(voice)
  return voice
}

export async function deleteVoice(id: number): Promise<void> {
  await api.deleteVoice(id)
  voicesStore.set((s) => ({ ...s, voices: s.voices.filter((v) => v.id !== id) }))
}

/** Makes and plays a few seconds of a voice. Rejects with the command's error. */
export async function previewVoice(id: number): Promise<void> {
  const run = ++previewRun
  previewPlayer?.stop()
  voicesStore.set((s) => ({ ...s, previewing: { id, phase: 'making' } }))
  try {
    const clip = await api.previewVoice(String(id), null)
    if (run !== previewRun) return
    if (!previewPlayer) {
      previewPlayer = new PcmPlayer(() =>
        voicesStore.set((s) => (s.previewing?.phase === 'playing' ? { ...s, previewing: null } : s)),
      )
    }
    const playing = previewPlayer.playClip(clip.samples, clip.sample_rate)
    voicesStore.set((s) => ({ ...s, previewing: playing ? { id, phase: 'playing' } : null }))
    if (!playing) throw new Error('This window cannot play audio (no Web Audio).')
  } catch (e) {
    if (run === previewRun) voicesStore.set((s) => ({ ...s, previewing: null }))
    throw e
  }
}

export function stopPreview(): void {
  previewRun++
  previewPlayer?.stop()
  voicesStore.set((s) => (s.previewing ? { ...s, previewing: null } : s))
}

/** The voices that can speak now (their model is on disk). */
export function usableVoices(voices: VoiceInfo[]): VoiceInfo[] {
  return voices.filter((v) => v.installed)
}

export const isVoiceModel = (m: ModelInfo) => m.family === 'piper'
/** Qwen3-TTS models: which variant (Base, VoiceDesign) one is, the runtime checks. */
export const isQwen3Model = (m: ModelInfo) => m.family === 'qwen3_tts'
/** LFM2-Audio models: their built-in voices are presets of the library. */
export const isLfm2AudioModel = (m: ModelInfo) => m.family === 'lfm2_audio'
/** Models whose speech is sampled and comes in pieces as it is decoded, with no speed setting. */
export const isSampledModel = (m: ModelInfo) => isQwen3Model(m) || isLfm2AudioModel(m)

const FAMILY: Partial<Record<ModelInfo['family'], string>> = {
  piper: 'Piper',
  qwen3_tts: 'Qwen3-TTS',
  lfm2_audio: 'LFM2-Audio',
}

/** The voice family of `voice`'s model ("Piper", "Qwen3-TTS", "LFM2-Audio"); null when the model is not listed. */
export function voiceFamily(voice: VoiceInfo, models: ModelInfo[]): string | null {
  const model = models.find((m) => m.id === voice.model_id)
  return model ? (FAMILY[model.family] ?? null) : null
}

/** "en_US" → "English (United States)". */
export function voiceLanguage(code: string | null): string {
  if (!code) return 'Unknown language'
  return languageName(code.replace('_', '-'))
}

export function useVoices(): VoicesState {
  return useStore(voicesStore)
}

/** The voice a screen last used, remembered between sessions. */
export function rememberedVoice(key: string): number | null {
  try {
    const v = Number(localStorage.getItem(key))
    return Number.isInteger(v) && v > 0 ? v : null
  } catch {
    return null
  }
}

export function rememberVoice(key: string, id: number): void {
  try {
    localStorage.setItem(key, String(id))
  } catch {
    /* ignore */
  }
}

/** The voice to use: the one chosen if it can speak, else the first that can. */
export function pickVoice(voices: VoiceInfo[], chosen: number | null): VoiceInfo | null {
  const usable = usableVoices(voices)
  return usable.find((v) => v.id === chosen) ?? usable[0] ?? null
}

const SOURCE: Record<string, string> = { preset: 'Preset', cloned: 'Cloned', designed: 'Designed' }

/**
 * The badge of a voice. The runtime records voices added on a model as `preset` too, so
 * the preset is the model's first voice (made when the model was installed); later ones
 * on the same model are the user's own.
 */
export function originLabel(voice: VoiceInfo, voices: VoiceInfo[]): string {
  if (voice.source !== 'preset') return SOURCE[voice.source] ?? voice.source
  // A model's named speakers (CustomVoice, LFM2-Audio's built-in voices) are all its presets.
  if (voice.settings.speaker_name) return 'Preset'
  const first = Math.min(
    ...voices.filter((v) => v.model_id === voice.model_id && v.source === 'preset').map((v) => v.id),
  )
  return voice.id === first ? 'Preset' : 'Yours'
}

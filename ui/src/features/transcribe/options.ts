// What a new transcription uses: model, language, task, word timestamps, and for a
// streaming model how far its text runs behind the audio. Remembered between sessions.

import { useEffect } from 'react'
import type { ModelInfo, Task } from '../../bindings'
import { createStore, useStore } from '../../lib/store'
import { catalogMatch } from '../models/arrange'
import { installedTranscribers, modelsStore } from '../models/modelsStore'
import { settingsStore } from '../settings/settingsStore'
import type { QueueOptions } from './jobsStore'

export interface Choices {
  /** null: the default model from settings (or the first installed). */
  modelId: string | null
  /** 'auto' detects the language. */
  language: string
  task: Task
  /** Each word's time too, highlighted as the audio plays. */
  wordTimestamps: boolean
  /** Voxtral Realtime: milliseconds its text runs behind the audio; null: the model's default. */
  delayMs: number | null
}

/** Delays offered for a streaming model: shorter shows words sooner, longer hears more first. */
export const DELAYS_MS = [80, 160, 240, 320, 480, 720, 960, 1440, 2400]

const KEY = 'izwi.transcribe.choices'

function remembered(): Choices {
  try {
    const raw = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Partial<Choices> | null
    if (raw && typeof raw === 'object') {
      return {
        modelId: typeof raw.modelId === 'string' ? raw.modelId : null,
        language: typeof raw.language === 'string' ? raw.language : 'auto',
        task: raw.task === 'translate' ? 'translate' : 'transcribe',
        wordTimestamps: raw.wordTimestamps === true,
        delayMs: typeof raw.delayMs === 'number' && DELAYS_MS.includes(raw.delayMs) ? raw.delayMs : null,
      }
    }
  } catch {
    /* ignore */
  }
  return { modelId: null, language: 'auto', task: 'transcribe', wordTimestamps: false, delayMs: null }
}

export const choicesStore = createStore<Choices>(remembered())

export function resetChoices(): void {
  choicesStore.set({ modelId: null, language: 'auto', task: 'transcribe', wordTimestamps: false, delayMs: null })
}

export function setChoices(patch: Partial<Choices>): void {
  choicesStore.set((c) => {
    const next = { ...c, ...patch }
    try {
      localStorage.setItem(KEY, JSON.stringify(next))
    } catch {
      /* ignore */
    }
    return next
  })
}

/** A model's languages; an import that lists none has those of the catalog model it is. */
export function languagesOf(model: ModelInfo, models: ModelInfo[]): string[] {
  if (model.languages.length) return model.languages
  const match = catalogMatch(model)
  return (match && models.find((m) => m.id === match)?.languages) || []
}

export function isEnglishOnly(languages: string[]): boolean {
  return languages.length === 1 && languages[0] === 'en'
}

export interface Resolved {
  installed: ModelInfo[]
  model: ModelInfo | null
  languages: string[]
  language: string
  task: Task
  wordTimestamps: boolean
  englishOnly: boolean
  /** Whether the model can translate: not an English-only one, not a streaming one. */
  translates: boolean
  /** A streaming model (Voxtral Realtime), whose delay can be chosen. */
  streaming: boolean
  /** The delay a streaming model is asked for; null: its default (always null for others). */
  delayMs: number | null
  options: QueueOptions | null
}

export function resolveChoices(models: ModelInfo[], defaultModel: string | null, choices: Choices): Resolved {
  const installed = installedTranscribers(models)
  const model =
    installed.find((m) => m.id === choices.modelId) ??
    installed.find((m) => m.id === defaultModel) ??
    installed[0] ??
    null
  const languages = model ? languagesOf(model, models) : []
  const englishOnly = isEnglishOnly(languages)
  const language = englishOnly ? 'en' : languages.includes(choices.language) ? choices.language : 'auto'
  // Voxtral Realtime writes what it hears, in the language it hears, a chosen delay behind.
  const streaming = model?.family === 'voxtral_realtime'
  const translates = !!model && !englishOnly && !streaming
  const delayMs = streaming ? choices.delayMs : null
  const task: Task = translates ? choices.task : 'transcribe'
  return {
    installed,
    model,
    languages,
    language,
    task,
    wordTimestamps: choices.wordTimestamps,
    englishOnly,
    translates,
    streaming,
    delayMs,
    options: model
      ? {
          modelId: model.id,
          language: language === 'auto' ? null : language,
          task,
          wordTimestamps: choices.wordTimestamps,
          delayMs,
        }
      : null,
  }
}

/**
 * A remembered Translate the chosen model cannot do is forgotten, so it does not come back
 * (and fail) with the next launch or an "Open with" file.
 */
function impossibleTask(choices: Choices, resolved: Resolved): boolean {
  return choices.task === 'translate' && !!resolved.model && resolved.task !== 'translate'
}

/** The choices as they apply now, from the stores (for code outside components). */
export function currentChoices(): Resolved {
  const choices = choicesStore.get()
  const resolved = resolveChoices(
    modelsStore.get().models,
    settingsStore.get().settings?.default_transcribe_model ?? null,
    choices,
  )
  if (impossibleTask(choices, resolved)) setChoices({ task: 'transcribe' })
  return resolved
}

export function useChoices(): Resolved {
  const models = useStore(modelsStore, (s) => s.models)
  const defaultModel = useStore(settingsStore, (s) => s.settings?.default_transcribe_model ?? null)
  const choices = useStore(choicesStore)
  const resolved = resolveChoices(models, defaultModel, choices)
  const impossible = impossibleTask(choices, resolved)
  useEffect(() => {
    if (impossible) setChoices({ task: 'transcribe' })
  }, [impossible])
  return resolved
}

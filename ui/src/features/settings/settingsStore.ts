// Settings from the Rust side, and the theme applied to the document.

import type { Settings, Theme } from '../../bindings'
import { api } from '../../lib/api'
import { createStore, useStore } from '../../lib/store'

interface SettingsState {
  settings: Settings | null
  error: unknown
}

export const settingsStore = createStore<SettingsState>({ settings: null, error: null })

const THEME_KEY = 'izwi.theme'

/** 'system' follows prefers-color-scheme through CSS; light/dark pin it. */
export function applyTheme(theme: Theme): void {
  const root = document.documentElement
  if (theme === 'system') delete root.dataset.theme
  else root.dataset.theme = theme
  try {
    localStorage.setItem(THEME_KEY, theme)
  } catch {
    /* private mode: nothing to remember */
  }
}

/** The theme last chosen, applied before the first paint (the settings arrive a moment later). */
export function applyRememberedTheme(): void {
  try {
    const t = localStorage.getItem(THEME_KEY)
    if (t === 'light' || t === 'dark' || t === 'system') applyTheme(t)
  } catch {
    /* ignore */
  }
}

export async function loadSettings(): Promise<Settings | null> {
  try {
    const settings = await api.getSettings()
    settingsStore.set({ settings, error: null })
    applyTheme(settings.theme)
    return settings
  } catch (error) {
    settingsStore.set((s) => ({ ...s, error }))
    return null
  }
}

export async function changeTheme(theme: Theme): Promise<void> {
  const before = settingsStore.get().settings
  applyTheme(theme)
  if (before) settingsStore.set((s) => ({ ...s, settings: { ...before, theme } }))
  try {
    await api.setTheme(theme)
  } catch (e) {
    if (before) {
      applyTheme(before.theme)
      settingsStore.set((s) => ({ ...s, settings: before }))
    }
    throw e
  }
}

export async function changeDefaultModel(id: string | null): Promise<void> {
  await api.setDefaultModel(id)
  settingsStore.set((s) => (s.settings ? { ...s, settings: { ...s.settings, default_transcribe_model: id } } : s))
}

/** Makes `shortcut` the global dictation shortcut; the backend checks it and takes it. */
export async function changeDictationShortcut(shortcut: string): Promise<void> {
  const saved = await api.setDictationShortcut(shortcut)
  settingsStore.set((s) => (s.settings ? { ...s, settings: { ...s.settings, dictation_shortcut: saved } } : s))
}

export function useSettings(): SettingsState {
  return useStore(settingsStore)
}

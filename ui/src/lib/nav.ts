// Which page is shown, and which transcript each page has open.

import { createStore, useStore } from './store'

export type View = 'transcribe' | 'models' | 'history' | 'settings' | 'speak' | 'batch' | 'voices'

/** The pages in sidebar order; `key` is the Ctrl/⌘ digit that opens each: 1…7 top to bottom. */
export const VIEWS: { id: View; label: string; key: string }[] = [
  { id: 'transcribe', label: 'Transcribe', key: '1' },
  { id: 'models', label: 'Models', key: '2' },
  { id: 'history', label: 'History', key: '3' },
  { id: 'speak', label: 'Speak', key: '4' },
  { id: 'batch', label: 'Batch export', key: '5' },
  { id: 'voices', label: 'Voices', key: '6' },
  { id: 'settings', label: 'Settings', key: '7' },
]

/** A transcript to show, and optionally a segment to bring into view. */
export interface Focus {
  jobId: number
  segmentIdx: number | null
  /** Changes on every request, so asking for the same segment twice scrolls again. */
  nonce: number
}

export interface NavState {
  view: View
  transcribe: Focus | null
  history: Focus | null
}

export const navStore = createStore<NavState>({ view: 'transcribe', transcribe: null, history: null })

let nonce = 0

export function navigate(view: View): void {
  navStore.set((s) => (s.view === view ? s : { ...s, view }))
}

/** Opens a transcript on the Transcribe page (jobs of this session) or in History. */
export function openTranscript(
  jobId: number,
  opts: { on?: 'transcribe' | 'history'; segmentIdx?: number | null } = {},
): void {
  const on = opts.on ?? 'transcribe'
  const focus: Focus = { jobId, segmentIdx: opts.segmentIdx ?? null, nonce: ++nonce }
  navStore.set((s) => ({ ...s, view: on, [on]: focus }))
}

export function closeTranscript(on: 'transcribe' | 'history'): void {
  navStore.set((s) => ({ ...s, [on]: null }))
}

export function useNav(): NavState {
  return useStore(navStore)
}

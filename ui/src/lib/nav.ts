// Which page is shown, and which transcript each page has open.

import { createStore, useStore } from './store'

export type View = 'transcribe' | 'models' | 'history' | 'settings' | 'speak' | 'batch' | 'voices' | 'chat' | 'dictate'

const PAGES: { id: View; label: string }[] = [
  { id: 'transcribe', label: 'Transcribe' },
  { id: 'models', label: 'Models' },
  { id: 'history', label: 'History' },
  { id: 'speak', label: 'Speak' },
  { id: 'batch', label: 'Batch export' },
  { id: 'voices', label: 'Voices' },
  { id: 'chat', label: 'Chat' },
  { id: 'dictate', label: 'Dictate' },
  { id: 'settings', label: 'Settings' },
]

/** The pages in sidebar order; `key` is the Ctrl/⌘ digit that opens each: its place. */
export const VIEWS: { id: View; label: string; key: string }[] = PAGES.map((p, i) => ({ ...p, key: String(i + 1) }))

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

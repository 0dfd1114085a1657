// The Dictate screen's state: the one dictation the backend runs at a time (started
// here or by the global shortcut), followed through `dictateEvent`s: final text, which
// never changes, and the partial text after it, which the next event replaces.

import { events, type DictateEvent } from '../../bindings'
import { api } from '../../lib/api'
import { createStore, useStore } from '../../lib/store'

export type DictatePhase = 'idle' | 'starting' | 'listening' | 'stopping'

export interface DictateState {
  phase: DictatePhase
  /** The microphone, by name, while listening. */
  input: string | null
  /** The history's job the dictation is saved as. */
  jobId: number | null
  /** Confirmed pieces, in order. */
  finals: string[]
  partial: string
  /** A dictation that ended and was saved: its job, to open in History. */
  savedJobId: number | null
  /** The last thing that failed, with what was being done. */
  error: { title: string; error: unknown } | null
}

const initial: DictateState = {
  phase: 'idle',
  input: null,
  jobId: null,
  finals: [],
  partial: '',
  savedJobId: null,
  error: null,
}

export const dictateStore = createStore<DictateState>(initial)

export function useDictate<T>(select: (s: DictateState) => T): T {
  return useStore(dictateStore, select)
}

export function handleDictateEvent(e: DictateEvent): void {
  switch (e.type) {
    case 'listening':
      // Also a dictation the shortcut started: the screen shows it from its start.
      dictateStore.set((s) => ({
        ...s,
        phase: s.phase === 'stopping' ? 'stopping' : 'listening',
        input: e.input,
        jobId: e.job_id,
        finals: s.phase === 'starting' ? s.finals : [],
        partial: '',
        savedJobId: null,
        error: null,
      }))
      break
    case 'partial':
      dictateStore.set((s) => ({ ...s, partial: e.text }))
      break
    case 'final':
      dictateStore.set((s) => ({ ...s, finals: [...s.finals, e.text], partial: '' }))
      break
    case 'stopped':
      dictateStore.set((s) => ({
        ...s,
        phase: 'idle',
        input: null,
        jobId: null,
        partial: '',
        savedJobId: e.job_id,
        error: e.error == null ? null : { title: 'Dictation stopped', error: e.error },
      }))
      break
  }
}

let listening: Promise<unknown> | null = null

/** Follows dictation from now on (once), and picks up one already under way. */
export async function listenDictateEvents(): Promise<void> {
  if (!listening) listening = events.dictateEvent.listen((e) => handleDictateEvent(e.payload))
  await listening
  if (dictateStore.get().phase === 'idle' && (await api.isDictating())) {
    dictateStore.set((s) => ({ ...s, phase: 'listening' }))
  }
}

/** For tests: the state at start, listening again on the next call. */
export function resetDictate(): void {
  dictateStore.set(initial)
  listening = null
}

export async function startDictation(
  modelId: string | null,
  language: string | null,
  delayMs: number | null,
): Promise<void> {
  dictateStore.set((s) => ({ ...s, phase: 'starting', finals: [], partial: '', savedJobId: null, error: null }))
  try {
    await api.startDictation(modelId, language, delayMs)
  } catch (error) {
    dictateStore.set((s) => ({ ...s, phase: 'idle', error: { title: 'Could not start dictating', error } }))
  }
}

/** Stops listening; the text still partial becomes final and all is saved (`stopped` follows). */
export async function stopDictation(): Promise<void> {
  dictateStore.set((s) => ({ ...s, phase: 'stopping' }))
  try {
    if (!(await api.stopDictation())) dictateStore.set((s) => ({ ...s, phase: 'idle' }))
  } catch (error) {
    dictateStore.set((s) => ({ ...s, phase: 'listening', error: { title: 'Could not stop dictating', error } }))
  }
}

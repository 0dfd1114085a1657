// Recording a sample to clone from: the microphone (through the app, as Dictate hears
// it), its level as it is heard, and the sample when it stops.

import { events, type VoiceSample, type VoiceSampleEvent } from '../../bindings'
import { api } from '../../lib/api'
import { createStore } from '../../lib/store'

export type RecordPhase = 'idle' | 'starting' | 'recording' | 'stopping'

export interface RecordState {
  phase: RecordPhase
  /** The last level (0 to 1, RMS) while recording. */
  level: number
  /** Seconds heard so far: a level comes every tenth of a second. */
  heard: number
  /** The recording made, once it stopped. */
  sample: VoiceSample | null
  error: unknown
}

const initial: RecordState = { phase: 'idle', level: 0, heard: 0, sample: null, error: null }

export const recordStore = createStore<RecordState>(initial)

export function handleVoiceSampleEvent(e: VoiceSampleEvent): void {
  switch (e.type) {
    case 'level':
      recordStore.set((s) =>
        s.phase === 'idle'
          ? s
          : { ...s, phase: s.phase === 'stopping' ? s.phase : 'recording', level: e.level, heard: s.heard + 0.1 },
      )
      break
    case 'stopped':
      recordStore.set((s) => ({ ...s, phase: 'idle', level: 0, sample: e.sample, error: e.error }))
      break
  }
}

let listening: Promise<unknown> | null = null

export async function startRecording(): Promise<void> {
  if (!listening) listening = events.voiceSampleEvent.listen((e) => handleVoiceSampleEvent(e.payload))
  try {
    await listening
  } catch (error) {
    // Not kept: the next Record tries again.
    listening = null
    recordStore.set({ ...initial, error })
    return
  }
  recordStore.set({ ...initial, phase: 'starting' })
  try {
    await api.startVoiceSample()
    recordStore.set((s) => (s.phase === 'starting' ? { ...s, phase: 'recording' } : s))
  } catch (error) {
    recordStore.set({ ...initial, error })
  }
}

export async function stopRecording(): Promise<void> {
  recordStore.set((s) => (s.phase === 'idle' ? s : { ...s, phase: 'stopping' }))
  await api.stopVoiceSample()
}

/** Forgets the last recording (a dialog opened anew starts empty). */
export function resetRecording(): void {
  recordStore.set(initial)
}

/** For tests: as at start, listening again on the next recording. */
export function resetRecordSample(): void {
  recordStore.set(initial)
  listening = null
}

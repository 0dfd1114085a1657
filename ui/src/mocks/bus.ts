// The stand-in event bus: what Tauri's event system carries in the real app.

export interface MockEvent<T> {
  event: string
  id: number
  payload: T
}

type Handler = (e: MockEvent<unknown>) => void

const handlers = new Map<string, Set<Handler>>()
let nextId = 1

export function listen(name: string, handler: Handler): () => void {
  const set = handlers.get(name) ?? new Set()
  set.add(handler)
  handlers.set(name, set)
  return () => set.delete(handler)
}

export function emit(name: string, payload: unknown): void {
  const id = nextId++
  for (const h of [...(handlers.get(name) ?? [])]) h({ event: name, id, payload })
}

export const RUNTIME_EVENT = 'runtime-event'
export const FILES_OPENED_EVENT = 'files-opened'
export const CHAT_EVENT = 'chat-event'
export const DICTATE_EVENT = 'dictate-event'
export const VOICE_SAMPLE_EVENT = 'voice-sample-event'

// One listener on the runtime's event stream, fanned out to whoever subscribes.

import { useEffect, useRef } from 'react'
import { events } from '../bindings'

type Listen = typeof events.runtimeEvent.listen
type Callback = Parameters<Listen>[0]
/** izwi_runtime::Event as the bindings type it, tagged by `type`. */
export type RuntimeEvent = Parameters<Callback>[0]['payload']
export type RuntimeEventOf<T extends RuntimeEvent['type']> = Extract<RuntimeEvent, { type: T }>

type Handler = (event: RuntimeEvent) => void

const handlers = new Set<Handler>()
let started: Promise<void> | null = null
let unlisten: (() => void) | null = null

function dispatch(event: RuntimeEvent) {
  for (const handler of [...handlers]) {
    try {
      handler(event)
    } catch (e) {
      console.error('runtime event handler failed', e)
    }
  }
}

function start(): Promise<void> {
  if (!started) {
    started = events.runtimeEvent
      .listen((e) => dispatch(e.payload))
      .then((fn) => {
        unlisten = fn
      })
      .catch((e) => {
        started = null
        console.error('could not listen to runtime events', e)
      })
  }
  return started
}

/** Subscribes a handler; the returned promise resolves once the stream is live. */
export function subscribeRuntime(handler: Handler): { ready: Promise<void>; unsubscribe: () => void } {
  handlers.add(handler)
  return { ready: start(), unsubscribe: () => handlers.delete(handler) }
}

/** For tests: drops the shared listener so the next subscriber listens afresh. */
export function resetRuntimeEvents(): void {
  unlisten?.()
  unlisten = null
  started = null
  handlers.clear()
}

/** Calls `handler` for every runtime event while the component is mounted. */
export function useRuntimeEvents(handler: Handler): void {
  const ref = useRef(handler)
  useEffect(() => {
    ref.current = handler
  })
  useEffect(() => {
    const sub = subscribeRuntime((e) => ref.current(e))
    return sub.unsubscribe
  }, [])
}

// Stand-in for @tauri-apps/api/event (mock builds), on the same bus as the bindings stand-in.

import { emit as busEmit, listen as busListen, type MockEvent } from './bus'

export type UnlistenFn = () => void
export type EventCallback<T> = (event: MockEvent<T>) => void

export async function listen<T>(name: string, cb: EventCallback<T>): Promise<UnlistenFn> {
  return busListen(name, cb as EventCallback<unknown>)
}

export async function once<T>(name: string, cb: EventCallback<T>): Promise<UnlistenFn> {
  const off = busListen(name, (e) => {
    off()
    cb(e as MockEvent<T>)
  })
  return off
}

export async function emit(name: string, payload?: unknown): Promise<void> {
  busEmit(name, payload)
}

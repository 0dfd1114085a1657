// Short confirmations and failures, callable from anywhere; <Toaster/> shows them.

import { createStore } from './store'

export interface Toast {
  id: number
  kind: 'success' | 'error' | 'info'
  title: string
  detail?: string
  action?: { label: string; run: () => void }
}

export const toastStore = createStore<Toast[]>([])
let nextId = 1

export function toast(t: Omit<Toast, 'id'>, ms = t.kind === 'error' ? 8000 : 4500): number {
  const id = nextId++
  toastStore.set((list) => [...list.slice(-3), { ...t, id }])
  if (ms > 0) setTimeout(() => dismissToast(id), ms)
  return id
}

export function dismissToast(id: number): void {
  toastStore.set((list) => list.filter((t) => t.id !== id))
}

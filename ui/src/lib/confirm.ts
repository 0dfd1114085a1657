// Asks a yes/no question from anywhere; <ConfirmHost/> shows it and resolves the answer.

import { createStore } from './store'

export interface ConfirmRequest {
  title: string
  body: string
  confirmLabel: string
  danger: boolean
  resolve: (ok: boolean) => void
}

export const confirmStore = createStore<ConfirmRequest | null>(null)

export function confirm(opts: {
  title: string
  body: string
  confirmLabel?: string
  danger?: boolean
}): Promise<boolean> {
  return new Promise((resolve) => {
    confirmStore.get()?.resolve(false)
    confirmStore.set({
      title: opts.title,
      body: opts.body,
      confirmLabel: opts.confirmLabel ?? 'OK',
      danger: opts.danger ?? false,
      resolve,
    })
  })
}

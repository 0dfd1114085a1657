// Where a drop goes: to the Transcribe queue (the app's default), or to a dialog that
// claims drops while it is open (e.g. "Clone a voice" takes one recording).

import { useEffect } from 'react'
import { createStore, useStore } from './store'

export interface DropClaim {
  /** What dropping does, shown on the overlay: "Drop to use as the recording". */
  title: string
  onDrop: (paths: string[]) => void
}

const claimStore = createStore<DropClaim | null>(null)

export const currentDropClaim = () => claimStore.get()
export const useDropClaim = () => useStore(claimStore)

/** While mounted, drops go to `onDrop` instead of the app's queue. */
export function useClaimDrops(title: string, onDrop: (paths: string[]) => void): void {
  useEffect(() => {
    const claim = { title, onDrop }
    claimStore.set(claim)
    return () => claimStore.set((c) => (c === claim ? null : c))
  }, [title, onDrop])
}

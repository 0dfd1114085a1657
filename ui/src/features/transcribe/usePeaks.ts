// The waveform peaks of an audio file, from the Rust side; null while loading or unreadable.

import { useEffect, useState } from 'react'
import { api } from '../../lib/api'

const PEAK_BUCKETS = 800

export function usePeaks(path: string | null): number[] | null {
  const [peaks, setPeaks] = useState<number[] | null>(null)
  useEffect(() => {
    setPeaks(null)
    if (!path) return
    let live = true
    api
      .audioPeaks(path, PEAK_BUCKETS)
      .then((p) => live && setPeaks(p))
      .catch(() => live && setPeaks(null))
    return () => {
      live = false
    }
  }, [path])
  return peaks
}

// A job's transcript: the stored one once it exists, the live segments before that.

import { useCallback, useEffect, useState } from 'react'
import type { SegmentRecord, TranscriptView } from '../../bindings'
import { api } from '../../lib/api'
import { useQueueItem } from './jobsStore'

export interface LoadedTranscript {
  view: TranscriptView | null
  loading: boolean
  error: unknown
  reload: () => void
  /** Puts a segment as the store now has it (after an edit) in place of its old self. */
  replaceSegment: (segment: SegmentRecord) => void
}

export function useTranscript(jobId: number): LoadedTranscript {
  const item = useQueueItem(jobId)
  const status = item?.job.status
  const [state, setState] = useState<{ view: TranscriptView | null; loading: boolean; error: unknown; for: number }>({
    view: null,
    loading: true,
    error: null,
    for: jobId,
  })
  const [tick, setTick] = useState(0)
  const reload = useCallback(() => setTick((t) => t + 1), [])
  const replaceSegment = useCallback(
    (segment: SegmentRecord) =>
      setState((s) =>
        s.view
          ? {
              ...s,
              view: { ...s.view, segments: s.view.segments.map((x) => (x.idx === segment.idx ? segment : x)) },
            }
          : s,
      ),
    [],
  )

  useEffect(() => {
    let live = true
    setState((s) => ({ view: s.for === jobId ? s.view : null, loading: true, error: null, for: jobId }))
    api
      .getTranscript(jobId)
      .then((view) => live && setState({ view, loading: false, error: null, for: jobId }))
      .catch((error) => live && setState((s) => ({ ...s, loading: false, error, for: jobId })))
    return () => {
      live = false
    }
    // Reloads when the job finishes: the stored transcript is complete then.
  }, [jobId, status, tick])

  return {
    view: state.for === jobId ? state.view : null,
    loading: state.loading,
    error: state.error,
    reload,
    replaceSegment,
  }
}

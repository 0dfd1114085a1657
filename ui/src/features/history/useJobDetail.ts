// A job with what it made (get_job_detail), reloaded as the job moves on.

import { useCallback, useEffect, useState } from 'react'
import type { JobDetail } from '../../bindings'
import { api } from '../../lib/api'
import { useRuntimeEvents } from '../../lib/events'

export function useJobDetail(jobId: number) {
  const [state, setState] = useState<{ detail: JobDetail | null; error: unknown; for: number }>({
    detail: null,
    error: null,
    for: jobId,
  })
  const [tick, setTick] = useState(0)
  const reload = useCallback(() => setTick((t) => t + 1), [])

  useEffect(() => {
    let live = true
    api
      .getJobDetail(jobId)
      .then((detail) => live && setState({ detail, error: null, for: jobId }))
      .catch((error) => live && setState((s) => ({ detail: s.for === jobId ? s.detail : null, error, for: jobId })))
    return () => {
      live = false
    }
  }, [jobId, tick])

  useRuntimeEvents((e) => {
    const id = 'job_id' in e ? e.job_id : null
    if (id === jobId && (e.type === 'job_finished' || e.type === 'job_started' || e.type === 'batch_line_done')) {
      reload()
    }
  })

  const current = state.for === jobId
  return {
    detail: current ? state.detail : null,
    error: current ? state.error : null,
    loading: !current || (state.detail == null && state.error == null),
    reload,
  }
}

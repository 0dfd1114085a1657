// Past jobs, newest first, refreshed when jobs finish; and transcript search as you type.

import { useCallback, useEffect, useRef, useState } from 'react'
import type { Job, SearchHit } from '../../bindings'
import { api } from '../../lib/api'
import { useRuntimeEvents } from '../../lib/events'

export function useJobHistory(limit = 500) {
  const [jobs, setJobs] = useState<Job[]>([])
  const [loading, setLoading] = useState(true)
  const [error, setError] = useState<unknown>(null)
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null)

  const load = useCallback(async () => {
    try {
      const list = await api.listJobs({ kind: null, status: null, limit, offset: 0 })
      setJobs([...list].sort((a, b) => b.created_at - a.created_at || b.id - a.id))
      setError(null)
    } catch (e) {
      setError(e)
    } finally {
      setLoading(false)
    }
  }, [limit])

  useEffect(() => {
    load()
    return () => {
      if (timer.current) clearTimeout(timer.current)
    }
  }, [load])

  useRuntimeEvents((e) => {
    if (e.type === 'job_queued' || e.type === 'job_finished' || e.type === 'job_started') {
      if (timer.current) clearTimeout(timer.current)
      timer.current = setTimeout(load, 300)
    }
  })

  const remove = useCallback((id: number) => setJobs((list) => list.filter((j) => j.id !== id)), [])

  return { jobs, loading, error, reload: load, remove }
}

export function useTranscriptSearch(query: string, delay = 200, limit = 50) {
  const [hits, setHits] = useState<SearchHit[]>([])
  const [searching, setSearching] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const [searched, setSearched] = useState('')

  useEffect(() => {
    const text = query.trim()
    if (!text) {
      setHits([])
      setSearching(false)
      setError(null)
      setSearched('')
      return
    }
    let live = true
    setSearching(true)
    const t = setTimeout(() => {
      api
        .searchTranscripts(text, limit)
        .then((h) => {
          if (!live) return
          setHits(h)
          setError(null)
          setSearched(text)
        })
        .catch((e) => live && setError(e))
        .finally(() => live && setSearching(false))
    }, delay)
    return () => {
      live = false
      clearTimeout(t)
    }
  }, [query, delay, limit])

  return { hits, searching, error, searched }
}

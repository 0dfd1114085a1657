// Find in a transcript: the matches of a query in the rows' text, the current one, and
// stepping through them.

import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { findMatches } from '../../lib/highlight'
import { useAction } from '../../lib/shortcuts'

export interface Match {
  row: number
  n: number
}

export function useFind(texts: string[], scrollToRow: (row: number) => void) {
  const [open, setOpen] = useState(false)
  const [query, setQuery] = useState('')
  const [matchIndex, setMatchIndex] = useState(0)
  const inputRef = useRef<HTMLInputElement>(null)
  const matches = useMemo(() => {
    const out: Match[] = []
    if (!query.trim()) return out
    texts.forEach((t, row) => findMatches(t, query).forEach((_, n) => out.push({ row, n })))
    return out
  }, [texts, query])
  const position = Math.min(matchIndex, matches.length - 1)
  const current = matches.length ? matches[position] : null
  useEffect(() => setMatchIndex(0), [query])
  const matchRow = current?.row ?? -1
  const matchN = current?.n ?? -1
  useEffect(() => {
    if (matchRow >= 0) scrollToRow(matchRow)
  }, [matchRow, matchN, scrollToRow])

  const [focusTick, setFocusTick] = useState(0)
  const show = useCallback(() => {
    setOpen(true)
    setFocusTick((t) => t + 1)
  }, [])
  const close = useCallback(() => {
    setOpen(false)
    setQuery('')
  }, [])
  useEffect(() => {
    if (!open) return
    inputRef.current?.focus()
    inputRef.current?.select()
  }, [open, focusTick])
  const step = (d: number) => {
    if (!matches.length) return
    setMatchIndex((i) => (i + d + matches.length) % matches.length)
  }
  useAction('find', show)

  return { open, query, setQuery, matches, position, current, inputRef, show, close, step }
}

export type Find = ReturnType<typeof useFind>

// One transcript: player with waveform, segments (live while transcribing), search, copy, export.

import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import type { ExportFormat } from '../../bindings'
import { EXPORT_FORMATS, exportTranscriptAs } from './exportTranscript'
import { copyText } from '../../lib/clipboard'
import { ErrorNote } from '../../components/ErrorNote'
import { Highlighted } from '../../components/Highlight'
import { findMatches } from '../../lib/highlight'
import { Icon } from '../../components/Icon'
import { Menu } from '../../components/Menu'
import { ProgressBar } from '../../components/ProgressBar'
import { api } from '../../lib/api'
import { jobError } from '../../lib/errors'
import { toast } from '../../lib/toast'
import {
  basename,
  formatDuration,
  formatSpeed,
  formatTimestamp,
  joinPath,
  languageName,
  plural,
} from '../../lib/format'
import { isTyping, shortcutLabel } from '../../lib/platform'
import { useAction } from '../../lib/shortcuts'
import { useStore } from '../../lib/store'
import { settingsStore } from '../settings/settingsStore'
import { activeStage, isActive, useQueueItem } from './jobsStore'
import { useAudio } from './useAudio'
import { useMediaSrc } from '../../lib/mediaSrc'
import { useTranscript } from './useTranscript'
import { Waveform } from './Waveform'

const PEAK_BUCKETS = 800

interface Row {
  key: string
  idx: number
  start: number
  end: number
  text: string
}

export function TranscriptView({
  jobId,
  focusSegment = null,
  focusNonce = 0,
  onClose,
}: {
  jobId: number
  /** A segment idx to scroll to and seek to (from a search hit). */
  focusSegment?: number | null
  focusNonce?: number
  onClose?: () => void
}) {
  const { view, loading, error, reload } = useTranscript(jobId)
  const item = useQueueItem(jobId)
  const dataDir = useStore(settingsStore, (s) => s.settings?.data_dir ?? null)
  const record = view?.record ?? null
  const job = item?.job ?? null
  const running = !!job && isActive(job.status)

  const liveCount = item?.segments.length ?? 0
  const preferLive = !!job && isActive(job.status) && liveCount >= (view?.segments.length ?? 0)
  const rows: Row[] = useMemo(() => {
    if (view && !preferLive && (view.segments.length || !liveCount)) {
      return [...view.segments]
        .sort((a, b) => a.start - b.start || a.idx - b.idx)
        .map((s) => ({ key: `s${s.idx}`, idx: s.idx, start: s.start, end: s.end, text: s.text }))
    }
    return (item?.segments ?? []).map((s, i) => ({
      key: `l${i}-${s.start}`,
      idx: i,
      start: s.start,
      end: s.end,
      text: s.text,
    }))
  }, [view, item?.segments, preferLive, liveCount])

  const title = record?.title || (job ? basename(job.input) : `Job ${jobId}`)
  const sourcePath = record?.source_path || job?.input || null
  const [useCopy, setUseCopy] = useState(false)
  const audioPath = useCopy && record?.audio_path && dataDir ? joinPath(dataDir, record.audio_path) : sourcePath
  const media = useMediaSrc(audioPath)
  const src = media.src
  const duration = record?.duration ?? job?.metrics.audio_seconds ?? rows[rows.length - 1]?.end ?? 0
  const audioRef = useRef<HTMLAudioElement>(null)
  const audio = useAudio(audioRef, src, duration)

  // When the user's file cannot be played (moved, or outside the asset scope), try Izwi's copy.
  useEffect(() => {
    if ((audio.error || media.failed) && !useCopy && record?.audio_path && dataDir) setUseCopy(true)
  }, [audio.error, media.failed, useCopy, record?.audio_path, dataDir])

  const [peaks, setPeaks] = useState<number[] | null>(null)
  useEffect(() => {
    setPeaks(null)
    if (!audioPath) return
    let live = true
    api
      .audioPeaks(audioPath, PEAK_BUCKETS)
      .then((p) => live && setPeaks(p))
      .catch(() => live && setPeaks(null))
    return () => {
      live = false
    }
  }, [audioPath])

  // The segment under the playhead.
  const currentRow = useMemo(() => {
    const t = audio.time
    if (!audio.playing && t === 0) return -1
    let lo = 0
    let hi = rows.length - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      if (rows[mid].start <= t) {
        found = mid
        lo = mid + 1
      } else hi = mid - 1
    }
    return found >= 0 && t < Math.max(rows[found].end, rows[found].start + 0.05) ? found : -1
  }, [audio.time, audio.playing, rows])

  const listRef = useRef<HTMLOListElement>(null)
  const scrollToRow = useCallback((i: number, smooth = true) => {
    const el = listRef.current?.querySelector<HTMLElement>(`[data-row="${i}"]`)
    el?.scrollIntoView?.({ block: 'center', behavior: smooth ? 'smooth' : 'auto' })
  }, [])

  useEffect(() => {
    if (audio.playing && currentRow >= 0) {
      const el = listRef.current?.querySelector<HTMLElement>(`[data-row="${currentRow}"]`)
      el?.scrollIntoView?.({ block: 'nearest', behavior: 'smooth' })
    }
  }, [currentRow, audio.playing])

  // A search hit asked for a segment: bring it into view, put the playhead there.
  const [flash, setFlash] = useState<number | null>(null)
  const latest = useRef({ rows, seek: audio.seek, scrollToRow })
  useEffect(() => {
    latest.current = { rows, seek: audio.seek, scrollToRow }
  })
  const hasRows = rows.length > 0
  useEffect(() => {
    const { rows, seek, scrollToRow } = latest.current
    if (focusSegment == null || !rows.length) return
    const i = rows.findIndex((r) => r.idx === focusSegment)
    if (i < 0) return
    scrollToRow(i, false)
    seek(rows[i].start)
    setFlash(i)
    const t = setTimeout(() => setFlash(null), 1600)
    return () => clearTimeout(t)
  }, [focusSegment, focusNonce, hasRows])

  // Search within the transcript.
  const [searchOpen, setSearchOpen] = useState(false)
  const [query, setQuery] = useState('')
  const [matchIndex, setMatchIndex] = useState(0)
  const searchRef = useRef<HTMLInputElement>(null)
  const matches = useMemo(() => {
    const out: { row: number; n: number }[] = []
    if (!query.trim()) return out
    rows.forEach((r, row) => findMatches(r.text, query).forEach((_, n) => out.push({ row, n })))
    return out
  }, [rows, query])
  const current = matches.length ? matches[Math.min(matchIndex, matches.length - 1)] : null
  useEffect(() => setMatchIndex(0), [query])
  const matchRow = current?.row ?? -1
  const matchN = current?.n ?? -1
  useEffect(() => {
    if (matchRow >= 0) scrollToRow(matchRow)
  }, [matchRow, matchN, scrollToRow])

  const [focusTick, setFocusTick] = useState(0)
  const openSearch = useCallback(() => {
    setSearchOpen(true)
    setFocusTick((t) => t + 1)
  }, [])
  useEffect(() => {
    if (!searchOpen) return
    searchRef.current?.focus()
    searchRef.current?.select()
  }, [searchOpen, focusTick])
  const step = (d: number) => {
    if (!matches.length) return
    setMatchIndex((i) => (i + d + matches.length) % matches.length)
  }
  useAction('find', openSearch)

  // Export.
  const [exportOpen, setExportOpen] = useState(false)
  const exportable = !!record && (!job || job.status === 'done')
  useAction('export', () => (exportable ? setExportOpen(true) : undefined))

  // Space plays and pauses when no field or button has the focus.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== ' ' || e.ctrlKey || e.metaKey || e.altKey) return
      const t = e.target as HTMLElement | null
      if (isTyping(t) || t?.closest('button, [role="slider"], [role="menu"], [role="dialog"]')) return
      e.preventDefault()
      audio.toggle()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [audio])

  const copyAll = async () => {
    const text = rows.map((r) => r.text.trim()).join('\n')
    const ok = await copyText(text)
    toast(
      ok ? { kind: 'success', title: 'Transcript copied' } : { kind: 'error', title: 'Could not copy the transcript.' },
    )
  }

  const failed = job && (job.status === 'failed' || job.status === 'interrupted' || job.status === 'cancelled')

  return (
    <section className="transcript" aria-label={`Transcript of ${title}`}>
      <header className="transcript-header">
        <div className="transcript-heading">
          {onClose && (
            <button
              type="button"
              className="btn btn-icon btn-ghost"
              aria-label="Close transcript"
              data-tooltip="Close"
              onClick={onClose}
            >
              <Icon name="arrowLeft" />
            </button>
          )}
          <div className="transcript-titles">
            <h2 className="transcript-title" title={sourcePath ?? undefined}>
              {title}
            </h2>
            <div className="meta">
              {record?.language && <span>{languageName(record.language)}</span>}
              {duration > 0 && <span>{formatDuration(duration)}</span>}
              {(record?.model_id ?? job?.model_id) && <span>{record?.model_id ?? job?.model_id}</span>}
              {record?.rtf != null && (
                <span title={`Real-time factor ${record.rtf.toFixed(3)}`}>{formatSpeed(record.rtf)}</span>
              )}
              {rows.length > 0 && <span>{plural(rows.length, 'segment')}</span>}
            </div>
          </div>
        </div>
        <div className="toolbar">
          <button
            type="button"
            className={`btn btn-icon${searchOpen ? ' btn-active' : ''}`}
            aria-label="Search in transcript"
            data-tooltip={`Search (${shortcutLabel('F')})`}
            onClick={() => (searchOpen ? setSearchOpen(false) : openSearch())}
          >
            <Icon name="search" />
          </button>
          <button
            type="button"
            className="btn btn-icon"
            aria-label="Copy all"
            data-tooltip="Copy all text"
            disabled={!rows.length}
            onClick={copyAll}
          >
            <Icon name="copy" />
          </button>
          <Menu
            label="Export formats"
            open={exportOpen}
            onOpenChange={setExportOpen}
            items={EXPORT_FORMATS.map((f) => ({ id: f.id, label: f.label, hint: f.hint, disabled: !exportable }))}
            onSelect={(id) => exportTranscriptAs(jobId, id as ExportFormat, title, sourcePath)}
            button={(p) => (
              <button
                type="button"
                className="btn"
                disabled={!exportable}
                data-tooltip={exportable ? `Export (${shortcutLabel('E')})` : 'Available when the transcript is done'}
                {...p}
              >
                <Icon name="export" /> Export
              </button>
            )}
          />
        </div>
      </header>

      {running && item && (
        <div className="transcript-live">
          <ProgressBar value={activeStage(item).value} label={`Transcribing ${title}`} />
          <span className="muted">{activeStage(item).text}</span>
        </div>
      )}
      {failed && job && job.status !== 'cancelled' && (
        <ErrorNote
          error={jobError(job.error, job.status)}
          title={job.status === 'interrupted' ? 'Interrupted' : 'Transcription failed'}
        />
      )}

      <div className="player">
        <button
          type="button"
          className="btn btn-icon btn-round"
          aria-label={audio.playing ? 'Pause' : 'Play'}
          data-tooltip={audio.playing ? 'Pause (Space)' : 'Play (Space)'}
          disabled={!src}
          onClick={audio.toggle}
        >
          <Icon name={audio.playing ? 'pause' : 'play'} />
        </button>
        <Waveform peaks={peaks} duration={audio.duration} time={audio.time} onSeek={audio.seek} />
        <span className="player-time tabular" aria-live="off">
          {formatTimestamp(audio.time)} / {formatTimestamp(audio.duration)}
        </span>
        {src && <audio ref={audioRef} src={src} preload="metadata" data-testid="player-audio" />}
      </div>
      {(audio.error || media.failed) && (useCopy || !record?.audio_path) && !failed && (
        <p className="hint">The audio file could not be played. It may have been moved or deleted.</p>
      )}

      {searchOpen && (
        <div className="findbar" role="search">
          <Icon name="search" size={14} />
          <input
            ref={searchRef}
            type="search"
            className="findbar-input"
            placeholder="Find in transcript"
            aria-label="Find in transcript"
            value={query}
            onChange={(e) => setQuery(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter') {
                e.preventDefault()
                step(e.shiftKey ? -1 : 1)
              } else if (e.key === 'Escape') {
                e.preventDefault()
                e.stopPropagation()
                setSearchOpen(false)
                setQuery('')
              }
            }}
          />
          <span className="findbar-count tabular" aria-live="polite">
            {query.trim()
              ? matches.length
                ? `${Math.min(matchIndex, matches.length - 1) + 1} of ${matches.length}`
                : 'No matches'
              : ''}
          </span>
          <button
            type="button"
            className="btn btn-icon btn-ghost btn-sm"
            aria-label="Previous match"
            data-tooltip="Previous (Shift+Enter)"
            disabled={!matches.length}
            onClick={() => step(-1)}
          >
            <Icon name="chevronUp" size={14} />
          </button>
          <button
            type="button"
            className="btn btn-icon btn-ghost btn-sm"
            aria-label="Next match"
            data-tooltip="Next (Enter)"
            disabled={!matches.length}
            onClick={() => step(1)}
          >
            <Icon name="chevronDown" size={14} />
          </button>
          <button
            type="button"
            className="btn btn-icon btn-ghost btn-sm"
            aria-label="Close search"
            data-tooltip="Close (Esc)"
            onClick={() => {
              setSearchOpen(false)
              setQuery('')
            }}
          >
            <Icon name="close" size={12} />
          </button>
        </div>
      )}

      {error != null && !rows.length ? (
        <ErrorNote error={error} title="Could not load the transcript" onRetry={reload} />
      ) : null}

      {rows.length > 0 ? (
        <ol className="segments" ref={listRef} aria-label="Segments">
          {rows.map((r, i) => {
            const isCurrent = i === currentRow
            const cls = ['segment', isCurrent && 'segment-current', flash === i && 'segment-flash']
              .filter(Boolean)
              .join(' ')
            return (
              <li
                key={r.key}
                className={cls}
                data-row={i}
                aria-current={isCurrent ? 'true' : undefined}
                onClick={(e) => {
                  // Selecting text should not seek.
                  if (window.getSelection?.()?.toString() && !(e.target as HTMLElement).closest('button')) return
                  audio.seek(r.start)
                }}
              >
                <button
                  type="button"
                  className="segment-time tabular"
                  aria-label={`Jump to ${formatTimestamp(r.start)}`}
                >
                  {formatTimestamp(r.start)}
                </button>
                <p className="segment-text">
                  <Highlighted
                    text={r.text.trim()}
                    query={searchOpen ? query : ''}
                    current={current?.row === i ? current.n : -1}
                  />
                </p>
              </li>
            )
          })}
        </ol>
      ) : loading || running ? (
        <div className="transcript-wait muted">
          <Icon name="spinner" /> {running ? 'The first words appear as soon as a window is done.' : 'Loading…'}
        </div>
      ) : !failed && error == null ? (
        <p className="muted transcript-wait">No speech was found in this file.</p>
      ) : null}
    </section>
  )
}

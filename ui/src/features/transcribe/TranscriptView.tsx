// One transcript: header and toolbar, the player with waveform, find, and the segments
// (live while transcribing; editable once stored).

import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import type { Job } from '../../bindings'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { ProgressBar } from '../../components/ProgressBar'
import { api } from '../../lib/api'
import { describeError, jobError } from '../../lib/errors'
import { basename, joinPath } from '../../lib/format'
import { useMediaSrc } from '../../lib/mediaSrc'
import { useAction } from '../../lib/shortcuts'
import { useStore } from '../../lib/store'
import { toast } from '../../lib/toast'
import { settingsStore } from '../settings/settingsStore'
import { FindBar } from './FindBar'
import { activeStage, isActive, transcribeAgain, useQueueItem } from './jobsStore'
import { Player } from './Player'
import { SegmentList } from './SegmentList'
import type { Row } from './SegmentRow'
import { TranscriptHeader } from './TranscriptHeader'
import { useAudio } from './useAudio'
import { useFind } from './useFind'
import { usePeaks } from './usePeaks'
import { useSpaceToPlay } from './useSpaceToPlay'
import { useTranscript } from './useTranscript'

export function TranscriptView({
  jobId,
  listed = null,
  focusSegment = null,
  focusNonce = 0,
  onClose,
}: {
  jobId: number
  /** The job as History lists it, for a job not in this session's queue (one a crash interrupted). */
  listed?: Job | null
  /** A segment idx to scroll to and seek to (from a search hit). */
  focusSegment?: number | null
  focusNonce?: number
  onClose?: () => void
}) {
  const { view, loading, error, reload, replaceSegment } = useTranscript(jobId)
  const item = useQueueItem(jobId)
  const dataDir = useStore(settingsStore, (s) => s.settings?.data_dir ?? null)
  const record = view?.record ?? null
  const job = item?.job ?? listed
  const running = !!job && isActive(job.status)

  const liveCount = item?.segments.length ?? 0
  const preferLive = !!job && isActive(job.status) && liveCount >= (view?.segments.length ?? 0)
  const stored = !!view && !preferLive && (view.segments.length > 0 || !liveCount)
  const rows: Row[] = useMemo(() => {
    if (stored && view) {
      return [...view.segments]
        .sort((a, b) => a.start - b.start || a.idx - b.idx)
        .map((s) => ({
          key: `s${s.idx}`,
          idx: s.idx,
          start: s.start,
          end: s.end,
          text: s.text,
          original: s.original ?? null,
          words: s.words ?? [],
        }))
    }
    return (item?.segments ?? []).map((s, i) => ({
      key: `l${i}-${s.start}`,
      idx: i,
      start: s.start,
      end: s.end,
      text: s.text,
      original: null,
      words: s.words ?? [],
    }))
  }, [stored, view, item?.segments])
  const texts = useMemo(() => rows.map((r) => r.text), [rows])

  const title = record?.title || (job ? basename(job.input) : `Job ${jobId}`)
  // A past session's file may be read once loading its transcript has allowed it (the
  // app lets the page read only files the user chose, or whose transcripts it opened):
  // asked for sooner, its waveform and audio would be refused.
  const readable = !!item || !loading
  const sourcePath = record?.source_path || (readable ? job?.input : null) || null
  const [useCopy, setUseCopy] = useState(false)
  const audioPath = useCopy && record?.audio_path && dataDir ? joinPath(dataDir, record.audio_path) : sourcePath
  const media = useMediaSrc(audioPath)
  const src = media.src
  const duration = record?.duration ?? job?.metrics.audio_seconds ?? rows[rows.length - 1]?.end ?? 0
  const audioRef = useRef<HTMLAudioElement>(null)
  const audio = useAudio(audioRef, src, duration)
  const peaks = usePeaks(audioPath)
  useSpaceToPlay(audio.toggle)

  // When the user's file cannot be played (moved, or outside the asset scope), try Izwi's copy.
  useEffect(() => {
    if ((audio.error || media.failed) && !useCopy && record?.audio_path && dataDir) setUseCopy(true)
  }, [audio.error, media.failed, useCopy, record?.audio_path, dataDir])

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

  const find = useFind(texts, scrollToRow)

  // Export.
  const [exportOpen, setExportOpen] = useState(false)
  const exportable = !!record && (!job || job.status === 'done')
  useAction('export', () => (exportable ? setExportOpen(true) : undefined))

  // Corrections: only of a stored transcript, not while its job still adds segments.
  const editable = stored && !!record && !running
  const transcriptId = record?.id ?? null
  const saveSegment = useCallback(
    async (idx: number, text: string) => {
      if (transcriptId == null) return
      try {
        replaceSegment(await api.editSegment(transcriptId, idx, text))
      } catch (e) {
        const { title, detail } = describeError(e)
        toast({ kind: 'error', title: `Could not save the correction: ${title}`, detail })
        throw e
      }
    },
    [transcriptId, replaceSegment],
  )
  const revertSegment = useCallback(
    async (idx: number) => {
      if (transcriptId == null) return
      try {
        replaceSegment(await api.revertSegment(transcriptId, idx))
      } catch (e) {
        const { title, detail } = describeError(e)
        toast({ kind: 'error', title: `Could not revert the segment: ${title}`, detail })
        throw e
      }
    },
    [transcriptId, replaceSegment],
  )

  const failed = job && (job.status === 'failed' || job.status === 'interrupted' || job.status === 'cancelled')

  return (
    <section className="transcript" aria-label={`Transcript of ${title}`}>
      <TranscriptHeader
        jobId={jobId}
        title={title}
        sourcePath={sourcePath}
        language={record?.language ?? null}
        duration={duration}
        modelId={record?.model_id ?? job?.model_id ?? null}
        rtf={record?.rtf ?? null}
        texts={texts}
        edited={rows.filter((r) => r.original != null).length}
        exportable={exportable}
        exportOpen={exportOpen}
        onExportOpenChange={setExportOpen}
        searchOpen={find.open}
        onToggleSearch={() => (find.open ? find.close() : find.show())}
        onClose={onClose}
      />

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
          onRetry={() =>
            transcribeAgain(job).catch((e) => {
              const { title, detail } = describeError(e)
              toast({ kind: 'error', title: `Could not transcribe it again: ${title}`, detail })
            })
          }
        />
      )}

      <Player audio={audio} audioRef={audioRef} src={src} peaks={peaks} />
      {(audio.error || media.failed) && (useCopy || !record?.audio_path) && !failed && (
        <p className="hint">The audio file could not be played. It may have been moved or deleted.</p>
      )}

      {find.open && <FindBar find={find} />}

      {error != null && !rows.length ? (
        <ErrorNote error={error} title="Could not load the transcript" onRetry={reload} />
      ) : null}

      {rows.length > 0 ? (
        <SegmentList
          rows={rows}
          listRef={listRef}
          currentRow={currentRow}
          time={audio.time}
          flashRow={flash}
          query={find.open ? find.query : ''}
          currentMatch={find.current}
          editable={editable}
          onSeek={audio.seek}
          onSave={saveSegment}
          onRevert={revertSegment}
        />
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

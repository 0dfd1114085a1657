// The transcription queue of this session: jobs, their live progress and segments.

import type { Job, JobStage, QueuedFiles, Segment, Task, TranscribeOptions } from '../../bindings'
import { api } from '../../lib/api'
import type { RuntimeEvent } from '../../lib/events'
import { basename, formatEta } from '../../lib/format'
import { navStore, openTranscript } from '../../lib/nav'
import { createStore, useStore } from '../../lib/store'
import { toast } from '../../lib/toast'

export interface QueueItem {
  job: Job
  /** What a running job is doing, as the runtime reports it; null before it says. */
  stage: JobStage | null
  progress: number
  etaSeconds: number | null
  windowsDone: number
  windowsTotal: number
  /** Segments as windows finish (out of order), kept sorted by start. */
  segments: Segment[]
  /** Open the transcript when it is done (files given at launch). */
  openWhenDone: boolean
  cancelling: boolean
}

export interface JobsState {
  items: Record<number, QueueItem>
  /** Ids in the order they were queued. */
  order: number[]
  /** Files waiting for a model to be installed. */
  waiting: string[]
  submitting: boolean
  submitError: unknown
}

const initial: JobsState = { items: {}, order: [], waiting: [], submitting: false, submitError: null }

export const jobsStore = createStore<JobsState>(initial)

export function resetJobs(): void {
  jobsStore.set(initial)
}

export const isActive = (status: string) => status === 'queued' || status === 'running'

/**
 * What an active job is doing, in words, and its bar's value (null: indeterminate). The
 * runtime runs a few jobs at once; the others wait queued for a slot.
 */
export function activeStage(item: QueueItem): { text: string; value: number | null } {
  if (item.job.status === 'queued') return { text: 'Queued · waiting for a free slot', value: 0 }
  if (item.windowsTotal) {
    const pct = `${Math.round(item.progress * 100)}%`
    return { text: `Transcribing · ${pct} · ${formatEta(item.etaSeconds)}`, value: item.progress }
  }
  switch (item.stage) {
    case 'loading_model':
      return { text: 'Loading the model…', value: null }
    case 'decoding':
      return { text: 'Reading the file…', value: null }
    case 'transcribing':
      return { text: 'Transcribing…', value: null }
    default:
      return { text: 'Starting…', value: null }
  }
}

function newItem(job: Job): QueueItem {
  return {
    job,
    stage: null,
    progress: job.progress ?? 0,
    etaSeconds: null,
    windowsDone: 0,
    windowsTotal: 0,
    segments: [],
    openWhenDone: false,
    cancelling: false,
  }
}

/** Adds jobs; a job already known keeps its state (events may have run ahead of the command). */
export function addJobs(jobs: Job[], opts: { openWhenDone?: boolean } = {}): void {
  const toOpen: number[] = []
  jobsStore.set((s) => {
    const items = { ...s.items }
    const order = [...s.order]
    for (const job of jobs) {
      if (job.kind !== 'transcribe') continue
      const existing = items[job.id]
      if (!existing) {
        items[job.id] = { ...newItem(job), openWhenDone: !!opts.openWhenDone }
        order.push(job.id)
      } else if (opts.openWhenDone && !existing.openWhenDone) {
        items[job.id] = { ...existing, openWhenDone: true }
      }
      if (opts.openWhenDone && existing?.job.status === 'done') toOpen.push(job.id)
    }
    return { ...s, items, order }
  })
  toOpen.forEach((id) => openTranscript(id))
}

function update(id: number, fn: (item: QueueItem) => QueueItem): void {
  jobsStore.set((s) => {
    const item = s.items[id]
    if (!item) return s
    return { ...s, items: { ...s.items, [id]: fn(item) } }
  })
}

export function insertSegments(existing: Segment[], incoming: Segment[]): Segment[] {
  const seen = new Set(existing.map((x) => `${x.start}|${x.end}|${x.text}`))
  const merged = [...existing]
  for (const seg of incoming) {
    const key = `${seg.start}|${seg.end}|${seg.text}`
    if (!seen.has(key)) {
      seen.add(key)
      merged.push(seg)
    }
  }
  return merged.sort((a, b) => a.start - b.start || a.end - b.end)
}

export function handleJobEvent(e: RuntimeEvent): void {
  switch (e.type) {
    case 'job_queued':
      addJobs([e.job])
      break
    case 'job_started':
      update(e.job_id, (it) => ({
        ...it,
        job: { ...it.job, status: 'running', started_at: it.job.started_at ?? Date.now() },
      }))
      break
    case 'job_stage':
      update(e.job_id, (it) => ({ ...it, stage: e.stage }))
      break
    case 'job_progress':
      update(e.job_id, (it) => ({
        ...it,
        job: it.job.status === 'queued' ? { ...it.job, status: 'running' } : it.job,
        progress: Math.max(it.progress, e.progress),
        etaSeconds: e.eta_seconds,
        windowsDone: e.windows_done,
        windowsTotal: e.windows_total,
      }))
      break
    case 'job_segments':
      update(e.job_id, (it) => ({ ...it, segments: insertSegments(it.segments, e.segments) }))
      break
    case 'job_finished': {
      const item = jobsStore.get().items[e.job_id]
      update(e.job_id, (it) => ({
        ...it,
        job: { ...it.job, status: e.status, error: e.error, finished_at: Date.now() },
        progress: e.status === 'done' ? 1 : it.progress,
        etaSeconds: null,
        cancelling: false,
      }))
      if (item?.openWhenDone && e.status === 'done') openWhenFree(e.job_id, item.job.input)
      break
    }
    default:
      break
  }
}

/**
 * Opens a finished transcript the user asked to see (a file Izwi was opened with) where
 * that takes nothing away: on the Transcribe page with no transcript open. Anywhere else
 * (another page, a transcript being read or corrected) it is offered instead.
 */
function openWhenFree(jobId: number, input: string): void {
  const nav = navStore.get()
  if (nav.view === 'transcribe' && nav.transcribe == null) {
    openTranscript(jobId)
    return
  }
  toast({
    kind: 'success',
    title: `Transcribed ${basename(input)}`,
    action: { label: 'Open', run: () => openTranscript(jobId) },
  })
}

/** Puts back the jobs still queued or running (after a reload of the window). */
export async function loadActiveJobs(): Promise<void> {
  try {
    const jobs = await api.listJobs({ kind: 'transcribe', status: null, limit: 50, offset: 0 })
    const active = jobs.filter((j) => isActive(j.status)).sort((a, b) => a.created_at - b.created_at)
    addJobs(active)
  } catch {
    /* History shows the error; the queue just starts empty. */
  }
}

export interface QueueOptions {
  modelId: string | null
  language: string | null
  task: Task
  wordTimestamps: boolean
  /** Voxtral Realtime only; null: the model's default delay. */
  delayMs: number | null
}

export function transcribeOptions(o: QueueOptions): TranscribeOptions {
  return {
    model_id: o.modelId,
    language: o.language,
    task: o.task,
    timestamps: true,
    beam_size: 1,
    initial_prompt: null,
    word_timestamps: o.wordTimestamps,
    delay_ms: o.delayMs,
  }
}

/** Queues files (folders are expanded by the Rust side). Returns the jobs, or null on error. */
export async function submitFiles(
  paths: string[],
  options: QueueOptions,
  opts: { openWhenDone?: boolean } = {},
): Promise<QueuedFiles | null> {
  if (!paths.length) return { jobs: [], skipped: [], left_out: 0 }
  jobsStore.set((s) => ({ ...s, submitting: true, submitError: null }))
  try {
    const queued = await api.transcribeFiles(paths, transcribeOptions(options))
    addJobs(queued.jobs, opts)
    jobsStore.set((s) => ({ ...s, submitting: false }))
    return queued
  } catch (submitError) {
    jobsStore.set((s) => ({ ...s, submitting: false, submitError }))
    return null
  }
}

export function setWaiting(paths: string[]): void {
  jobsStore.set((s) => ({ ...s, waiting: paths }))
}

export function clearSubmitError(): void {
  jobsStore.set((s) => ({ ...s, submitError: null }))
}

export async function cancelJob(id: number): Promise<void> {
  update(id, (it) => ({ ...it, cancelling: true }))
  try {
    await api.cancelJob(id)
  } catch (e) {
    update(id, (it) => ({ ...it, cancelling: false }))
    throw e
  }
}

/** The options a job was queued with, read back from its recorded request. */
export function optionsOf(job: Job): TranscribeOptions {
  const p = (job.params ?? {}) as Partial<Record<keyof TranscribeOptions, unknown>>
  return {
    model_id: typeof p.model_id === 'string' ? p.model_id : job.model_id,
    language: typeof p.language === 'string' ? p.language : null,
    task: p.task === 'translate' ? 'translate' : 'transcribe',
    timestamps: typeof p.timestamps === 'boolean' ? p.timestamps : true,
    beam_size: typeof p.beam_size === 'number' ? p.beam_size : 1,
    initial_prompt: typeof p.initial_prompt === 'string' ? p.initial_prompt : null,
    word_timestamps: p.word_timestamps === true,
    delay_ms: typeof p.delay_ms === 'number' ? p.delay_ms : null,
  }
}

/** Queues the same file again with the same options; the new row takes the old one's place. */
export async function retryJob(id: number): Promise<void> {
  const item = jobsStore.get().items[id]
  if (!item) return
  const {
    jobs: [again],
  } = await api.transcribeFiles([item.job.input], optionsOf(item.job))
  if (!again) return
  jobsStore.set((s) => {
    const items = { ...s.items }
    delete items[id]
    if (!items[again.id]) items[again.id] = newItem(again)
    const order = s.order.filter((x) => x !== again.id).map((x) => (x === id ? again.id : x))
    return { ...s, items, order }
  })
}

/** Transcribes a failed or interrupted job's file again with its options (from History, say:
 *  a dictation's recording after a crash), and shows the new job on Transcribe. */
export async function transcribeAgain(job: Job): Promise<void> {
  const {
    jobs: [again],
  } = await api.transcribeFiles([job.input], optionsOf(job))
  if (!again) return
  addJobs([again])
  openTranscript(again.id)
}

/** Takes finished jobs off the list (they stay in History). */
export function clearFinished(): void {
  jobsStore.set((s) => {
    const order = s.order.filter((id) => isActive(s.items[id]?.job.status ?? ''))
    const items: Record<number, QueueItem> = {}
    for (const id of order) items[id] = s.items[id]
    return { ...s, order, items }
  })
}

export function removeFromQueue(id: number): void {
  jobsStore.set((s) => {
    if (!s.items[id]) return s
    const items = { ...s.items }
    delete items[id]
    return { ...s, items, order: s.order.filter((x) => x !== id) }
  })
}

export function useJobs(): JobsState {
  return useStore(jobsStore)
}

export function useQueueItem(id: number | null): QueueItem | null {
  return useStore(jobsStore, (s) => (id == null ? null : (s.items[id] ?? null)))
}

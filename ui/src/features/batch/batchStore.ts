// Batch export: lines (typed, pasted or read from a .txt/.csv) → one WAV per line in a
// folder, with per-line progress from `batch_line_done` events, cancel, and the folder
// shown when it is done; then Whisper's check of each line (from the manifest) and a
// re-take of the flagged ones.

import type { Job, JobStatus, ManifestRow } from '../../bindings'
import { api } from '../../lib/api'
import { jobError } from '../../lib/errors'
import { EarlyEvents } from '../../lib/earlyEvents'
import type { RuntimeEvent } from '../../lib/events'
import { createStore, useStore } from '../../lib/store'
import { rememberedVoice, rememberVoice } from '../voices/voicesStore'

export interface LineDone {
  file: string
  seconds: number
}

export interface BatchState {
  /** The lines as typed; blank ones are skipped. */
  text: string
  /** Where the lines came from, when imported. */
  source: string | null
  voiceId: number | null
  /** Overrides the voice's own speed; null uses it. */
  speed: number | null
  outputDir: string | null
  job: Job | null
  status: JobStatus | null
  starting: boolean
  submitError: unknown
  /** The lines sent with the job (what the per-line list shows). */
  lines: string[]
  /** The voice and speed the job was sent with (a re-take uses them). */
  sent: { voice: string; speed: number | null } | null
  done: Record<number, LineDone>
  etaSeconds: number | null
  cancelling: boolean
  error: string | null
  importing: boolean
  /** The manifest's rows once the batch is done: what Whisper heard of each line. */
  checks: ManifestRow[] | null
  /** The re-take of the flagged lines under way or last done. */
  retake: { job: Job; status: JobStatus } | null
  retakeError: unknown
  /** The manifest could not be read. */
  checksError: unknown
}

const VOICE_KEY = 'izwi.batch.voice'

const fresh = (): BatchState => ({
  text: '',
  source: null,
  voiceId: rememberedVoice(VOICE_KEY),
  speed: null,
  outputDir: null,
  job: null,
  status: null,
  starting: false,
  submitError: null,
  lines: [],
  sent: null,
  done: {},
  etaSeconds: null,
  cancelling: false,
  error: null,
  importing: false,
  checks: null,
  retake: null,
  retakeError: null,
  checksError: null,
})

export const batchStore = createStore<BatchState>(fresh())
const early = new EarlyEvents()

export function resetBatch(): void {
  early.clear()
  batchStore.set(fresh())
}

/** The non-blank lines of `text`, trimmed. */
export function linesOf(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)
}

export const isRunning = (s: Pick<BatchState, 'starting' | 'status'>) =>
  s.starting || s.status === 'queued' || s.status === 'running'

export function setBatchText(text: string): void {
  batchStore.set((s) => ({ ...s, text }))
}

export function setBatchSpeed(speed: number | null): void {
  batchStore.set((s) => ({ ...s, speed }))
}

export function setBatchVoice(voiceId: number): void {
  rememberVoice(VOICE_KEY, voiceId)
  batchStore.set((s) => ({ ...s, voiceId, speed: null }))
}

export function setOutputDir(outputDir: string | null): void {
  batchStore.set((s) => ({ ...s, outputDir }))
}

/** Reads a .txt or .csv file's lines into the text. Rejects with the command's error. */
export async function importLines(path: string): Promise<string[]> {
  batchStore.set((s) => ({ ...s, importing: true }))
  try {
    const lines = await api.readLines(path)
    batchStore.set((s) => ({ ...s, text: lines.join('\n'), source: path }))
    return lines
  } finally {
    batchStore.set((s) => ({ ...s, importing: false }))
  }
}

export async function startBatch(voiceId: number, lines: string[], outputDir: string): Promise<Job | null> {
  if (isRunning(batchStore.get())) return null
  early.clear()
  batchStore.set((s) => ({
    ...s,
    job: null,
    status: null,
    starting: true,
    submitError: null,
    lines,
    sent: { voice: String(voiceId), speed: s.speed },
    done: {},
    etaSeconds: null,
    cancelling: false,
    error: null,
    checks: null,
    retake: null,
    retakeError: null,
    checksError: null,
  }))
  try {
    const job = await api.speakBatch(String(voiceId), lines, outputDir, batchStore.get().speed)
    batchStore.set((s) => ({ ...s, job, status: s.status ?? job.status, starting: false }))
    early.take(job.id).forEach(apply)
    return job
  } catch (submitError) {
    early.clear()
    batchStore.set((s) => ({ ...s, starting: false, submitError, lines: [] }))
    return null
  }
}

export async function cancelBatch(): Promise<void> {
  const { job } = batchStore.get()
  if (!job || !isRunning(batchStore.get())) return
  batchStore.set((s) => ({ ...s, cancelling: true }))
  try {
    await api.cancelJob(job.id)
  } catch (e) {
    batchStore.set((s) => ({ ...s, cancelling: false }))
    throw e
  }
}

/** Opens the file manager on the batch's folder. */
export async function showBatchFolder(): Promise<void> {
  const { job } = batchStore.get()
  if (job) await api.showBatchOutput(job.id)
}

/** Back to editing, keeping the lines, voice and folder. */
export function newBatch(): void {
  batchStore.set((s) => ({
    ...s,
    job: null,
    status: null,
    lines: [],
    done: {},
    etaSeconds: null,
    cancelling: false,
    error: null,
    checks: null,
    retake: null,
    retakeError: null,
    checksError: null,
    // The folder now holds a batch; the runtime refuses to write a second one there.
    outputDir: null,
  }))
}

export function clearBatchError(): void {
  batchStore.set((s) => ({ ...s, submitError: null }))
}

/** Reads what Whisper heard of each line from the batch's manifest. */
export async function loadChecks(): Promise<void> {
  const { job } = batchStore.get()
  if (!job) return
  try {
    const checks = await api.batchChecks(job.id)
    batchStore.set((s) => (s.job?.id === job.id ? { ...s, checks, checksError: null } : s))
  } catch (checksError) {
    batchStore.set((s) => ({ ...s, checksError }))
  }
}

export const flaggedOf = (checks: ManifestRow[] | null) => (checks ?? []).filter((r) => r.flagged)

/** Says the flagged lines again, each with a new seed, with the batch's voice and speed. */
export async function retakeFlagged(): Promise<void> {
  const s = batchStore.get()
  if (!s.job || !s.sent || isRetaking(s)) return
  batchStore.set((x) => ({ ...x, retakeError: null }))
  try {
    const job = await api.retakeFlagged(s.job.id, s.sent.voice, s.sent.speed)
    batchStore.set((x) => ({
      ...x,
      retake: { job, status: x.retake?.job.id === job.id ? x.retake.status : job.status },
    }))
  } catch (retakeError) {
    batchStore.set((x) => ({ ...x, retakeError }))
  }
}

export const isRetaking = (s: Pick<BatchState, 'retake'>) =>
  s.retake != null && (s.retake.status === 'queued' || s.retake.status === 'running')

function applyRetake(e: RuntimeEvent): void {
  if (e.type === 'job_started') {
    batchStore.set((s) => (s.retake ? { ...s, retake: { ...s.retake, status: 'running' } } : s))
  } else if (e.type === 'job_finished') {
    batchStore.set((s) => ({
      ...s,
      retake: s.retake ? { ...s.retake, status: e.status } : null,
      retakeError: e.error ? jobError(e.error) : null,
    }))
    void loadChecks()
  }
}

function apply(e: RuntimeEvent): void {
  switch (e.type) {
    case 'job_started':
      batchStore.set((s) => ({ ...s, status: 'running' }))
      break
    case 'job_progress':
      batchStore.set((s) => ({
        ...s,
        status: s.status === 'queued' ? 'running' : s.status,
        etaSeconds: e.eta_seconds,
      }))
      break
    case 'batch_line_done':
      batchStore.set((s) => ({
        ...s,
        status: s.status === 'queued' ? 'running' : s.status,
        done: { ...s.done, [e.line]: { file: e.file, seconds: e.seconds } },
      }))
      break
    case 'job_finished':
      batchStore.set((s) => ({
        ...s,
        status: e.status,
        job: s.job ? { ...s.job, status: e.status, error: e.error } : s.job,
        error: e.error,
        cancelling: false,
        etaSeconds: null,
      }))
      if (e.status === 'done') void loadChecks()
      break
    default:
      break
  }
}

export function handleBatchEvent(e: RuntimeEvent): void {
  if (!('job_id' in e) || typeof e.job_id !== 'number') return
  const s = batchStore.get()
  if (s.job && e.job_id === s.job.id) apply(e)
  else if (s.retake && e.job_id === s.retake.job.id) applyRetake(e)
  else if (s.starting && !s.job) early.hold(e)
}

export function useBatch(): BatchState {
  return useStore(batchStore)
}

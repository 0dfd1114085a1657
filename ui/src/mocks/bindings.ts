// Stand-in for the generated bindings (vite --mode mock). Commands answer from the
// recordings of the real commands (fixtures.ts) and keep a little state so flows work
// end to end: queued jobs replay the recorded event stream of the jfk.wav job; downloads
// are SYNTHESISED (no model hub is reachable in tests): progress events every 100 ms
// until the catalog size is reached, then the model is installed.

import type {
  commands as RealCommands,
  events as RealEvents,
  ExportFormat,
  Job,
  ModelInfo,
  SearchHit,
  Settings,
  Theme,
  TranscribeOptions,
  TranscriptView,
} from '../bindings'
import type { RuntimeEvent } from '../lib/events'
import { emit, listen, RUNTIME_EVENT, type MockEvent } from './bus'
import { logCall, mock, sleep } from './control'
import {
  recordedEvents,
  recordedExports,
  recordedJobList,
  recordedJobs,
  recordedModels,
  recordedPeaks,
  recordedSearch,
  recordedSettings,
  recordedTranscript,
} from './fixtures'

type AppError = { kind: string; message: string }
type Result<T> = { status: 'ok'; data: T } | { status: 'error'; error: AppError }

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T
const ok = <T>(data: T): Result<T> => ({ status: 'ok', data })
const err = <T>(kind: string, message: string): Result<T> => ({ status: 'error', error: { kind, message } })
const basename = (p: string) =>
  p
    .replace(/[\\/]+$/, '')
    .split(/[\\/]/)
    .pop() ?? p

const state = {
  models: clone(recordedModels),
  jobs: clone(recordedJobList),
  settings: clone(recordedSettings) as Settings,
  openedTaken: false,
  downloads: new Map<string, { cancel: () => void }>(),
  cancelledJobs: new Set<number>(),
  deleted: new Set<number>(),
}

/** The job id the recordings were made with. */
const recordedJobId: number =
  recordedJobs[0]?.id ??
  (recordedEvents.find((e) => e.payload.type === 'job_queued')?.payload as { job?: Job } | undefined)?.job?.id ??
  recordedTranscript.record.job_id ??
  1

let nextJobId = Math.max(recordedJobId, 0, ...state.jobs.map((j) => j.id)) + 1

function emitRuntime(payload: RuntimeEvent) {
  emit(RUNTIME_EVENT, payload)
}

// ---------- jobs ----------

let queueTail: Promise<void> = Promise.resolve()

function setJob(id: number, patch: Partial<Job>) {
  state.jobs = state.jobs.map((j) => (j.id === id ? { ...j, ...patch } : j))
}

function remap(payload: RuntimeEvent, job: Job): RuntimeEvent {
  const p = clone(payload) as RuntimeEvent & { job_id?: number; job?: Job }
  if (p.job_id === recordedJobId) p.job_id = job.id
  if (p.type === 'job_queued') return { ...p, job } as RuntimeEvent
  return p as RuntimeEvent
}

async function play(job: Job): Promise<void> {
  const recordedMeta = recordedJobList.find((j) => j.id === recordedJobId)
  for (const { delayMs, payload } of recordedEvents) {
    if (payload.type === 'job_queued') continue
    await sleep(delayMs == null ? mock.config.jobStepMs : Math.min(Math.max(delayMs, 60), 800))
    if (state.cancelledJobs.has(job.id) || state.deleted.has(job.id)) return
    const p = remap(payload, job)
    if (p.type === 'job_started') setJob(job.id, { status: 'running', started_at: Date.now() })
    if (p.type === 'job_progress') setJob(job.id, { progress: p.progress })
    if (p.type === 'job_finished') {
      setJob(job.id, {
        status: p.status,
        error: p.error,
        progress: p.status === 'done' ? 1 : job.progress,
        finished_at: Date.now(),
        output: recordedMeta?.output ?? null,
        metrics: recordedMeta?.metrics ?? {
          audio_seconds: recordedTranscript.record.duration,
          processing_seconds: (recordedTranscript.record.rtf ?? 0.1) * recordedTranscript.record.duration,
          rtf: recordedTranscript.record.rtf,
          tokens: null,
        },
      })
    }
    emitRuntime(p)
  }
}

function newJob(path: string, options: TranscribeOptions): Job {
  const template = recordedJobs[0]
  return {
    ...(template ? clone(template) : ({} as Job)),
    id: nextJobId++,
    kind: 'transcribe',
    status: 'queued',
    model_id: options.model_id ?? state.settings.default_transcribe_model ?? template?.model_id ?? null,
    input: path,
    output: null,
    params: { ...options } as unknown as Job['params'],
    error: null,
    progress: 0,
    metrics: { audio_seconds: null, processing_seconds: null, rtf: null, tokens: null },
    created_at: Date.now(),
    started_at: null,
    finished_at: null,
  }
}

function transcriptFor(jobId: number): TranscriptView | null {
  if (state.deleted.has(jobId)) return null
  if (jobId === recordedTranscript.record.job_id) return clone(recordedTranscript)
  const job = state.jobs.find((j) => j.id === jobId)
  if (!job || job.status !== 'done') return null
  const view = clone(recordedTranscript)
  if (jobId !== recordedTranscript.record.job_id) {
    view.record = {
      ...view.record,
      id: 1000 + jobId,
      job_id: jobId,
      title: basename(job.input),
      source_path: job.input,
    }
  }
  return view
}

// ---------- downloads (synthesised) ----------

function download(id: string): Promise<Result<ModelInfo>> {
  const model = state.models.find((m) => m.id === id)
  if (!model) return Promise.resolve(err('not_found', `No model ${id} in the catalog.`))
  if (state.downloads.has(id)) return Promise.resolve(err('invalid', `${model.name} is already downloading.`))
  const total = model.size_bytes || 100_000_000
  const steps = Math.max(5, Math.round(mock.config.downloadMs / 100))
  const failure = mock.config.failDownloads[id]
  return new Promise((resolve) => {
    let step = 0
    let stopped = false
    const files = ['config.json', 'tokenizer.json', 'model.bin']
    const timer = setInterval(() => {
      if (stopped) return
      step++
      const downloaded = Math.min(total, Math.round((total * step) / steps))
      const elapsed = (step * 100) / 1000
      const rate = downloaded / elapsed
      if (failure && step >= Math.ceil(steps / 3)) {
        stopped = true
        clearInterval(timer)
        state.downloads.delete(id)
        resolve(err(failure.kind, failure.message))
        return
      }
      const done = downloaded >= total
      emitRuntime({
        type: 'download',
        model_id: id,
        file: files[Math.min(files.length - 1, Math.floor((step / steps) * files.length))],
        downloaded,
        total,
        bytes_per_second: rate,
        eta_seconds: step < 3 ? null : (total - downloaded) / rate,
        done,
      } as RuntimeEvent)
      if (done) {
        stopped = true
        clearInterval(timer)
        state.downloads.delete(id)
        const installed: ModelInfo = {
          ...model,
          status: 'installed',
          disk_bytes: total,
          path: `${state.settings.hf_cache_dir}/models--${id}`,
        }
        state.models = state.models.map((m) => (m.id === id ? installed : m))
        resolve(ok(installed))
      }
    }, 100)
    state.downloads.set(id, {
      cancel: () => {
        stopped = true
        clearInterval(timer)
        state.downloads.delete(id)
        resolve(err('cancelled', 'The download was cancelled.'))
      },
    })
  })
}

// ---------- search ----------

function search(text: string, limit: number): SearchHit[] {
  const q = text.trim().toLowerCase()
  if (!q) return []
  const recorded = recordedSearch.hits.filter((h) => {
    const marked = [...h.snippet.matchAll(/\[([^\]]*)\]/g)].map((m) => m[1].toLowerCase())
    return (recordedSearch.query ?? '').toLowerCase() === q || marked.some((m) => m.startsWith(q) || q.startsWith(m))
  })
  const alive = (h: SearchHit) => h.job_id == null || !state.deleted.has(h.job_id)
  if (recorded.length) return recorded.filter(alive).slice(0, limit)
  // Other words: look them up in the recorded transcript, marked like the FTS snippet.
  const esc = q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const re = new RegExp(`(${esc})`, 'gi')
  return recordedTranscript.segments
    .filter((s) => s.text.toLowerCase().includes(q))
    .map((s) => ({
      transcript_id: recordedTranscript.record.id,
      job_id: recordedTranscript.record.job_id,
      title: recordedTranscript.record.title,
      segment_idx: s.idx,
      start: s.start,
      end: s.end,
      snippet: s.text.trim().replace(re, '[$1]'),
    }))
    .filter(alive)
    .slice(0, limit)
}

// ---------- commands ----------

function cmd<A extends unknown[], T>(name: string, fn: (...args: A) => Promise<Result<T>> | Result<T>) {
  return async (...args: A): Promise<Result<T>> => {
    logCall(name, args)
    await sleep(15)
    return fn(...args)
  }
}

export const commands = {
  listModels: cmd('listModels', () => ok(clone(state.models))),
  downloadModel: cmd('downloadModel', (id: string) => download(id)),
  cancelDownload: cmd('cancelDownload', (id: string) => {
    state.downloads.get(id)?.cancel()
    return ok(null)
  }),
  removeModel: cmd('removeModel', (id: string) => {
    const m = state.models.find((x) => x.id === id)
    if (!m) return err<number>('not_found', `No model ${id}.`)
    const freed = m.disk_bytes
    state.models =
      m.source.kind === 'local'
        ? state.models.filter((x) => x.id !== id)
        : state.models.map((x) => (x.id === id ? { ...x, status: 'not_installed', disk_bytes: 0, path: null } : x))
    if (state.settings.default_transcribe_model === id) state.settings.default_transcribe_model = null
    return ok(freed)
  }),
  importModel: cmd('importModel', (path: string, name: string | null) => {
    const template = state.models.find((m) => m.task === 'transcribe') ?? recordedModels[0]
    const id = `local-${basename(path)
      .toLowerCase()
      .replace(/[^a-z0-9.-]+/g, '-')}`
    const model: ModelInfo = {
      ...clone(template),
      id,
      name: name ?? basename(path),
      source: { kind: 'local', imported_from: path },
      status: 'installed',
      path,
      disk_bytes: template.size_bytes,
      description: 'Imported from a folder on this computer.',
    }
    state.models = [...state.models.filter((m) => m.id !== id), model]
    return ok(model)
  }),
  transcribeFiles: cmd('transcribeFiles', (paths: string[], options: TranscribeOptions) => {
    if (!state.models.some((m) => m.task === 'transcribe' && m.status === 'installed')) {
      return err<Job[]>('model', 'No transcription model is installed.')
    }
    const jobs = paths.map((p) => newJob(p, options))
    state.jobs = [...state.jobs, ...jobs]
    setTimeout(() => {
      for (const job of jobs) emitRuntime({ type: 'job_queued', job: clone(job) } as RuntimeEvent)
      for (const job of jobs) queueTail = queueTail.then(() => play(job))
    }, 0)
    return ok(clone(jobs))
  }),
  cancelJob: cmd('cancelJob', (jobId: number) => {
    const job = state.jobs.find((j) => j.id === jobId)
    if (!job) return err<null>('not_found', `No job ${jobId}.`)
    if (job.status === 'queued' || job.status === 'running') {
      state.cancelledJobs.add(jobId)
      setJob(jobId, { status: 'cancelled', finished_at: Date.now() })
      setTimeout(
        () => emitRuntime({ type: 'job_finished', job_id: jobId, status: 'cancelled', error: null } as RuntimeEvent),
        30,
      )
    }
    return ok(null)
  }),
  listJobs: cmd('listJobs', (filter: { kind: string | null; status: string | null; limit: number; offset: number }) => {
    let list = state.jobs.filter((j) => !state.deleted.has(j.id))
    if (filter.kind) list = list.filter((j) => j.kind === filter.kind)
    if (filter.status) list = list.filter((j) => j.status === filter.status)
    list = [...list].sort((a, b) => b.created_at - a.created_at || b.id - a.id)
    const end = filter.limit < 0 ? undefined : filter.offset + filter.limit
    return ok(clone(list.slice(filter.offset, end)))
  }),
  deleteJob: cmd('deleteJob', (jobId: number) => {
    state.deleted.add(jobId)
    state.jobs = state.jobs.filter((j) => j.id !== jobId)
    return ok(null)
  }),
  getTranscript: cmd('getTranscript', (jobId: number) => ok(transcriptFor(jobId))),
  searchTranscripts: cmd('searchTranscripts', (text: string, limit: number) => ok(search(text, limit))),
  exportTranscript: cmd('exportTranscript', (jobId: number, format: ExportFormat, path: string | null) => {
    if (!transcriptFor(jobId)) return err<string>('not_found', `Job ${jobId} has no transcript.`)
    const text = recordedExports[format] ?? recordedTranscript.segments.map((s) => s.text.trim()).join('\n')
    return ok(path ?? text)
  }),
  audioPeaks: cmd('audioPeaks', (_path: string, buckets: number) => {
    const src = recordedPeaks
    if (!src.length || buckets <= 0) return ok([])
    const out = Array.from({ length: buckets }, (_, i) => {
      const a = Math.floor((i / buckets) * src.length)
      const b = Math.max(a + 1, Math.floor(((i + 1) / buckets) * src.length))
      let m = 0
      for (let j = a; j < b && j < src.length; j++) m = Math.max(m, src[j])
      return m
    })
    return ok(out)
  }),
  getSettings: cmd('getSettings', () => ok(clone(state.settings))),
  setDefaultModel: cmd('setDefaultModel', (id: string | null) => {
    state.settings.default_transcribe_model = id
    return ok(null)
  }),
  setTheme: cmd('setTheme', (theme: Theme) => {
    state.settings.theme = theme
    return ok(null)
  }),
  takeOpenedFiles: cmd('takeOpenedFiles', () => {
    if (state.openedTaken) return ok<string[]>([])
    state.openedTaken = true
    return ok([...mock.config.openedFiles])
  }),
} as unknown as typeof RealCommands

function eventObj<T>(name: string) {
  return {
    listen: (cb: (e: MockEvent<T>) => void) => Promise.resolve(listen(name, cb as (e: MockEvent<unknown>) => void)),
    once: (cb: (e: MockEvent<T>) => void) => {
      const off = listen(name, (e) => {
        off()
        cb(e as MockEvent<T>)
      })
      return Promise.resolve(off)
    },
    emit: (payload: T) => {
      emit(name, payload)
      return Promise.resolve()
    },
  }
}

export const events = {
  runtimeEvent: eventObj<RuntimeEvent>(RUNTIME_EVENT),
} as unknown as typeof RealEvents

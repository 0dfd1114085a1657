// Stand-in for the generated bindings (vite --mode mock). Commands answer from the
// recordings of the real commands (fixtures.ts) and keep a little state so flows work
// end to end: queued jobs replay the recorded event stream of the jfk.wav job; downloads
// are SYNTHESISED (no model hub is reachable in tests): progress events every 100 ms
// until the catalog size is reached, then the model is installed. Chat is SYNTHESISED
// too: a typed reply streams a few words at a time; hands-free voice chat plays one
// scripted turn (listening, levels, speech, heard, reply, turn done) then listens until
// stopped; push-to-talk plays that turn for each hold of setTalking(true) … (false).
// The API server's switch is SYNTHESISED: it "listens" on the port asked, but one below
// 1024 is refused as Linux refuses it to a user.
// Dictation is SYNTHESISED too: the recorded transcript's words come as partial text a
// word at a time, each segment final at its end, then it listens until stopped.
// Cloning and designing voices are SYNTHESISED (no Qwen3-TTS model can be installed here
// to record them): they check what the runtime checks first (an installed Qwen3-TTS model,
// a name, a description or a recording) and add the voice as addVoice does. With
// `qwen3Models` a Base and a VoiceDesign import are installed. A voice sample is
// SYNTHESISED from the recorded jfk.wav job: a recording sends levels until stopped and
// is that file's length and peaks; Whisper hears the recorded transcript.
// A batch's Whisper check is SYNTHESISED: with a Whisper model installed each line is heard
// as written, except the `flaggedLines`, heard without their last word (so flagged) until
// a re-take, which plays as a short job.

import type { Channel } from '@tauri-apps/api/core'
import type { EventCallback, UnlistenFn } from '@tauri-apps/api/event'
import {
  END_SILENCE_MS_RANGE,
  VOICE_LIMITS,
  VOICE_NAME_MAX_CHARS,
  type ApiServerSettings,
  type ApiServerStatus,
  type AppError,
  type commands as RealCommands,
  type ErrorKind,
  type events as RealEvents,
  type BatchLine,
  type ChatEvent,
  type ChatRecord,
  type ChatSent,
  type ChatSettings,
  type ClonedVoice,
  type DictateEvent,
  type ManifestRow,
  type Qwen3Variant,
  type SampleTranscript,
  type VoiceSample,
  type VoiceSampleEvent,
  type MessageRecord,
  type MessageRole,
  type ExportFormat,
  type Job,
  type JobDetail,
  type JobFilter,
  type ModelInfo,
  type Choice,
  type QueuedFiles,
  type RemoteInfo,
  type SearchHit,
  type SegmentRecord,
  type Settings,
  type Theme,
  type TranscribeOptions,
  type TranscriptView,
  type VoiceInfo,
  type VoiceSettings,
  type VoiceSource,
} from '../bindings'
import type { RuntimeEvent } from '../lib/events'
import { emit, listen, CHAT_EVENT, DICTATE_EVENT, FILES_OPENED_EVENT, RUNTIME_EVENT, VOICE_SAMPLE_EVENT } from './bus'
import { encodeSpeechAudio } from './speechFrames'
import { logCall, mock, sleep } from './control'
import {
  audioDevices,
  chatModelFile,
  chatModelTemplate,
  chatReply,
  voiceTurn,
  recordedAddedVoice,
  recordedBatchEvents,
  recordedBatchJob,
  recordedLinesCsv,
  recordedLinesTxt,
  recordedPreview,
  recordedSpeakEvents,
  recordedSpeakJob,
  recordedVoices,
  type TimedEvent,
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

// The constants the UI reads from the bindings are the real ones.
export { END_SILENCE_MS_RANGE, MAX_MEDIA_FILES, VOICE_LIMITS, VOICE_NAME_MAX_CHARS } from '../bindings'

type Result<T> = { status: 'ok'; data: T } | { status: 'error'; error: AppError }

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T
const ok = <T>(data: T): Result<T> => ({ status: 'ok', data })
const err = <T>(kind: ErrorKind, message: string): Result<T> => ({ status: 'error', error: { kind, message } })
const basename = (p: string) =>
  p
    .replace(/[\\/]+$/, '')
    .split(/[\\/]/)
    .pop() ?? p

/** The synthesised Qwen3-TTS imports and their variants (`qwen3Models`). */
const qwen3Imports: { model: ModelInfo; variant: Qwen3Variant }[] = [
  { id: 'local/qwen3-tts-base', name: 'Qwen3-TTS 0.6B Base', variant: 'base' as const },
  { id: 'local/qwen3-tts-design', name: 'Qwen3-TTS 1.7B VoiceDesign', variant: 'voice_design' as const },
].map(({ id, name, variant }) => ({
  variant,
  model: {
    ...clone(chatModelTemplate),
    id,
    name,
    family: 'qwen3_tts',
    task: 'speak',
    source: { kind: 'local', imported_from: `/home/user/Models/${id.slice(6)}` },
    languages: ['en', 'zh'],
    description: 'Text to speech (Qwen3-TTS) imported from a local folder',
  },
}))

const state = {
  models: [...clone(recordedModels), ...(mock.config.qwen3Models ? qwen3Imports.map((q) => clone(q.model)) : [])],
  jobs: clone(recordedJobList),
  settings: clone(recordedSettings) as Settings,
  openedTaken: false,
  downloads: new Map<string, { cancel: () => void }>(),
  cancelledJobs: new Set<number>(),
  deleted: new Set<number>(),
  voices: clone(recordedVoices),
  /** Corrected segments, by transcript id and segment idx. */
  edits: new Map<string, SegmentRecord>(),
  apiServer: { settings: { host: '127.0.0.1', port: 8080, api_key: null }, url: null } as ApiServerStatus,
  remote: null as RemoteInfo | null,
}

/** The job id the recordings were made with. */
const recordedJobId: number = recordedJobs[0].id

let nextJobId = Math.max(recordedJobId, recordedSpeakJob.id, recordedBatchJob.id, 0, ...state.jobs.map((j) => j.id)) + 1
let nextVoiceId = Math.max(recordedAddedVoice.id, 0, ...state.voices.map((v) => v.id)) + 1

function emitRuntime(payload: RuntimeEvent) {
  emit(RUNTIME_EVENT, payload)
}

/** The channel the page opened for speech audio (streamSpeechAudio). */
let speechAudio: Channel<ArrayBuffer> | null = null

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
    await sleep(Math.min(Math.max(delayMs, 60), 800))
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
    params: { ...options },
    error: null,
    progress: 0,
    metrics: { audio_seconds: null, processing_seconds: null, rtf: null, tokens: null },
    created_at: Date.now(),
    started_at: null,
    finished_at: null,
  }
}

function withEdits(view: TranscriptView): TranscriptView {
  view.segments = view.segments.map((s) => state.edits.get(`${view.record.id}:${s.idx}`) ?? s)
  return view
}

function transcriptFor(jobId: number): TranscriptView | null {
  if (state.deleted.has(jobId)) return null
  if (jobId === recordedTranscript.record.job_id) return withEdits(clone(recordedTranscript))
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
  return withEdits(view)
}

/** Like the runtime's job_detail, from what the mock knows of the job. */
function detailFor(jobId: number): JobDetail | null {
  const job = state.jobs.find((j) => j.id === jobId)
  if (!job || state.deleted.has(jobId)) return null
  const params = (job.params ?? {}) as { voice?: string; text?: string; speed?: number | null; lines?: string[] }
  const voice = findVoice(params.voice ?? '')
  const speed = params.speed ?? null
  const used = {
    requested: params.voice ?? '',
    name: voice?.name ?? null,
    model_id: job.model_id,
    settings: {
      ...(voice?.settings ?? { speed: 1, pitch: 0, noise_scale: null, noise_w: null, speaker: null }),
      ...(speed != null ? { speed } : {}),
    },
    speed,
  }
  if (job.kind === 'transcribe') {
    const view = transcriptFor(jobId)
    return { kind: 'transcript', job: clone(job), transcript: view?.record ?? null, segments: view?.segments ?? [] }
  }
  if (job.kind === 'speak') {
    return {
      kind: 'speech',
      job: clone(job),
      text: params.text ?? job.input,
      text_complete: true,
      text_file: null,
      voice: used,
      audio_path: job.output,
      audio_exists: job.output != null,
    }
  }
  const lines = params.lines ?? []
  const dir = job.output ?? job.input
  const made = Math.round(job.progress * lines.length)
  const width = Math.max(3, String(lines.length).length)
  const sample = recordedBatchEvents.find((e) => e.payload.type === 'batch_line_done')?.payload
  const seconds = sample && sample.type === 'batch_line_done' ? sample.seconds : 1
  return {
    kind: 'batch',
    job: clone(job),
    voice: used,
    output_dir: dir,
    manifest_path: made ? `${dir}/manifest.csv` : null,
    lines: lines.map((text, i): BatchLine =>
      i < made
        ? { line: i + 1, text, file: `${dir}/${String(i + 1).padStart(width, '0')}.wav`, seconds, status: 'made' }
        : { line: i + 1, text, file: null, seconds: null, status: 'not_made' },
    ),
  }
}

function editSegment(transcriptId: number, idx: number, text: string | null): Result<SegmentRecord> {
  const view = [recordedTranscript, ...state.jobs.map((j) => transcriptFor(j.id))].find(
    (v) => v?.record.id === transcriptId,
  )
  if (!view) return err('not_found', `transcript ${transcriptId} does not exist`)
  const segment = withEdits(clone(view)).segments.find((s) => s.idx === idx)
  if (!segment) return err('not_found', `segment ${idx} does not exist`)
  const original = segment.original ?? segment.text
  const key = `${transcriptId}:${idx}`
  if (text == null || text.trim() === original) {
    state.edits.delete(key)
    return ok({ ...segment, text: original, original: null })
  }
  if (!text.trim()) return err('invalid', 'a segment cannot be empty: type its words, or revert it to what was heard')
  const edited = { ...segment, text: text.trim(), original }
  state.edits.set(key, edited)
  return ok(clone(edited))
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
    return recordedSearch.query.toLowerCase() === q || marked.some((m) => m.startsWith(q) || q.startsWith(m))
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

// ---------- voices and speech ----------

/** Like the runtime: every installed Piper model gets a preset voice; `installed` follows the model. */
function voices(): VoiceInfo[] {
  for (const m of state.models) {
    if (m.family === 'piper' && m.status === 'installed' && !state.voices.some((v) => v.model_id === m.id)) {
      state.voices.push({
        ...clone(recordedVoices[0] ?? recordedAddedVoice),
        id: nextVoiceId++,
        name: m.name,
        source: 'preset',
        model_id: m.id,
        language: m.languages[0] ?? null,
        installed: true,
        settings: { speed: 1, noise_scale: null, noise_w: null, pitch: 0, speaker: null },
      })
    }
  }
  state.voices = state.voices.map((v) => {
    const m = state.models.find((x) => x.id === v.model_id)
    return { ...v, installed: m?.status === 'installed' }
  })
  return state.voices
}

/** Adds a Qwen3-TTS voice to the library and returns a copy of it. */
function qwen3Voice(name: string, source: VoiceSource, model: ModelInfo, extra: Partial<VoiceInfo>): VoiceInfo {
  const voice: VoiceInfo = {
    ...clone(recordedAddedVoice),
    id: nextVoiceId++,
    name,
    source,
    model_id: model.id,
    language: model.languages[0] ?? null,
    installed: true,
    settings: {},
    ...extra,
  }
  state.voices.push(voice)
  return clone(voice)
}

function voiceName(name: string): string | null {
  const n = name.split(/\s+/).filter(Boolean).join(' ')
  return n && n.length <= VOICE_NAME_MAX_CHARS ? n : null
}

const within = ([lo, hi]: readonly [number, number], v: number) => v >= lo && v <= hi

/** Settings outside the runtime's ranges (VOICE_LIMITS, from the bindings) are refused. */
function settingsError(settings: VoiceSettings): string | null {
  const s = { speed: 1, pitch: 0, ...settings }
  const { speed, pitch, noise } = VOICE_LIMITS
  if (!within(speed, s.speed)) return `speed must be ${speed[0]} to ${speed[1]}, not ${s.speed}`
  if (!within(pitch, s.pitch)) return `pitch must be ${pitch[0]} to ${pitch[1]} semitones, not ${s.pitch}`
  for (const [name, v] of [
    ['noise scale', s.noise_scale],
    ['noise w', s.noise_w],
  ] as const) {
    if (v != null && !within(noise, v)) return `${name} must be ${noise[0]} to ${noise[1]}, not ${v}`
  }
  return null
}

function findVoice(spec: string): VoiceInfo | undefined {
  const all = voices()
  return all.find((v) => String(v.id) === spec) ?? all.find((v) => v.name.toLowerCase() === spec.toLowerCase())
}

function speechJob(template: Job, kind: Job['kind'], voice: VoiceInfo, input: string, params: unknown): Job {
  return {
    ...clone(template),
    id: nextJobId++,
    kind,
    status: 'queued',
    model_id: voice.model_id,
    input,
    output: null,
    params: params as Job['params'],
    error: null,
    progress: 0,
    metrics: { audio_seconds: null, processing_seconds: null, rtf: null, tokens: null },
    created_at: Date.now(),
    started_at: null,
    finished_at: null,
  }
}

const stepDelay = (e: TimedEvent) => Math.min(Math.max(e.delayMs, 60), 800)

/** Replays a recorded speak job's events for `job`. */
async function playSpeech(job: Job): Promise<void> {
  const recordedId = recordedSpeakJob.id
  let seconds = 0
  for (const e of recordedSpeakEvents) {
    if (e.payload.type === 'job_queued') continue
    await sleep(stepDelay(e))
    if (state.cancelledJobs.has(job.id) || state.deleted.has(job.id)) return
    const p = clone(e.payload) as RuntimeEvent & { job_id?: number }
    if (p.job_id !== recordedId) continue
    p.job_id = job.id
    if (p.type === 'job_started') setJob(job.id, { status: 'running', started_at: Date.now() })
    if (p.type === 'speech_audio') {
      // As the app does: the samples go over the channel as binary, not as an event.
      seconds += p.samples.length / p.sample_rate
      speechAudio?.onmessage(encodeSpeechAudio(p))
      continue
    }
    if (p.type === 'job_finished') {
      setJob(job.id, {
        status: p.status,
        error: p.error,
        progress: 1,
        finished_at: Date.now(),
        output: recordedSpeakJob.output ?? `${state.settings.data_dir}/audio/speech-${job.id}.wav`,
        metrics: { audio_seconds: seconds, processing_seconds: null, rtf: null, tokens: null },
      })
    }
    emitRuntime(p as RuntimeEvent)
  }
}

/** A batch of `lines`: the recorded batch's pace and line lengths, one event per line asked for. */
/** Lines of batches re-taken, as `jobId:line`. */
const retaken = new Set<string>()

/** A finished batch's manifest rows, with the synthesised Whisper check. */
function batchRows(job: Job): ManifestRow[] {
  const lines = (job.params as { lines?: string[] } | null)?.lines ?? []
  const whisper = state.models.some((m) => m.family === 'whisper' && m.status === 'installed')
  const width = Math.max(3, String(lines.length).length)
  return lines.map((text, i) => {
    const line = i + 1
    const words = text.split(/\s+/)
    const missed = mock.config.flaggedLines.includes(line) && !retaken.has(`${job.id}:${line}`) && words.length > 1
    return {
      line,
      file: `${String(line).padStart(width, '0')}.wav`,
      seconds: 1,
      text,
      seed: retaken.has(`${job.id}:${line}`) ? 1 : 0,
      transcript: whisper ? (missed ? words.slice(0, -1).join(' ') : text) : null,
      wer: whisper ? (missed ? 1 / words.length : 0) : null,
      flagged: whisper && missed,
    }
  })
}

async function playBatch(job: Job, lines: string[], dir: string): Promise<void> {
  const recordedId = recordedBatchJob.id
  const own = recordedBatchEvents.filter((e) => (e.payload as { job_id?: number }).job_id === recordedId)
  const started = own.find((e) => e.payload.type === 'job_started')
  const done = own.filter((e) => e.payload.type === 'batch_line_done')
  const finished = own.find((e) => e.payload.type === 'job_finished')
  const width = Math.max(3, String(lines.length).length)
  const t0 = Date.now()
  await sleep(started ? stepDelay(started) : mock.config.jobStepMs)
  if (state.cancelledJobs.has(job.id)) return
  setJob(job.id, { status: 'running', started_at: Date.now() })
  emitRuntime({ type: 'job_started', job_id: job.id } as RuntimeEvent)
  for (let line = 0; line < lines.length; line++) {
    const sample = done.length ? done[line % done.length] : null
    await sleep(sample ? stepDelay(sample) : mock.config.jobStepMs)
    if (state.cancelledJobs.has(job.id) || state.deleted.has(job.id)) return
    const seconds = sample && sample.payload.type === 'batch_line_done' ? sample.payload.seconds : 1
    const file = `${dir.replace(/[\\/]+$/, '')}/${String(line + 1).padStart(width, '0')}.wav`
    emitRuntime({ type: 'batch_line_done', job_id: job.id, line, file, seconds } as RuntimeEvent)
    const n = line + 1
    const elapsed = (Date.now() - t0) / 1000
    setJob(job.id, { progress: n / lines.length })
    emitRuntime({
      type: 'job_progress',
      job_id: job.id,
      progress: n / lines.length,
      windows_done: n,
      windows_total: lines.length,
      eta_seconds: (elapsed / n) * (lines.length - n),
    } as RuntimeEvent)
  }
  await sleep(finished ? stepDelay(finished) : 60)
  if (state.cancelledJobs.has(job.id)) return
  setJob(job.id, { status: 'done', progress: 1, finished_at: Date.now(), output: dir })
  emitRuntime({ type: 'job_finished', job_id: job.id, status: 'done', error: null } as RuntimeEvent)
}

const batchDirs = new Set<string>()

// ---------- dictation (synthesised) ----------

/** The dictation under way: one at a time, as in the app. */
let dictation: { stopped: boolean; done: Promise<void> } | null = null

function emitDictate(payload: DictateEvent) {
  emit(DICTATE_EVENT, payload)
}

/** Speaks the recorded transcript's segments a word at a time, then listens until stopped. */
async function dictate(jobId: number, activity: { stopped: boolean }): Promise<void> {
  const finals: string[] = []
  emitDictate({ type: 'listening', input: audioDevices.inputs[0].name, job_id: jobId })
  for (const segment of recordedTranscript.segments) {
    const words = segment.text.trim().split(/\s+/)
    for (let n = 1; n <= words.length && !activity.stopped; n++) {
      await sleep(mock.config.chatStepMs)
      if (n < words.length) emitDictate({ type: 'partial', text: words.slice(0, n).join(' ') })
    }
    // Stopped or not, what was heard of the segment becomes final.
    finals.push(segment.text.trim())
    emitDictate({ type: 'final', text: segment.text.trim() })
    if (activity.stopped) break
  }
  while (!activity.stopped) await sleep(mock.config.chatStepMs)
  emitDictate({ type: 'stopped', job_id: jobId, text: finals.join(' '), error: null })
}

// ---------- voice samples (synthesised) ----------

const SAMPLE_SECONDS = recordedTranscript.segments.at(-1)?.end ?? 11
const samplesDir = '/home/user/.local/share/izwi/voice-samples'
let nextSample = 1

function sampleOf(path: string, seconds: number): VoiceSample {
  const peaks = Array.from({ length: 200 }, (_, i) => recordedPeaks[Math.floor((i / 200) * recordedPeaks.length)] ?? 0)
  return { path, seconds, peaks }
}

const sampling = { stopped: true }

async function recordSample(activity: { stopped: boolean }): Promise<void> {
  let t = 0
  while (!activity.stopped) {
    await sleep(mock.config.chatStepMs)
    emit(VOICE_SAMPLE_EVENT, { type: 'level', level: 0.1 + 0.08 * Math.sin(t++) } satisfies VoiceSampleEvent)
  }
  const sample = sampleOf(`${samplesDir}/sample-${nextSample++}.wav`, SAMPLE_SECONDS)
  emit(VOICE_SAMPLE_EVENT, { type: 'stopped', sample, error: null } satisfies VoiceSampleEvent)
}

// ---------- chat (synthesised) ----------

/** The typed reply or voice chat under way: one at a time, as in the app. */
interface ChatActivity {
  chatId: number | null
  stopped: boolean
  /** Push-to-talk: whether the key is held; null when not a push-to-talk voice chat. */
  talking: boolean | null
}

const chats = {
  list: [] as ChatRecord[],
  messages: [] as MessageRecord[],
  settings: withDefaults({}),
  activity: null as ChatActivity | null,
}
let nextChatId = 1
let nextMessageId = 1

/** What the runtime reads from saved settings: each field left out takes its default. */
function withDefaults(s: ChatSettings): Required<ChatSettings> {
  return {
    llm: s.llm ?? null,
    asr: s.asr ?? null,
    voice: s.voice ?? null,
    s2s: s.s2s ?? null,
    input_device: s.input_device ?? null,
    output_device: s.output_device ?? null,
    end_silence_ms: s.end_silence_ms ?? 500,
    barge_in: s.barge_in ?? true,
  }
}

const SYSTEM_PROMPT = 'You are Izwi, a helpful assistant. Answer briefly.'
/** A shorter push-to-talk press takes no turn, as in the runtime. */
const MIN_TALK_MS = 250
const UNDER_WAY = 'a reply or voice chat is under way: stop it first'

function emitChat(payload: ChatEvent) {
  emit(CHAT_EVENT, payload)
}

function addMessage(chatId: number, role: MessageRole, content: string, extra: Partial<MessageRecord> = {}) {
  const message: MessageRecord = {
    id: nextMessageId++,
    chat_id: chatId,
    role,
    content,
    audio_path: null,
    metrics: null,
    created_at: Date.now(),
    ...extra,
  }
  chats.messages.push(message)
  chats.list = chats.list.map((c) => (c.id === chatId ? { ...c, updated_at: message.created_at } : c))
}

/** Like the runtime: a new chat is stored with its first words, titled by them. */
function chatFor(chatId: number | null, firstWords: string): number {
  if (chatId != null) return chatId
  const now = Date.now()
  const chat = {
    id: nextChatId++,
    title: firstWords.slice(0, 60).trim(),
    model_id: chats.settings.llm,
    created_at: now,
    updated_at: now,
  }
  chats.list.push(chat)
  addMessage(chat.id, 'system', SYSTEM_PROMPT)
  return chat.id
}

/** Why chatting cannot start with the settings (the runtime's messages), or null. */
function chatRefusal(chatId: number | null): AppError | null {
  const llm = chats.settings.llm
  if (!llm)
    return { kind: 'model', message: 'choose a chat model first (none installed: import a .gguf chat model in Models)' }
  if (!state.models.some((m) => m.id === llm && m.task === 'chat' && m.status === 'installed')) {
    return { kind: 'model', message: `${llm} is not an installed chat model` }
  }
  if (chatId != null && !chats.list.some((c) => c.id === chatId)) {
    return { kind: 'not_found', message: `chat ${chatId} does not exist` }
  }
  if (chats.activity) return { kind: 'invalid', message: UNDER_WAY }
  return null
}

/** Streams `reply` a word at a time until it ends or is stopped; what was written. */
async function streamReply(reply: string, activity: ChatActivity): Promise<string> {
  let written = ''
  for (const word of reply.match(/\S+\s*/g) ?? []) {
    await sleep(mock.config.chatStepMs)
    if (activity.stopped) break
    written += word
    emitChat({ type: 'reply_text', text: word })
  }
  return written
}

async function sendChat(chatId: number | null, text: string): Promise<Result<ChatSent>> {
  const message = text.trim()
  if (!message) return err('invalid', 'the message is empty')
  const refusal = chatRefusal(chatId)
  if (refusal) return { status: 'error', error: refusal }
  const activity: ChatActivity = { chatId, stopped: false, talking: null }
  chats.activity = activity
  try {
    emitChat({ type: 'thinking' })
    // The model loads before the message is kept: stopped by then, a new chat is not stored.
    await sleep(mock.config.chatStepMs)
    if (activity.stopped && chatId == null) return err('cancelled', 'stopped before the message was kept')
    const id = chatFor(chatId, message)
    activity.chatId = id
    addMessage(id, 'user', message)
    const started = Date.now()
    const reply = chatReply(message)
    const written = await streamReply(reply, activity)
    // Stopped: the reply so far comes back, and is not stored.
    if (activity.stopped) return ok({ chat_id: id, reply: written, stopped: true })
    const total = Date.now() - started
    addMessage(id, 'assistant', reply, {
      metrics: {
        asr_ms: null,
        first_token_ms: mock.config.chatStepMs,
        first_audio_ms: null,
        total_ms: total,
        interrupted: false,
      },
    })
    return ok({ chat_id: id, reply, stopped: false })
  } finally {
    chats.activity = null
  }
}

const deviceName = (list: { id: string; name: string; is_default: boolean }[], id: string | null) =>
  (list.find((d) => d.id === id) ?? list.find((d) => d.is_default) ?? list[0]).name

/** The scripted voice chat: hands-free, one turn; push-to-talk, a turn for each hold. Then
 * it listens (quietly) until stopped. */
async function voiceChat(activity: ChatActivity): Promise<void> {
  const levels = async (values: number[]) => {
    for (const rms of values) {
      await sleep(mock.config.chatStepMs)
      if (activity.stopped) return false
      emitChat({ type: 'level', rms })
    }
    return true
  }
  emitChat({
    type: 'listening',
    chat_id: activity.chatId,
    input: deviceName(audioDevices.inputs, chats.settings.input_device),
    output: deviceName(audioDevices.outputs, chats.settings.output_device),
  })
  if (activity.talking == null) {
    if (await levels([0.004, 0.006, 0.005])) {
      emitChat({ type: 'speech_started' })
      if (await levels([0.08, 0.16, 0.12, 0.1, 0.09])) {
        emitChat({ type: 'speech_ended' })
        await spokenTurn(activity)
      }
    }
  } else {
    while (!activity.stopped) {
      if (!activity.talking) {
        await levels([0.004])
        continue
      }
      emitChat({ type: 'speech_started' })
      const pressed = Date.now()
      // Loud while the key is held.
      while (activity.talking && !activity.stopped) await levels([0.1])
      if (activity.stopped) break
      emitChat({ type: 'speech_ended' })
      if (Date.now() - pressed >= MIN_TALK_MS) await spokenTurn(activity)
    }
  }
  while (!activity.stopped) {
    await sleep(100)
    if (!activity.stopped) emitChat({ type: 'level', rms: 0.003 + Math.random() * 0.004 })
  }
  chats.activity = null
  emitChat({ type: 'stopped', error: null })
}

/** After the user's speech: the words heard and stored, the reply, turn done (unless stopped). */
async function spokenTurn(activity: ChatActivity): Promise<void> {
  await sleep(mock.config.chatStepMs)
  if (activity.stopped) return
  const chatId = chatFor(activity.chatId, voiceTurn.heard)
  activity.chatId = chatId
  emitChat({ type: 'heard', text: voiceTurn.heard })
  const turn = chats.messages.filter((m) => m.chat_id === chatId).length
  addMessage(chatId, 'user', voiceTurn.heard, {
    audio_path: `audio/chat-${chatId}/${String(turn).padStart(3, '0')}-user.wav`,
    metrics: { ...voiceTurn.metrics, first_token_ms: null, first_audio_ms: null, total_ms: null },
  })
  const reply = chatReply(voiceTurn.heard)
  await streamReply(reply, activity)
  if (activity.stopped) return
  addMessage(chatId, 'assistant', reply, {
    audio_path: `audio/chat-${chatId}/${String(turn + 1).padStart(3, '0')}-assistant.wav`,
    metrics: { ...voiceTurn.metrics },
  })
  emitChat({
    type: 'turn_done',
    chat_id: chatId,
    user_text: voiceTurn.heard,
    reply_text: reply,
    metrics: { ...voiceTurn.metrics },
  })
}

function startVoiceChat(chatId: number | null, pushToTalk: boolean): Result<null> {
  const voice = chats.settings.voice ? findVoice(chats.settings.voice) : undefined
  if (!voice?.installed) {
    return err('model', 'choose the voice that answers (Voices has them; none installed: download one in Models)')
  }
  const asr =
    chats.settings.asr ??
    state.settings.default_transcribe_model ??
    state.models.find((m) => m.task === 'transcribe' && m.status === 'installed')?.id
  if (!asr) return err('model', 'no speech-to-text model is installed: download one in Models')
  const refusal = chatRefusal(chatId)
  if (refusal) return { status: 'error', error: refusal }
  const activity: ChatActivity = { chatId, stopped: false, talking: pushToTalk ? false : null }
  chats.activity = activity
  setTimeout(() => void voiceChat(activity), 0)
  return ok(null)
}

function setChatSettings(asked: ChatSettings): Result<null> {
  const settings = withDefaults(asked)
  const [low, high] = END_SILENCE_MS_RANGE
  if (settings.end_silence_ms < low || settings.end_silence_ms > high) {
    return err('invalid', `the end-of-speech pause must be ${low} to ${high} ms, not ${settings.end_silence_ms}`)
  }
  const model = (id: string) => state.models.find((m) => m.id === id && m.status === 'installed')
  if (settings.llm && model(settings.llm)?.task !== 'chat') return err('invalid', `${settings.llm} is not a chat model`)
  if (settings.asr && model(settings.asr)?.task !== 'transcribe') {
    return err('invalid', `${settings.asr} is not a speech-to-text model`)
  }
  chats.settings = settings
  return ok(null)
}

function searchChats(query: string): ChatRecord[] {
  const q = query.trim().toLowerCase()
  const said = (c: ChatRecord) =>
    chats.messages.some((m) => m.chat_id === c.id && m.role !== 'system' && m.content.toLowerCase().includes(q))
  return chats.list
    .filter((c) => !q || c.title.toLowerCase().includes(q) || said(c))
    .sort((a, b) => b.updated_at - a.updated_at || b.id - a.id)
}

// ---------- commands ----------

function cmd<A extends unknown[], T>(name: string, fn: (...args: A) => Promise<Result<T>> | Result<T>) {
  return async (...args: A): Promise<Result<T>> => {
    logCall(name, args)
    await sleep(15)
    return fn(...args)
  }
}

/** What the stand-in dialogs answer for each kind of pick (window.__izwiMock.config). */
function picked(pick: Choice): string[] {
  switch (pick) {
    case 'media_files':
      return mock.config.openFiles ?? [recordedJobs[0]?.input ?? '/home/user/Audio/jfk.wav']
    case 'script':
      return mock.config.openFiles ?? []
    case 'model_file':
      return mock.config.openFiles ?? [chatModelFile]
    default:
      return mock.config.openFolder == null ? [] : [mock.config.openFolder]
  }
}

export const commands = {
  choosePaths: cmd('choosePaths', (pick: Choice) => ok(picked(pick))),
  chooseSavePath: cmd('chooseSavePath', (_title: string, fileName: string, _beside: string | null) =>
    ok<string | null>(mock.config.savePath ?? `/home/user/Documents/${fileName}`),
  ),
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
    // A .gguf is a chat model, as the hub detects it; anything else stands for a Whisper folder.
    const chat = path.toLowerCase().endsWith('.gguf')
    const template = chat ? chatModelTemplate : (state.models.find((m) => m.task === 'transcribe') ?? recordedModels[0])
    const id = `local-${basename(path)
      .toLowerCase()
      .replace(/[^a-z0-9.-]+/g, '-')}`
    const model: ModelInfo = {
      ...clone(template),
      id,
      name: name ?? (chat ? basename(path).replace(/\.gguf$/i, '') : basename(path)),
      source: { kind: 'local', imported_from: path },
      status: 'installed',
      path,
      disk_bytes: template.size_bytes,
      description: chat ? template.description : 'Imported from a folder on this computer.',
    }
    state.models = [...state.models.filter((m) => m.id !== id), model]
    return ok(model)
  }),
  transcribeFiles: cmd('transcribeFiles', (paths: string[], options: TranscribeOptions) => {
    if (!state.models.some((m) => m.task === 'transcribe' && m.status === 'installed')) {
      return err<QueuedFiles>('model', 'No transcription model is installed.')
    }
    const jobs = paths.map((p) => newJob(p, options))
    state.jobs = [...state.jobs, ...jobs]
    setTimeout(() => {
      for (const job of jobs) emitRuntime({ type: 'job_queued', job: clone(job) } as RuntimeEvent)
      for (const job of jobs) queueTail = queueTail.then(() => play(job))
    }, 0)
    return ok<QueuedFiles>({ jobs: clone(jobs), skipped: [], left_out: 0 })
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
  listJobs: cmd('listJobs', (filter: JobFilter) => {
    let list = state.jobs.filter((j) => !state.deleted.has(j.id))
    if (filter.kind) list = list.filter((j) => j.kind === filter.kind)
    if (filter.status) list = list.filter((j) => j.status === filter.status)
    list = [...list].sort((a, b) => b.created_at - a.created_at || b.id - a.id)
    // Omitted fields take the Rust defaults (JobFilter::default: limit 100, offset 0).
    const { limit = 100, offset = 0 } = filter
    const end = limit < 0 ? undefined : offset + limit
    return ok(clone(list.slice(offset, end)))
  }),
  deleteJob: cmd('deleteJob', (jobId: number) => {
    state.deleted.add(jobId)
    state.jobs = state.jobs.filter((j) => j.id !== jobId)
    return ok(null)
  }),
  getTranscript: cmd('getTranscript', (jobId: number) => ok(transcriptFor(jobId))),
  getJobDetail: cmd('getJobDetail', (jobId: number) => {
    const detail = detailFor(jobId)
    return detail ? ok(detail) : err<JobDetail>('not_found', `job ${jobId} does not exist`)
  }),
  editSegment: cmd('editSegment', (transcriptId: number, idx: number, text: string) =>
    editSegment(transcriptId, idx, text),
  ),
  revertSegment: cmd('revertSegment', (transcriptId: number, idx: number) => editSegment(transcriptId, idx, null)),
  searchTranscripts: cmd('searchTranscripts', (text: string, limit: number) => ok(search(text, limit))),
  exportTranscript: cmd('exportTranscript', (jobId: number, format: ExportFormat, path: string | null) => {
    if (!transcriptFor(jobId)) return err<string>('not_found', `Job ${jobId} has no transcript.`)
    const text = recordedExports[format]
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
  getApiServer: cmd('getApiServer', () => ok(clone(state.apiServer))),
  startApiServer: cmd('startApiServer', (settings: ApiServerSettings) => {
    if (state.apiServer.url)
      return err('invalid', `the API is already running at ${state.apiServer.url}: stop it first`)
    state.apiServer.settings = clone(settings)
    const addr = `${settings.host}:${settings.port}`
    if (settings.port < 1024) return err('invalid', `cannot listen on ${addr}: Permission denied (os error 13)`)
    state.apiServer.url = `http://${addr}/v1`
    return ok(clone(state.apiServer))
  }),
  stopApiServer: cmd('stopApiServer', () => {
    state.apiServer.url = null
    return ok(clone(state.apiServer))
  }),
  getRemoteBackend: cmd('getRemoteBackend', () => ok(clone(state.remote))),
  setRemoteBackend: cmd('setRemoteBackend', (url: string | null, key: string | null) => {
    if (url == null) {
      state.remote = null
      return ok(null)
    }
    if (!/^https?:\/\/[^/]+/.test(url)) return err<RemoteInfo | null>('invalid', `"${url}" is not a server's address`)
    const same = state.remote?.url === url.replace(/\/+$/, '')
    state.remote = { url: url.replace(/\/+$/, ''), has_key: key != null || (same && state.remote!.has_key) }
    return ok(clone(state.remote))
  }),
  listVoices: cmd('listVoices', () => ok(clone(voices()))),
  addVoice: cmd('addVoice', (modelId: string, name: string, settings: VoiceSettings) => {
    const model = state.models.find((m) => m.id === modelId)
    if (!model) return err<VoiceInfo>('not_found', `no model ${modelId}`)
    if (model.family !== 'piper') return err<VoiceInfo>('invalid', `${modelId} is not a voice model`)
    const clean = voiceName(name)
    if (!clean) return err<VoiceInfo>('invalid', 'give the voice a name')
    const bad = settingsError(settings)
    if (bad) return err<VoiceInfo>('invalid', bad)
    const voice: VoiceInfo = {
      ...clone(recordedAddedVoice),
      id: nextVoiceId++,
      name: clean,
      source: 'preset',
      model_id: modelId,
      language: model.languages[0] ?? null,
      installed: model.status === 'installed',
      settings: clone(settings),
    }
    state.voices.push(voice)
    return ok(clone(voice))
  }),
  renameVoice: cmd('renameVoice', (id: number, name: string) => {
    const clean = voiceName(name)
    if (!clean) return err<VoiceInfo>('invalid', 'give the voice a name')
    if (!state.voices.some((v) => v.id === id)) return err<VoiceInfo>('not_found', `voice ${id} does not exist`)
    state.voices = state.voices.map((v) => (v.id === id ? { ...v, name: clean } : v))
    return ok(clone(voices().find((v) => v.id === id)!))
  }),
  updateVoiceSettings: cmd('updateVoiceSettings', (id: number, settings: VoiceSettings) => {
    const bad = settingsError(settings)
    if (bad) return err<VoiceInfo>('invalid', bad)
    if (!state.voices.some((v) => v.id === id)) return err<VoiceInfo>('not_found', `voice ${id} does not exist`)
    state.voices = state.voices.map((v) => (v.id === id ? { ...v, settings: clone(settings) } : v))
    return ok(clone(voices().find((v) => v.id === id)!))
  }),
  deleteVoice: cmd('deleteVoice', (id: number) => {
    const voice = voices().find((v) => v.id === id)
    if (!voice) return err<null>('not_found', `voice ${id} does not exist`)
    if (voice.installed && state.voices.filter((v) => v.model_id === voice.model_id).length === 1) {
      return err<null>(
        'invalid',
        `"${voice.name}" is the only voice of model ${voice.model_id}; remove the model to remove it`,
      )
    }
    state.voices = state.voices.filter((v) => v.id !== id)
    return ok(null)
  }),
  cloneVoice: cmd('cloneVoice', (name: string, modelId: string, audio: string, text: string | null) => {
    const model = state.models.find((m) => m.id === modelId && m.status === 'installed')
    if (!model || model.family !== 'qwen3_tts')
      return err<ClonedVoice>('invalid', `${modelId} is not an installed Qwen3-TTS Base model`)
    const clean = voiceName(name)
    if (!clean) return err<ClonedVoice>('invalid', 'give the voice a name')
    if (!audio.trim()) return err<ClonedVoice>('invalid', 'choose a recording to clone')
    const given = text?.trim() || null
    const voice = qwen3Voice(clean, 'cloned', model, { reference_audio: audio, reference_text: given })
    return ok({
      voice,
      transcript: given
        ? { kind: 'given' as const }
        : { kind: 'missing' as const, reason: 'no Whisper model is installed to transcribe the recording' },
    })
  }),
  qwen3Models: cmd('qwen3Models', (variant: Qwen3Variant) =>
    ok(
      qwen3Imports
        .filter(
          (q) => q.variant === variant && state.models.some((m) => m.id === q.model.id && m.status === 'installed'),
        )
        .map((q) => q.model.id),
    ),
  ),
  startVoiceSample: cmd('startVoiceSample', () => {
    if (!sampling.stopped) return err<null>('invalid', 'a sample is being recorded: stop it first')
    sampling.stopped = false
    void recordSample(sampling)
    return ok(null)
  }),
  stopVoiceSample: cmd('stopVoiceSample', () => {
    const was = !sampling.stopped
    sampling.stopped = true
    return ok(was)
  }),
  openVoiceSample: cmd('openVoiceSample', (path: string) => ok(sampleOf(path, SAMPLE_SECONDS))),
  trimVoiceSample: cmd('trimVoiceSample', (_path: string, startS: number, endS: number) => {
    if (!(startS >= 0 && endS <= SAMPLE_SECONDS && startS < endS))
      return err<VoiceSample>(
        'invalid',
        `cannot keep ${startS.toFixed(2)} s to ${endS.toFixed(2)} s of a ${SAMPLE_SECONDS.toFixed(2)} s recording`,
      )
    return ok(sampleOf(`${samplesDir}/sample-${nextSample++}.wav`, endS - startS))
  }),
  transcribeVoiceSample: cmd('transcribeVoiceSample', () => {
    const whisper = state.models.find((m) => m.family === 'whisper' && m.status === 'installed')
    const heard: SampleTranscript = whisper
      ? {
          text: recordedTranscript.segments.map((s) => s.text.trim()).join(' '),
          source: { kind: 'whisper', model_id: whisper.id },
        }
      : { text: null, source: { kind: 'missing', reason: 'no Whisper model is installed to transcribe the recording' } }
    return ok(heard)
  }),
  designVoice: cmd('designVoice', (name: string, modelId: string, description: string) => {
    const model = state.models.find((m) => m.id === modelId && m.status === 'installed')
    if (!model || model.family !== 'qwen3_tts')
      return err<VoiceInfo>('invalid', `${modelId} is not an installed Qwen3-TTS VoiceDesign model`)
    const clean = voiceName(name)
    if (!clean) return err<VoiceInfo>('invalid', 'give the voice a name')
    if (!description.trim()) return err<VoiceInfo>('invalid', 'describe the voice')
    return ok(qwen3Voice(clean, 'designed', model, {}))
  }),
  previewVoice: cmd('previewVoice', async (spec: string) => {
    const voice = findVoice(spec)
    if (!voice) return err<typeof recordedPreview>('invalid', `no voice "${spec}"`)
    await sleep(mock.config.jobStepMs)
    return ok(clone(recordedPreview))
  }),
  speak: cmd('speak', (spec: string, text: string, speed: number | null) => {
    if (!/[\p{L}\p{N}]/u.test(text)) return err<Job>('invalid', 'nothing to say: the text has no words')
    const voice = findVoice(spec)
    if (!voice) return err<Job>('invalid', `no voice "${spec}"`)
    if (speed != null && !within(VOICE_LIMITS.speed, speed))
      return err<Job>('invalid', `speed must be ${VOICE_LIMITS.speed[0]} to ${VOICE_LIMITS.speed[1]}, not ${speed}`)
    const job = speechJob(recordedSpeakJob, 'speak', voice, text.slice(0, 200), { voice: spec, text, speed })
    state.jobs = [...state.jobs, job]
    setTimeout(() => {
      emitRuntime({ type: 'job_queued', job: clone(job) } as RuntimeEvent)
      queueTail = queueTail.then(() => playSpeech(job))
    }, 0)
    return ok(clone(job))
  }),
  streamSpeechAudio: cmd('streamSpeechAudio', (channel: Channel<ArrayBuffer>) => {
    speechAudio = channel
    return ok(null)
  }),
  saveSpeech: cmd('saveSpeech', (jobId: number, path: string) => {
    const job = state.jobs.find((j) => j.id === jobId)
    if (!job || job.kind !== 'speak' || job.status !== 'done') {
      return err<string>('invalid', `job ${jobId} is not a finished speak job`)
    }
    return ok(/\.[a-z0-9]+$/i.test(path) ? path : `${path}.wav`)
  }),
  speakBatch: cmd('speakBatch', (spec: string, lines: string[], dir: string, speed: number | null) => {
    const clean = lines.map((l) => l.trim()).filter(Boolean)
    if (!clean.length) return err<Job>('invalid', 'the batch has no lines')
    const voice = findVoice(spec)
    if (!voice) return err<Job>('invalid', `no voice "${spec}"`)
    if (batchDirs.has(dir))
      return err<Job>('invalid', `${dir} already holds a batch (manifest.csv); choose an empty folder`)
    batchDirs.add(dir)
    const job = speechJob(recordedBatchJob, 'speak_batch', voice, dir, {
      voice: spec,
      lines: clean,
      output_dir: dir,
      speed,
    })
    state.jobs = [...state.jobs, job]
    setTimeout(() => {
      emitRuntime({ type: 'job_queued', job: clone(job) } as RuntimeEvent)
      queueTail = queueTail.then(() => playBatch(job, clean, dir))
    }, 0)
    return ok(clone(job))
  }),
  readLines: cmd('readLines', (path: string) =>
    ok(clone(path.toLowerCase().endsWith('.csv') ? recordedLinesCsv : recordedLinesTxt)),
  ),
  batchChecks: cmd('batchChecks', (jobId: number) => {
    const job = state.jobs.find((j) => j.id === jobId)
    if (!job || job.kind !== 'speak_batch') return err<ManifestRow[]>('invalid', `job ${jobId} is not a batch export`)
    if (job.status !== 'done') return ok<ManifestRow[]>([])
    return ok(batchRows(job))
  }),
  retakeFlagged: cmd('retakeFlagged', (jobId: number, spec: string) => {
    const job = state.jobs.find((j) => j.id === jobId)
    if (!job || job.kind !== 'speak_batch') return err<Job>('invalid', `job ${jobId} is not a batch export`)
    const voice = findVoice(spec)
    if (!voice) return err<Job>('invalid', `no voice "${spec}"`)
    const flagged = batchRows(job).filter((r) => r.flagged)
    if (!flagged.length) return err<Job>('invalid', `no line of the batch in ${job.input} is flagged`)
    const retake = speechJob(recordedBatchJob, 'speak_batch', voice, job.input, { voice: spec })
    state.jobs = [...state.jobs, retake]
    setTimeout(async () => {
      emitRuntime({ type: 'job_queued', job: clone(retake) } as RuntimeEvent)
      await sleep(mock.config.jobStepMs)
      emitRuntime({ type: 'job_started', job_id: retake.id } as RuntimeEvent)
      await sleep(mock.config.jobStepMs)
      for (const r of flagged) retaken.add(`${jobId}:${r.line}`)
      setJob(retake.id, { status: 'done', progress: 1 })
      emitRuntime({ type: 'job_finished', job_id: retake.id, status: 'done', error: null } as RuntimeEvent)
    }, 0)
    return ok(clone(retake))
  }),
  showBatchOutput: cmd('showBatchOutput', (jobId: number) => {
    const job = state.jobs.find((j) => j.id === jobId)
    if (!job || job.kind !== 'speak_batch') return err<null>('invalid', `job ${jobId} is not a batch export`)
    return ok(null)
  }),
  listChats: cmd('listChats', (query: string) => ok(clone(searchChats(query)))),
  getChatMessages: cmd('getChatMessages', (chatId: number) => {
    if (!chats.list.some((c) => c.id === chatId))
      return err<MessageRecord[]>('not_found', `chat ${chatId} does not exist`)
    return ok(clone(chats.messages.filter((m) => m.chat_id === chatId)))
  }),
  deleteChat: cmd('deleteChat', (chatId: number) => {
    if (chats.activity?.chatId === chatId) {
      return err<null>('invalid', 'this chat is in use: stop the reply or voice chat first')
    }
    if (!chats.list.some((c) => c.id === chatId)) return err<null>('not_found', `chat ${chatId} does not exist`)
    chats.list = chats.list.filter((c) => c.id !== chatId)
    chats.messages = chats.messages.filter((m) => m.chat_id !== chatId)
    return ok(null)
  }),
  listAudioDevices: cmd('listAudioDevices', () => ok(clone(audioDevices))),
  getChatSettings: cmd('getChatSettings', () => ok(clone(chats.settings))),
  setChatSettings: cmd('setChatSettings', (settings: ChatSettings) => setChatSettings(settings)),
  sendChatMessage: cmd('sendChatMessage', (chatId: number | null, text: string) => sendChat(chatId, text)),
  startVoiceChat: cmd('startVoiceChat', (chatId: number | null, pushToTalk: boolean) =>
    startVoiceChat(chatId, pushToTalk),
  ),
  setTalking: cmd('setTalking', (talking: boolean) => {
    const activity = chats.activity
    if (activity?.talking == null) return err<null>('invalid', 'no push-to-talk voice chat is running')
    activity.talking = talking
    return ok(null)
  }),
  stopChat: cmd('stopChat', () => {
    const activity = chats.activity
    if (activity) activity.stopped = true
    return ok(activity != null)
  }),
  startDictation: cmd('startDictation', (modelId: string | null) => {
    if (dictation) return err<null>('invalid', 'a dictation is under way: stop it first')
    const id = modelId ?? state.settings.default_transcribe_model
    const model = state.models.find((m) => m.task === 'transcribe' && m.status === 'installed' && (!id || m.id === id))
    if (!model) return err<null>('model', id ? `${id} is not installed` : 'no transcription model is installed')
    const activity = { stopped: false, done: Promise.resolve() }
    activity.done = dictate(nextJobId++, activity).finally(() => {
      dictation = null
    })
    dictation = activity
    return ok(null)
  }),
  stopDictation: cmd('stopDictation', () => {
    if (dictation) dictation.stopped = true
    return ok(dictation != null)
  }),
  isDictating: cmd('isDictating', () => ok(dictation != null)),
  setDictationShortcut: cmd('setDictationShortcut', (shortcut: string) => {
    const text = shortcut.trim()
    // Modifiers and one key, as the global-shortcut plugin reads them.
    if (!/^((CommandOrControl|CmdOrCtrl|Control|Ctrl|Alt|Shift|Super|Command|Cmd)\+)+[A-Za-z0-9]\w*$/i.test(text)) {
      return err<string>('invalid', `${JSON.stringify(shortcut)} is not a shortcut`)
    }
    state.settings.dictation_shortcut = text
    return ok(text)
  }),
  takeOpenedFiles: cmd('takeOpenedFiles', () => {
    if (state.openedTaken) return ok<string[]>([])
    state.openedTaken = true
    return ok([...mock.config.openedFiles])
  }),
} satisfies typeof RealCommands

/** An event's listen and once, on the stand-in bus (what the UI uses of the real ones). */
function eventObj<T>(name: string) {
  const typed = (cb: EventCallback<T>) => (e: { event: string; id: number; payload: unknown }) =>
    cb({ event: e.event, id: e.id, payload: e.payload as T })
  return {
    listen: (cb: EventCallback<T>): Promise<UnlistenFn> => Promise.resolve(listen(name, typed(cb))),
    once: (cb: EventCallback<T>): Promise<UnlistenFn> => {
      const off = listen(name, (e) => {
        off()
        typed(cb)(e)
      })
      return Promise.resolve(off)
    },
  }
}

type Events = typeof RealEvents

export const events = {
  chatEvent: eventObj<ChatEvent>(CHAT_EVENT),
  dictateEvent: eventObj<DictateEvent>(DICTATE_EVENT),
  voiceSampleEvent: eventObj<VoiceSampleEvent>(VOICE_SAMPLE_EVENT),
  runtimeEvent: eventObj<RuntimeEvent>(RUNTIME_EVENT),
  filesOpened: eventObj<string[]>(FILES_OPENED_EVENT),
} satisfies { [K in keyof Events]: Pick<Events[K], 'listen' | 'once'> }

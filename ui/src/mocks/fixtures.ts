// What the real commands returned, recorded by the Rust side into
// tests/fixtures/recorded/*.json, normalised for replay. The loader accepts the shapes a
// recorder is likely to write: the bare value, tauri-specta's {status:"ok",data}, or
// {command,args,result}; events as payloads or {event,payload} with optional timing.
// A recording that is missing is replaced by the stand-in data below and listed in
// window.__izwiMock.fixtures.missing (the e2e tests fail on that).

import type {
  ExportFormat,
  Job,
  ModelInfo,
  SearchHit,
  Settings,
  SpeechClip,
  TranscriptView,
  VoiceInfo,
} from '../bindings'
import type { RuntimeEvent } from '../lib/events'
import { mock } from './control'

const files = import.meta.glob('../../tests/fixtures/recorded/*.json', { eager: true, import: 'default' }) as Record<
  string,
  unknown
>

const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '')

const byName: { name: string; key: string; value: unknown }[] = Object.entries(files).map(([path, value]) => {
  const name = path
    .split('/')
    .pop()!
    .replace(/\.json$/i, '')
  return { name, key: norm(name), value }
})

function find(...keys: string[]): { name: string; value: unknown } | null {
  for (const k of keys.map(norm)) {
    const exact = byName.find((f) => f.key === k)
    if (exact) return exact
    const starts = byName.find((f) => f.key.startsWith(k))
    if (starts) return starts
    const contains = byName.find((f) => f.key.includes(k))
    if (contains) return contains
  }
  return null
}

/** The data inside a recorded wrapper, if it is one. */
export function unwrap(v: unknown): unknown {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>
    if (o.status === 'ok' && 'data' in o) return unwrap(o.data)
    if ('result' in o) return unwrap(o.result)
    if ('response' in o) return unwrap(o.response)
    const keys = Object.keys(o)
    if ('data' in o && keys.every((k) => ['data', 'command', 'cmd', 'args', 'input', 'status'].includes(k)))
      return unwrap(o.data)
  }
  return v
}

function load<T>(what: string, keys: string[], fallback: T, check: (v: unknown) => boolean): T {
  const f = find(...keys)
  if (f) {
    const v = unwrap(f.value)
    if (check(v)) {
      mock.fixtures.found.push(`${what} ← ${f.name}.json`)
      return v as T
    }
    console.warn(`[mock] ${f.name}.json does not look like ${what}; using stand-in data`)
  }
  mock.fixtures.missing.push(what)
  return fallback
}

const isArray = (v: unknown) => Array.isArray(v)
const isObject = (v: unknown) => !!v && typeof v === 'object' && !Array.isArray(v)

// ---------- stand-in data (only where a recording is missing) ----------

const JFK = '/home/user/Audio/jfk.wav'

const fallbackModels: ModelInfo[] = [
  ['whisper-tiny.en', 'Whisper tiny (English)', 77_700_000, ['en'], 'Fastest; English only; for quick drafts.'],
  [
    'whisper-base',
    'Whisper base',
    290_000_000,
    ['en', 'de', 'es', 'fr', 'it', 'ja', 'nl', 'pt', 'ru', 'zh'],
    'Fast, 99 languages; a good default on a laptop CPU.',
  ],
  ['whisper-base.en', 'Whisper base (English)', 290_000_000, ['en'], 'Fast and accurate for English.'],
  ['whisper-small.en', 'Whisper small (English)', 967_000_000, ['en'], 'More accurate English; slower on a CPU.'],
  [
    'whisper-large-v3-turbo',
    'Whisper large v3 turbo',
    1_620_000_000,
    ['en', 'de', 'es', 'fr'],
    'Most accurate, 99 languages; best with a GPU.',
  ],
].map(([id, name, size, languages, description], i) => ({
  id: id as string,
  name: name as string,
  family: 'whisper' as const,
  task: 'transcribe' as const,
  source: { kind: 'catalog' as const, repo: `Systran/faster-${id as string}`, revision: 'main' },
  status: i === 0 ? ('installed' as const) : ('not_installed' as const),
  path: i === 0 ? `/home/user/.cache/huggingface/hub/models--${id as string}` : null,
  size_bytes: size as number,
  disk_bytes: i === 0 ? (size as number) : 0,
  languages: languages as string[],
  license: 'MIT',
  description: description as string,
}))

fallbackModels.push(
  ...[
    ['local/joe', 'joe', 'installed', 'Imported from a folder on this computer.'],
    ['piper-en_US-lessac-medium', 'Lessac (US English)', 'not_installed', 'A clear US English voice.'],
  ].map(([id, name, status, description]) => ({
    id,
    name,
    family: 'piper' as const,
    task: 'speak' as const,
    source:
      status === 'installed'
        ? { kind: 'local' as const, imported_from: '/home/user/Media/voices/en_US-joe-medium' }
        : { kind: 'catalog' as const, repo: 'rhasspy/piper-voices', revision: 'main' },
    status: status as 'installed' | 'not_installed',
    path: status === 'installed' ? '/home/user/Media/voices/en_US-joe-medium' : null,
    size_bytes: 63_200_000,
    disk_bytes: status === 'installed' ? 63_200_000 : 0,
    languages: ['en_US'],
    license: 'CC0',
    description,
  })),
)

const fallbackJob: Job = {
  id: 1,
  kind: 'transcribe',
  status: 'queued',
  model_id: 'whisper-tiny.en',
  input: JFK,
  output: null,
  params: {},
  error: null,
  progress: 0,
  metrics: { audio_seconds: null, processing_seconds: null, rtf: null, tokens: null },
  created_at: Date.now(),
  started_at: null,
  finished_at: null,
}

const fallbackSegments = [
  { start: 0, end: 7.6, text: ' And so my fellow Americans, ask not what your country can do for you,' },
  { start: 7.6, end: 11, text: ' ask what you can do for your country.' },
]

const fallbackEvents: RuntimeEvent[] = [
  { type: 'job_queued', job: fallbackJob },
  { type: 'job_started', job_id: 1 },
  { type: 'model_loaded', model_id: 'whisper-tiny.en', seconds: 0.4 },
  { type: 'job_progress', job_id: 1, progress: 0, windows_done: 0, windows_total: 1, eta_seconds: null },
  { type: 'job_segments', job_id: 1, segments: fallbackSegments },
  { type: 'job_progress', job_id: 1, progress: 1, windows_done: 1, windows_total: 1, eta_seconds: 0 },
  { type: 'job_finished', job_id: 1, status: 'done', error: null },
] as RuntimeEvent[]

const fallbackTranscript: TranscriptView = {
  record: {
    id: 1,
    job_id: 1,
    title: 'jfk.wav',
    source_path: JFK,
    audio_path: null,
    language: 'en',
    duration: 11,
    model_id: 'whisper-tiny.en',
    rtf: 0.12,
    created_at: Date.now(),
  },
  segments: fallbackSegments.map((s, idx) => ({ idx, ...s })),
}

const fallbackSettings: Settings = {
  data_dir: '/home/user/.local/share/izwi',
  hf_cache_dir: '/home/user/.cache/huggingface/hub',
  default_transcribe_model: null,
  theme: 'system',
  device: 'cpu',
  devices: ['cpu'],
  speak_max_chars: 20_000,
}

const fallbackHits: SearchHit[] = [
  {
    transcript_id: 1,
    job_id: 1,
    title: 'jfk.wav',
    segment_idx: 0,
    start: 0,
    end: 7.6,
    snippet: 'ask not what your [country] can do for you',
  },
  {
    transcript_id: 1,
    job_id: 1,
    title: 'jfk.wav',
    segment_idx: 1,
    start: 7.6,
    end: 11,
    snippet: 'ask what you can do for your [country].',
  },
]

const fallbackPeaks = Array.from({ length: 400 }, (_, i) => Math.abs(Math.sin(i / 7) * Math.sin(i / 31)) * 0.9)

// ---------- the recordings ----------

export const recordedModels = load<ModelInfo[]>(
  'listModels',
  ['listModels', 'list_models', 'models'],
  fallbackModels,
  isArray,
)

const transcribed = load<Job[] | Job>(
  'transcribeFiles',
  ['transcribeFiles', 'transcribe_files'],
  [fallbackJob],
  (v) => isArray(v) || isObject(v),
)
export const recordedJobs: Job[] = Array.isArray(transcribed) ? transcribed : [transcribed]

/** One replayed event and how long after the previous one it came (null: unknown). */
export interface TimedEvent {
  delayMs: number | null
  payload: RuntimeEvent
}

const TIME_KEYS = ['elapsed_ms', 'at_ms', 't_ms', 'ms', 'time_ms', 'timestamp_ms', 'offset_ms', 'at', 't']

function normaliseEvents(v: unknown): TimedEvent[] {
  let list: unknown[] = []
  if (Array.isArray(v)) list = v
  else if (isObject(v)) {
    const o = v as Record<string, unknown>
    list = (['events', 'stream', 'items'].map((k) => o[k]).find(Array.isArray) as unknown[]) ?? []
  }
  let prev: number | null = null
  const out: TimedEvent[] = []
  for (const item of list) {
    if (!isObject(item)) continue
    const o = item as Record<string, unknown>
    const payload = (isObject(o.payload) ? o.payload : isObject(o.event) ? o.event : o) as RuntimeEvent
    if (!payload || typeof (payload as { type?: unknown }).type !== 'string') continue
    const key = TIME_KEYS.find((k) => typeof o[k] === 'number')
    let at = key ? (o[key] as number) : null
    if (at != null && key && !key.endsWith('ms') && at < 1e5) at = at * 1000 // seconds
    const delayMs = at != null && prev != null ? Math.max(0, at - prev) : at != null ? 0 : null
    if (at != null) prev = at
    out.push({ delayMs, payload })
  }
  return out
}

const eventsFile = find('events_jfk', 'jfk_events', 'eventStream', 'runtimeEvents', 'events', 'event')
export const recordedEvents: TimedEvent[] = (() => {
  if (eventsFile) {
    const ev = normaliseEvents(unwrap(eventsFile.value))
    if (ev.length) {
      mock.fixtures.found.push(`events ← ${eventsFile.name}.json`)
      return ev
    }
  }
  mock.fixtures.missing.push('events')
  return fallbackEvents.map((payload) => ({ delayMs: null, payload }))
})()

export const recordedTranscript = load<TranscriptView>(
  'getTranscript',
  ['getTranscript', 'get_transcript', 'transcript'],
  fallbackTranscript,
  (v) => isObject(v) && 'record' in (v as object) && 'segments' in (v as object),
)

export const recordedSettings = load<Settings>(
  'getSettings',
  ['getSettings', 'get_settings', 'settings'],
  fallbackSettings,
  (v) => isObject(v) && 'data_dir' in (v as object),
)

const fallbackJobList: Job[] = [
  {
    ...fallbackJob,
    status: 'done',
    progress: 1,
    output: null,
    metrics: { audio_seconds: 11, processing_seconds: 1.3, rtf: 0.12, tokens: 30 },
    created_at: Date.now() - 3_600_000,
    started_at: Date.now() - 3_599_000,
    finished_at: Date.now() - 3_597_000,
  },
]

export const recordedJobList = load<Job[]>('listJobs', ['listJobs', 'list_jobs', 'jobs'], fallbackJobList, isArray)

const searchFile = find('searchTranscripts', 'search_transcripts', 'search')
export const recordedSearch: { query: string | null; hits: SearchHit[] } = (() => {
  if (searchFile) {
    const raw = searchFile.value as Record<string, unknown>
    const hits = unwrap(searchFile.value)
    const query =
      isObject(raw) && Array.isArray(raw.args) && typeof raw.args[0] === 'string'
        ? (raw.args[0] as string)
        : isObject(raw) && typeof raw.query === 'string'
          ? (raw.query as string)
          : isObject(raw) && typeof raw.text === 'string'
            ? (raw.text as string)
            : null
    const list = Array.isArray(hits)
      ? hits
      : isObject(hits) && Array.isArray((hits as { hits?: unknown }).hits)
        ? (hits as { hits: unknown[] }).hits
        : null
    if (list) {
      mock.fixtures.found.push(`searchTranscripts ← ${searchFile.name}.json`)
      return { query, hits: list as SearchHit[] }
    }
  }
  mock.fixtures.missing.push('searchTranscripts')
  return { query: 'country', hits: fallbackHits }
})()

const peaksRaw = load<unknown>(
  'audioPeaks',
  ['audioPeaks', 'audio_peaks', 'peaks'],
  fallbackPeaks,
  (v) => isArray(v) || (isObject(v) && Array.isArray((v as { peaks?: unknown }).peaks)),
)
export const recordedPeaks: number[] = Array.isArray(peaksRaw)
  ? (peaksRaw as number[])
  : (peaksRaw as { peaks: number[] }).peaks

const FORMATS: ExportFormat[] = ['txt', 'srt', 'vtt', 'json']

/** Export outputs by format: one file per format, or one file mapping formats to outputs. */
export const recordedExports: Partial<Record<ExportFormat, string>> = (() => {
  const out: Partial<Record<ExportFormat, string>> = {}
  const exportFiles = byName.filter((f) => f.key.includes('export'))
  for (const f of exportFiles) {
    const v = unwrap(f.value)
    const fmt = FORMATS.find((x) => f.key.endsWith(x))
    if (fmt && typeof v === 'string') out[fmt] = v
    else if (isObject(v)) {
      for (const x of FORMATS) {
        const entry = (v as Record<string, unknown>)[x]
        const text = typeof entry === 'string' ? entry : unwrap(entry)
        if (typeof text === 'string') out[x] = text
      }
    } else if (Array.isArray(v)) {
      for (const item of v) {
        if (!isObject(item)) continue
        const o = item as Record<string, unknown>
        const x = (o.format ?? (Array.isArray(o.args) ? o.args[1] : undefined)) as ExportFormat
        const text = unwrap(o.text ?? o.output ?? o.result ?? o.data)
        if (FORMATS.includes(x) && typeof text === 'string') out[x] = text
      }
    }
  }
  if (Object.keys(out).length)
    mock.fixtures.found.push(`exportTranscript ← ${exportFiles.map((f) => f.name).join(', ')}`)
  else {
    mock.fixtures.missing.push('exportTranscript')
    out.txt = fallbackSegments.map((s) => s.text.trim()).join('\n')
    out.srt =
      '1\n00:00:00,000 --> 00:00:07,600\nAnd so my fellow Americans, ask not what your country can do for you,\n'
  }
  return out
})()

// ---------- speech ----------

const JOE: VoiceInfo = {
  id: 1,
  name: 'joe',
  source: 'preset',
  model_id: 'local/joe',
  language: 'en_US',
  installed: true,
  settings: { speed: 1, noise_scale: null, noise_w: null, pitch: 0, speaker: null },
}

const fallbackClip: SpeechClip = {
  sample_rate: 22050,
  samples: Array.from({ length: 22050 }, (_, i) => Math.sin(i / 8) * 0.3 * Math.sin((Math.PI * i) / 22050)),
}

const speakJob: Job = {
  ...fallbackJob,
  id: 10,
  kind: 'speak',
  model_id: 'local/joe',
  input: 'Hello there. How are you?',
}
const batchJob: Job = {
  ...fallbackJob,
  id: 11,
  kind: 'speak_batch',
  model_id: 'local/joe',
  input: '/home/user/Media/batch',
}

const fallbackSpeakEvents: RuntimeEvent[] = [
  { type: 'job_queued', job: speakJob },
  { type: 'job_started', job_id: 10 },
  ...[0, 1].flatMap((index) => [
    {
      type: 'speech_audio',
      job_id: 10,
      index,
      total: 2,
      sample_rate: 22050,
      samples: fallbackClip.samples.slice(0, 11025),
    },
    {
      type: 'job_progress',
      job_id: 10,
      progress: (index + 1) / 2,
      windows_done: index + 1,
      windows_total: 2,
      eta_seconds: 1 - index,
    },
  ]),
  { type: 'job_finished', job_id: 10, status: 'done', error: null },
] as RuntimeEvent[]

const fallbackBatchEvents: RuntimeEvent[] = [
  { type: 'job_queued', job: batchJob },
  { type: 'job_started', job_id: 11 },
  ...[0, 1, 2].flatMap((line) => [
    { type: 'batch_line_done', job_id: 11, line, file: `/home/user/Media/batch/00${line + 1}.wav`, seconds: 1.5 },
    {
      type: 'job_progress',
      job_id: 11,
      progress: (line + 1) / 3,
      windows_done: line + 1,
      windows_total: 3,
      eta_seconds: 2 - line,
    },
  ]),
  { type: 'job_finished', job_id: 11, status: 'done', error: null },
] as RuntimeEvent[]

function eventsNamed(what: string, keys: string[], fallback: RuntimeEvent[]): TimedEvent[] {
  for (const key of keys) {
    const f = byName.find((x) => x.key === norm(key))
    if (!f) continue
    const ev = normaliseEvents(unwrap(f.value))
    if (ev.length) {
      mock.fixtures.found.push(`${what} ← ${f.name}.json`)
      return ev
    }
  }
  mock.fixtures.missing.push(what)
  return fallback.map((payload) => ({ delayMs: null, payload }))
}

export const recordedVoices = load<VoiceInfo[]>('listVoices', ['listVoices', 'list_voices'], [JOE], isArray)
export const recordedAddedVoice = load<VoiceInfo>(
  'addVoice',
  ['addVoice', 'add_voice'],
  { ...JOE, id: 2, name: 'Joe, slowly', settings: { ...JOE.settings, speed: 0.8 } },
  (v) => isObject(v) && 'settings' in (v as object),
)
export const recordedPreview = load<SpeechClip>(
  'previewVoice',
  ['previewVoice', 'preview_voice'],
  fallbackClip,
  (v) => isObject(v) && Array.isArray((v as SpeechClip).samples),
)
export const recordedSpeakJob = load<Job>('speak', ['speak'], speakJob, (v) => isObject(v) && 'kind' in (v as object))
export const recordedSpeakEvents = eventsNamed('speak events', ['events_speak', 'speak_events'], fallbackSpeakEvents)
export const recordedSavedSpeech = load<string>(
  'saveSpeech',
  ['saveSpeech', 'save_speech'],
  '/home/user/Media/hello.wav',
  (v) => typeof v === 'string',
)
export const recordedBatchJob = load<Job>(
  'speakBatch',
  ['speakBatch', 'speak_batch'],
  batchJob,
  (v) => isObject(v) && 'kind' in (v as object),
)
export const recordedBatchEvents = eventsNamed('batch events', ['events_batch', 'batch_events'], fallbackBatchEvents)
export const recordedLinesTxt = load<string[]>(
  'readLines (txt)',
  ['readLines_txt'],
  ['Welcome to the museum.', 'The exit is on your left.'],
  isArray,
)
export const recordedLinesCsv = load<string[]>(
  'readLines (csv)',
  ['readLines_csv'],
  ['Welcome to the museum.', 'Tickets, please.'],
  isArray,
)

mock.recorded = {
  voices: recordedVoices,
  addedVoice: recordedAddedVoice,
  preview: { sample_rate: recordedPreview.sample_rate, samples: recordedPreview.samples.length },
  speakJob: recordedSpeakJob,
  speakEvents: recordedSpeakEvents.map((e) =>
    e.payload.type === 'speech_audio' ? { ...e, payload: { ...e.payload, samples: e.payload.samples.length } } : e,
  ),
  savedSpeech: recordedSavedSpeech,
  batchJob: recordedBatchJob,
  batchEvents: recordedBatchEvents,
  linesTxt: recordedLinesTxt,
  linesCsv: recordedLinesCsv,
  models: recordedModels,
  jobs: recordedJobs,
  events: recordedEvents,
  transcript: recordedTranscript,
  settings: recordedSettings,
  jobList: recordedJobList,
  search: recordedSearch,
  exports: recordedExports,
  peaks: recordedPeaks.length,
}

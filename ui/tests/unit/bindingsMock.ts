// The generated bindings, mocked (vi.mock of src/bindings): every command is a vi.fn that
// answers like tauri-specta does ({status:"ok",data} or {status:"error",error}), and
// emitRuntime() delivers a runtime event to whoever listens.

import { vi } from 'vitest'
import type {
  BatchDetail,
  Job,
  JobDetail,
  ModelInfo,
  SegmentRecord,
  Settings,
  SpeechClip,
  SpeechDetail,
  TranscriptView,
  VoiceInfo,
  VoiceSettings,
} from '../../src/bindings'
import type { RuntimeEvent } from '../../src/lib/events'

type Listener = (e: { event: string; id: number; payload: unknown }) => void
const listeners = new Set<Listener>()

export const ok = <T>(data: T) => ({ status: 'ok' as const, data })
export const fail = (kind: string, message: string) => ({ status: 'error' as const, error: { kind, message } })

function defaults() {
  return {
    listModels: vi.fn(async () => ok<ModelInfo[]>([])),
    downloadModel: vi.fn(async (_id: string) => ok({} as ModelInfo)),
    cancelDownload: vi.fn(async (_id: string) => ok(null)),
    removeModel: vi.fn(async (_id: string) => ok(0)),
    importModel: vi.fn(async (_p: string, _n: string | null) => ok({} as ModelInfo)),
    transcribeFiles: vi.fn(async (_paths: string[], _o: unknown) => ok<Job[]>([])),
    cancelJob: vi.fn(async (_id: number) => ok(null)),
    listJobs: vi.fn(async (_f: unknown) => ok<Job[]>([])),
    deleteJob: vi.fn(async (_id: number) => ok(null)),
    getTranscript: vi.fn(async (_id: number) => ok<TranscriptView | null>(null)),
    getJobDetail: vi.fn(async (_id: number) =>
      ok<JobDetail>({ kind: 'transcript', job: job({ status: 'done' }), transcript: null, segments: [] }),
    ),
    editSegment: vi.fn(async (_t: number, idx: number, text: string) =>
      ok<SegmentRecord>({ ...transcript().segments[idx], text, original: transcript().segments[idx].text }),
    ),
    revertSegment: vi.fn(async (_t: number, idx: number) => ok<SegmentRecord>(transcript().segments[idx])),
    searchTranscripts: vi.fn(async (_t: string, _l: number) => ok([] as unknown[])),
    exportTranscript: vi.fn(async (_id: number, _f: string, p: string | null) => ok(p ?? '')),
    audioPeaks: vi.fn(async (_p: string, n: number) => ok(Array.from({ length: n }, () => 0.5))),
    getSettings: vi.fn(async () => ok<Settings>(settings())),
    setDefaultModel: vi.fn(async (_id: string | null) => ok(null)),
    setTheme: vi.fn(async (_t: string) => ok(null)),
    takeOpenedFiles: vi.fn(async () => ok<string[]>([])),
    listVoices: vi.fn(async () => ok<VoiceInfo[]>([])),
    addVoice: vi.fn(async (_m: string, _n: string, _s: VoiceSettings) => ok(voice())),
    renameVoice: vi.fn(async (_id: number, _n: string) => ok(voice())),
    updateVoiceSettings: vi.fn(async (_id: number, _s: VoiceSettings) => ok(voice())),
    deleteVoice: vi.fn(async (_id: number) => ok(null)),
    previewVoice: vi.fn(async (_v: string, _t: string | null) => ok<SpeechClip>({ sample_rate: 22050, samples: [] })),
    speak: vi.fn(async (_v: string, _t: string, _s: number | null) => ok(job({ kind: 'speak' }))),
    saveSpeech: vi.fn(async (_id: number, p: string) => ok(p)),
    speakBatch: vi.fn(async (_v: string, _l: string[], _d: string, _s: number | null) =>
      ok(job({ kind: 'speak_batch' })),
    ),
    readLines: vi.fn(async (_p: string) => ok<string[]>([])),
    showBatchOutput: vi.fn(async (_id: number) => ok(null)),
  }
}

export const commands = defaults()

export const events = {
  runtimeEvent: {
    listen: vi.fn(async (cb: Listener) => {
      listeners.add(cb)
      return () => listeners.delete(cb)
    }),
    once: vi.fn(),
    emit: vi.fn(),
  },
}

export function emitRuntime(payload: RuntimeEvent): void {
  for (const l of [...listeners]) l({ event: 'runtime-event', id: 0, payload })
}

/** Back to the default answers, with no listeners. */
export function resetBindings(): void {
  const fresh = defaults()
  for (const [name, fn] of Object.entries(fresh)) {
    const mocked = commands[name as keyof typeof commands] as unknown as ReturnType<typeof vi.fn>
    mocked.mockReset()
    mocked.mockImplementation(fn.getMockImplementation()!)
  }
  listeners.clear()
}

export function settings(patch: Partial<Settings> = {}): Settings {
  return {
    data_dir: '/home/ada/.local/share/izwi',
    hf_cache_dir: '/home/ada/.cache/huggingface/hub',
    default_transcribe_model: null,
    theme: 'system',
    device: 'cpu',
    devices: ['cpu'],
    speak_max_chars: 20_000,
    ...patch,
  }
}

export function model(patch: Partial<ModelInfo> = {}): ModelInfo {
  return {
    id: 'whisper-base',
    name: 'Whisper base',
    family: 'whisper',
    task: 'transcribe',
    source: { kind: 'catalog', repo: 'Systran/faster-whisper-base', revision: 'main' },
    status: 'not_installed',
    path: null,
    size_bytes: 290_000_000,
    disk_bytes: 0,
    languages: ['en', 'de', 'fr', 'es'],
    license: 'MIT',
    description: 'Fast, 99 languages.',
    ...patch,
  }
}

export function job(patch: Partial<Job> = {}): Job {
  return {
    id: 7,
    kind: 'transcribe',
    status: 'queued',
    model_id: 'whisper-base',
    input: '/home/ada/Audio/jfk.wav',
    output: null,
    params: {},
    error: null,
    progress: 0,
    metrics: { audio_seconds: null, processing_seconds: null, rtf: null, tokens: null },
    created_at: Date.UTC(2025, 10, 20, 9, 30),
    started_at: null,
    finished_at: null,
    ...patch,
  }
}

export function transcript(jobId = 7): TranscriptView {
  return {
    record: {
      id: 3,
      job_id: jobId,
      title: 'jfk.wav',
      source_path: '/home/ada/Audio/jfk.wav',
      audio_path: 'audio/3.wav',
      language: 'en',
      duration: 11,
      model_id: 'whisper-base',
      rtf: 0.1,
      created_at: Date.UTC(2025, 10, 20, 9, 31),
    },
    segments: [
      { idx: 0, start: 0, end: 3.5, text: ' And so my fellow Americans,' },
      { idx: 1, start: 3.5, end: 7.6, text: ' ask not what your country can do for you,' },
      { idx: 2, start: 7.6, end: 11, text: ' ask what you can do for your country.' },
    ],
  }
}

export function voice(patch: Partial<VoiceInfo> = {}): VoiceInfo {
  return {
    id: 1,
    name: 'Joe',
    source: 'preset',
    model_id: 'piper-en_US-joe-medium',
    language: 'en_US',
    installed: true,
    settings: { speed: 1, noise_scale: null, noise_w: null, pitch: 0, speaker: null },
    ...patch,
  }
}

export function speechDetail(patch: Partial<SpeechDetail> = {}): SpeechDetail {
  return {
    job: job({
      id: 12,
      kind: 'speak',
      status: 'done',
      model_id: 'piper-en_US-joe-medium',
      input: 'Good morning. The kettle is on.',
      output: '/home/ada/.local/share/izwi/audio/speech-12.wav',
      metrics: { audio_seconds: 2.4, processing_seconds: 0.5, rtf: 0.2, tokens: null },
    }),
    text: 'Good morning. The kettle is on.',
    text_complete: true,
    text_file: null,
    voice: {
      requested: '3',
      name: 'Joe slow',
      model_id: 'piper-en_US-joe-medium',
      settings: { speed: 1.1, noise_scale: null, noise_w: null, pitch: -1, speaker: null },
      speed: 1.1,
    },
    audio_path: '/home/ada/.local/share/izwi/audio/speech-12.wav',
    audio_exists: true,
    ...patch,
  }
}

export function batchDetail(patch: Partial<BatchDetail> = {}): BatchDetail {
  const dir = '/home/ada/Audio/prompts'
  return {
    job: job({ id: 13, kind: 'speak_batch', status: 'cancelled', model_id: 'piper-en_US-joe-medium', input: dir }),
    voice: {
      requested: 'Joe',
      name: 'Joe',
      model_id: 'piper-en_US-joe-medium',
      settings: { speed: 1, noise_scale: null, noise_w: null, pitch: 0, speaker: null },
      speed: null,
    },
    output_dir: dir,
    manifest_path: `${dir}/manifest.csv`,
    lines: [
      { line: 1, text: 'Welcome aboard.', file: `${dir}/001.wav`, seconds: 1.2, status: 'made' },
      { line: 2, text: 'Please take a seat.', file: `${dir}/002.wav`, seconds: 1.6, status: 'missing' },
      { line: 3, text: null, file: null, seconds: null, status: 'not_made' },
    ],
    ...patch,
  }
}

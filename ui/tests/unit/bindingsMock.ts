// The generated bindings, mocked (vi.mock of src/bindings): every command is a vi.fn that
// answers like tauri-specta does ({status:"ok",data} or {status:"error",error}), and
// emitRuntime(), emitChat(), emitDictate() and emitVoiceSample() deliver an event to whoever listens, sendSpeechAudio() a
// binary frame to the speech audio channel the page opened.

import type { Channel } from '@tauri-apps/api/core'
import { vi, type Mock } from 'vitest'
import type {
  commands as RealCommands,
  events as RealEvents,
  ApiServerStatus,
  AudioDevices,
  BatchDetail,
  ChatEvent,
  ChatRecord,
  ChatSettings,
  DictateEvent,
  ErrorKind,
  Job,
  JobDetail,
  ManifestRow,
  MessageRecord,
  ModelInfo,
  QueuedFiles,
  RemoteInfo,
  SegmentRecord,
  Settings,
  SpeechDetail,
  TranscriptView,
  VoiceInfo,
  VoiceSample,
  VoiceSampleEvent,
} from '../../src/bindings'
import type {
  END_SILENCE_MS_RANGE as REAL_END_SILENCE_MS_RANGE,
  VOICE_NAME_MAX_CHARS as REAL_VOICE_NAME_MAX_CHARS,
} from '../../src/bindings'
import type { RuntimeEvent } from '../../src/lib/events'
import { encodeSpeechAudio, type SpeechAudioEvent } from '../../src/mocks/speechFrames'

/** The constants the UI reads, typed as generated: a change in the Rust side shows here. */
export const END_SILENCE_MS_RANGE = [200, 3000] as const satisfies typeof REAL_END_SILENCE_MS_RANGE
export const VOICE_NAME_MAX_CHARS = 80 as const satisfies typeof REAL_VOICE_NAME_MAX_CHARS

type Listener = Parameters<Events['runtimeEvent']['listen']>[0]
const listeners = new Set<Listener>()
type ChatListener = Parameters<Events['chatEvent']['listen']>[0]
const chatListeners = new Set<ChatListener>()
type DictateListener = Parameters<Events['dictateEvent']['listen']>[0]
const dictateListeners = new Set<DictateListener>()
type SampleListener = Parameters<Events['voiceSampleEvent']['listen']>[0]
const sampleListeners = new Set<SampleListener>()

/** A sample of `seconds` with a flat waveform of 200 peaks. */
export const sample = (patch: Partial<VoiceSample> = {}): VoiceSample => ({
  path: '/data/voice-samples/sample.wav',
  seconds: 10,
  peaks: Array.from({ length: 200 }, () => 0.5),
  ...patch,
})
let speechAudio: Channel<ArrayBuffer> | null = null

export const ok = <T>(data: T) => ({ status: 'ok' as const, data })
export const fail = (kind: ErrorKind, message: string) => ({ status: 'error' as const, error: { kind, message } })

type Commands = typeof RealCommands
type Mocked = { [K in keyof Commands]: Mock<Commands[K]> }

/** A mock of command `name`, typed as the generated binding is. */
const fn = <K extends keyof Commands>(_name: K, impl: Commands[K]) => vi.fn<Commands[K]>(impl)

function defaults() {
  // Whether the voice chat started is push-to-talk: only then does setTalking answer ok.
  let pushToTalk = false
  return {
    choosePaths: fn('choosePaths', async () => ok<string[]>([])),
    chooseSavePath: fn('chooseSavePath', async () => ok<string | null>(null)),
    listModels: fn('listModels', async () => ok([])),
    downloadModel: fn('downloadModel', async (id) => ok(model({ id }))),
    cancelDownload: fn('cancelDownload', async () => ok(null)),
    removeModel: fn('removeModel', async () => ok(0)),
    importModel: fn('importModel', async (path, name) => ok(model({ id: 'local/model', name: name ?? path }))),
    transcribeFiles: fn('transcribeFiles', async () => ok(queued([]))),
    cancelJob: fn('cancelJob', async () => ok(null)),
    listJobs: fn('listJobs', async () => ok([])),
    deleteJob: fn('deleteJob', async () => ok(null)),
    getTranscript: fn('getTranscript', async () => ok<TranscriptView | null>(null)),
    getJobDetail: fn('getJobDetail', async () =>
      ok<JobDetail>({ kind: 'transcript', job: job({ status: 'done' }), transcript: null, segments: [] }),
    ),
    editSegment: fn('editSegment', async (_t, idx, text) =>
      ok<SegmentRecord>({ ...transcript().segments[idx], text, original: transcript().segments[idx].text }),
    ),
    revertSegment: fn('revertSegment', async (_t, idx) => ok<SegmentRecord>(transcript().segments[idx])),
    searchTranscripts: fn('searchTranscripts', async () => ok([])),
    exportTranscript: fn('exportTranscript', async (_id, _f, p) => ok(p ?? '')),
    audioPeaks: fn('audioPeaks', async (_p, n) => ok(Array.from({ length: n }, () => 0.5))),
    getSettings: fn('getSettings', async () => ok(settings())),
    setDefaultModel: fn('setDefaultModel', async () => ok(null)),
    setTheme: fn('setTheme', async () => ok(null)),
    getApiServer: fn('getApiServer', async () => ok(apiServer())),
    startApiServer: fn('startApiServer', async (s) =>
      ok(apiServer({ settings: s, url: `http://${s.host}:${s.port}/v1` })),
    ),
    stopApiServer: fn('stopApiServer', async () => ok(apiServer())),
    getRemoteBackend: fn('getRemoteBackend', async () => ok<RemoteInfo | null>(null)),
    setRemoteBackend: fn('setRemoteBackend', async (url, key) =>
      ok<RemoteInfo | null>(url == null ? null : { url, has_key: key != null }),
    ),
    takeOpenedFiles: fn('takeOpenedFiles', async () => ok<string[]>([])),
    listVoices: fn('listVoices', async () => ok<VoiceInfo[]>([])),
    addVoice: fn('addVoice', async () => ok(voice())),
    renameVoice: fn('renameVoice', async () => ok(voice())),
    updateVoiceSettings: fn('updateVoiceSettings', async () => ok(voice())),
    deleteVoice: fn('deleteVoice', async () => ok(null)),
    cloneVoice: fn('cloneVoice', async (name, modelId, _audio, text) =>
      ok({
        voice: voice({ name, model_id: modelId, source: 'cloned', reference_text: text }),
        transcript: { kind: 'given' as const },
      }),
    ),
    designVoice: fn('designVoice', async (name, modelId) => ok(voice({ name, model_id: modelId, source: 'designed' }))),
    qwen3Models: fn('qwen3Models', async () => ok<string[]>([])),
    startVoiceSample: fn('startVoiceSample', async () => ok(null)),
    stopVoiceSample: fn('stopVoiceSample', async () => ok(true)),
    openVoiceSample: fn('openVoiceSample', async (path) => ok(sample({ path }))),
    trimVoiceSample: fn('trimVoiceSample', async (_path, start, end) =>
      ok(sample({ path: '/data/voice-samples/trimmed.wav', seconds: end - start })),
    ),
    transcribeVoiceSample: fn('transcribeVoiceSample', async () =>
      ok({ text: null, source: { kind: 'missing' as const, reason: 'no Whisper model is installed' } }),
    ),
    previewVoice: fn('previewVoice', async () => ok({ sample_rate: 22050, samples: [] })),
    speak: fn('speak', async () => ok(job({ kind: 'speak' }))),
    streamSpeechAudio: fn('streamSpeechAudio', async (channel) => {
      speechAudio = channel
      return ok(null)
    }),
    saveSpeech: fn('saveSpeech', async (_id, p) => ok(p)),
    speakBatch: fn('speakBatch', async () => ok(job({ kind: 'speak_batch' }))),
    readLines: fn('readLines', async () => ok<string[]>([])),
    showBatchOutput: fn('showBatchOutput', async () => ok(null)),
    batchChecks: fn('batchChecks', async () => ok<ManifestRow[]>([])),
    retakeFlagged: fn('retakeFlagged', async () => ok(job({ kind: 'speak_batch' }))),
    listChats: fn('listChats', async () => ok<ChatRecord[]>([])),
    getChatMessages: fn('getChatMessages', async () => ok<MessageRecord[]>([])),
    deleteChat: fn('deleteChat', async () => ok(null)),
    listAudioDevices: fn('listAudioDevices', async () => ok(devices())),
    getChatSettings: fn('getChatSettings', async () => ok(chatSettings())),
    setChatSettings: fn('setChatSettings', async () => ok(null)),
    sendChatMessage: fn('sendChatMessage', async (chatId) => ok({ chat_id: chatId ?? 1, reply: '', stopped: false })),
    startVoiceChat: fn('startVoiceChat', async (_chatId, ptt) => {
      pushToTalk = ptt
      return ok(null)
    }),
    setTalking: fn('setTalking', async () =>
      pushToTalk ? ok(null) : fail('invalid', 'no push-to-talk voice chat is running'),
    ),
    stopChat: fn('stopChat', async () => {
      pushToTalk = false
      return ok(true)
    }),
    startDictation: fn('startDictation', async () => ok(null)),
    stopDictation: fn('stopDictation', async () => ok(true)),
    isDictating: fn('isDictating', async () => ok(false)),
    setDictationShortcut: fn('setDictationShortcut', async (shortcut) => ok(shortcut.trim())),
  } satisfies Mocked
}

export const commands: Mocked = defaults()

type Events = typeof RealEvents
type MockedEvent<E extends keyof Events> = { [M in 'listen' | 'once' | 'emit']: Mock<Events[E][M]> }

/** The event helpers used by the app, typed as the generated bindings are; only
 * runtimeEvent.listen and chatEvent.listen deliver anything (through emitRuntime, emitChat). */
export const events = {
  chatEvent: {
    listen: vi.fn<Events['chatEvent']['listen']>(async (cb) => {
      chatListeners.add(cb)
      return () => {
        chatListeners.delete(cb)
      }
    }),
    once: vi.fn<Events['chatEvent']['once']>(async () => () => {}),
    emit: vi.fn<Events['chatEvent']['emit']>(async () => {}),
  },
  runtimeEvent: {
    listen: vi.fn<Events['runtimeEvent']['listen']>(async (cb) => {
      listeners.add(cb)
      return () => {
        listeners.delete(cb)
      }
    }),
    once: vi.fn<Events['runtimeEvent']['once']>(async () => () => {}),
    emit: vi.fn<Events['runtimeEvent']['emit']>(async () => {}),
  },
  dictateEvent: {
    listen: vi.fn<Events['dictateEvent']['listen']>(async (cb) => {
      dictateListeners.add(cb)
      return () => {
        dictateListeners.delete(cb)
      }
    }),
    once: vi.fn<Events['dictateEvent']['once']>(async () => () => {}),
    emit: vi.fn<Events['dictateEvent']['emit']>(async () => {}),
  },
  voiceSampleEvent: {
    listen: vi.fn<Events['voiceSampleEvent']['listen']>(async (cb) => {
      sampleListeners.add(cb)
      return () => {
        sampleListeners.delete(cb)
      }
    }),
    once: vi.fn<Events['voiceSampleEvent']['once']>(async () => () => {}),
    emit: vi.fn<Events['voiceSampleEvent']['emit']>(async () => {}),
  },
  filesOpened: {
    listen: vi.fn<Events['filesOpened']['listen']>(async () => () => {}),
    once: vi.fn<Events['filesOpened']['once']>(async () => () => {}),
    emit: vi.fn<Events['filesOpened']['emit']>(async () => {}),
  },
} satisfies { [E in keyof Events]: MockedEvent<E> }

export function emitRuntime(payload: RuntimeEvent): void {
  for (const l of [...listeners]) l({ event: 'runtime-event', id: 0, payload })
}

/** A sentence of speech audio, as the app sends it: a frame on the page's channel. */
export function sendSpeechAudio(e: SpeechAudioEvent): void {
  speechAudio?.onmessage(encodeSpeechAudio(e))
}

export function emitChat(payload: ChatEvent): void {
  for (const l of [...chatListeners]) l({ event: 'chat-event', id: 0, payload })
}

export function emitDictate(payload: DictateEvent): void {
  for (const l of [...dictateListeners]) l({ event: 'dictate-event', id: 0, payload })
}

export function emitVoiceSample(payload: VoiceSampleEvent): void {
  for (const l of [...sampleListeners]) l({ event: 'voice-sample-event', id: 0, payload })
}

function reset<K extends keyof Commands>(name: K, fresh: Mocked): void {
  commands[name].mockReset()
  commands[name].mockImplementation(fresh[name].getMockImplementation()!)
}

/** Back to the default answers, with no listeners. */
export function resetBindings(): void {
  const fresh: Mocked = defaults()
  for (const name of Object.keys(fresh) as (keyof Commands)[]) reset(name, fresh)
  listeners.clear()
  chatListeners.clear()
  dictateListeners.clear()
  sampleListeners.clear()
  speechAudio = null
}

/** What transcribeFiles answers when all of `jobs` were queued. */
export function queued(jobs: Job[]): QueuedFiles {
  return { jobs, skipped: [], left_out: 0 }
}

export function apiServer(patch: Partial<ApiServerStatus> = {}): ApiServerStatus {
  return { settings: { host: '127.0.0.1', port: 8080, api_key: null }, url: null, ...patch }
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
    dictation_shortcut: 'CommandOrControl+Shift+Space',
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
    catalog_id: null,
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

export function chatSettings(patch: Partial<ChatSettings> = {}): ChatSettings {
  return {
    llm: null,
    asr: null,
    voice: null,
    s2s: null,
    input_device: null,
    output_device: null,
    end_silence_ms: 500,
    barge_in: true,
    ...patch,
  }
}

export function devices(): AudioDevices {
  return {
    inputs: [
      { id: 'alsa:default', name: 'Built-in Microphone', is_default: true },
      { id: 'alsa:usb-headset', name: 'USB Headset', is_default: false },
    ],
    outputs: [{ id: 'alsa:speakers', name: 'Built-in Speakers', is_default: true }],
  }
}

export function chat(patch: Partial<ChatRecord> = {}): ChatRecord {
  return {
    id: 1,
    title: 'When does the museum open',
    model_id: 'local/smollm2',
    created_at: Date.UTC(2025, 10, 20, 9, 30),
    updated_at: Date.UTC(2025, 10, 20, 9, 32),
    ...patch,
  }
}

export function message(patch: Partial<MessageRecord> = {}): MessageRecord {
  return {
    id: 1,
    chat_id: 1,
    role: 'user',
    content: 'When does the museum open?',
    audio_path: null,
    metrics: null,
    created_at: Date.UTC(2025, 10, 20, 9, 30),
    ...patch,
  }
}

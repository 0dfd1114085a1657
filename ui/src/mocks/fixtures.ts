// What the real commands returned, recorded by src-tauri/tests/record.rs into
// tests/fixtures/recorded/NAME.json, loaded here by their exact names. A command's file
// is {command, args, result: {status: "ok", data}}; an event stream's is
// {event, about, events: [{elapsed_ms, payload}]}. A file that is missing or not what
// its name says stops the mock build with an error saying what to record. The chat's
// answers are not recorded yet: they are made at the end of this file.

import type {
  AudioDevices,
  ExportFormat,
  Job,
  ModelInfo,
  QueuedFiles,
  SearchHit,
  Settings,
  SpeechClip,
  TranscriptView,
  VoiceInfo,
} from '../bindings'
import type { RuntimeEvent } from '../lib/events'
import { mock } from './control'

const DIR = '../../tests/fixtures/recorded'
const files = import.meta.glob('../../tests/fixtures/recorded/*.json', { eager: true, import: 'default' }) as Record<
  string,
  unknown
>

const RECORD = 'cargo test --workspace --test record -- --ignored'

function recording(name: string): Record<string, unknown> {
  const value = files[`${DIR}/${name}.json`]
  if (!value || typeof value !== 'object') {
    throw new Error(`tests/fixtures/recorded/${name}.json is missing: record the fixtures (${RECORD})`)
  }
  mock.fixtures.found.push(`${name}.json`)
  return value as Record<string, unknown>
}

interface Recorded<T> {
  args: unknown[]
  data: T
}

/** A command's recorded call: its arguments and what it returned. */
function command<T>(name: string): Recorded<T> {
  const r = recording(name) as { args?: unknown[]; result?: { status?: string; data?: T } }
  if (!Array.isArray(r.args) || r.result?.status !== 'ok' || !('data' in r.result)) {
    throw new Error(`tests/fixtures/recorded/${name}.json is not a command that succeeded: record it again (${RECORD})`)
  }
  return { args: r.args, data: r.result.data as T }
}

const data = <T>(name: string): T => command<T>(name).data

/** One replayed event and how long after the previous one it came. */
export interface TimedEvent {
  delayMs: number
  payload: RuntimeEvent
}

function eventStream(name: string): TimedEvent[] {
  const r = recording(name) as { events?: { elapsed_ms: number; payload: RuntimeEvent }[] }
  if (!Array.isArray(r.events) || !r.events.length) {
    throw new Error(`tests/fixtures/recorded/${name}.json holds no events: record it again (${RECORD})`)
  }
  let previous = 0
  return r.events.map(({ elapsed_ms, payload }) => {
    const delayMs = Math.max(0, elapsed_ms - previous)
    previous = elapsed_ms
    return { delayMs, payload }
  })
}

// ---------- transcription ----------

export const recordedModels = data<ModelInfo[]>('listModels')
export const recordedJobs: Job[] = data<QueuedFiles>('transcribeFiles').jobs
export const recordedEvents = eventStream('events_jfk')
export const recordedTranscript = data<TranscriptView>('getTranscript')
export const recordedSettings = data<Settings>('getSettings')
export const recordedJobList = data<Job[]>('listJobs')

const search = command<SearchHit[]>('searchTranscripts')
export const recordedSearch: { query: string; hits: SearchHit[] } = {
  query: String(search.args[0]),
  hits: search.data,
}

export const recordedPeaks = data<number[]>('audioPeaks')

const FORMATS: ExportFormat[] = ['txt', 'srt', 'vtt', 'json']
export const recordedExports = Object.fromEntries(
  FORMATS.map((f) => [f, data<string>(`exportTranscript_${f}`)]),
) as Record<ExportFormat, string>

// ---------- speech ----------

export const recordedVoices = data<VoiceInfo[]>('listVoices')
export const recordedAddedVoice = data<VoiceInfo>('addVoice')
export const recordedPreview = data<SpeechClip>('previewVoice')
export const recordedSpeakJob = data<Job>('speak')
export const recordedSpeakEvents = eventStream('events_speak')
export const recordedSavedSpeech = data<string>('saveSpeech')
export const recordedBatchJob = data<Job>('speakBatch')
export const recordedBatchEvents = eventStream('events_batch')
export const recordedLinesTxt = data<string[]>('readLines_txt')
export const recordedLinesCsv = data<string[]>('readLines_csv')

// ---------- chat (synthesised in the shape of the bindings: no recording yet) ----------

/** The file the stand-in dialog offers for a model file, and the chat model it imports as. */
export const chatModelFile = '/home/user/Models/SmolLM2-135M-Instruct-Q8_0.gguf'
export const chatModelTemplate: ModelInfo = {
  id: 'local/smollm2-135m-instruct-q8_0',
  name: 'SmolLM2-135M-Instruct-Q8_0',
  family: 'llama',
  task: 'chat',
  source: { kind: 'local', imported_from: chatModelFile },
  status: 'installed',
  path: null,
  size_bytes: 144_811_200,
  disk_bytes: 144_811_200,
  languages: [],
  license: '',
  description: 'A chat model imported from a GGUF file.',
  catalog_id: null,
}

export const audioDevices: AudioDevices = {
  inputs: [
    { id: 'default', name: 'Built-in Microphone', is_default: true },
    { id: 'usb-headset-in', name: 'USB Headset Microphone', is_default: false },
  ],
  outputs: [
    { id: 'default', name: 'Built-in Speakers', is_default: true },
    { id: 'usb-headset-out', name: 'USB Headset', is_default: false },
  ],
}

/** What the stand-in chat model answers to `text`. */
export function chatReply(text: string): string {
  const said = text.length > 60 ? `${text.slice(0, 57)}…` : text
  return `You said: “${said}”. This reply comes from Izwi's stand-in backend, a few words at a time, as a chat model writes.`
}

/** One scripted voice turn: what the user is heard saying, and how long each step takes. */
export const voiceTurn = {
  heard: 'What time does the museum open tomorrow?',
  metrics: { asr_ms: 310, first_token_ms: 620, first_audio_ms: 1380, total_ms: 4200, interrupted: false },
}

mock.recorded = {
  chatModel: chatModelTemplate,
  audioDevices,
  voiceTurn,
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

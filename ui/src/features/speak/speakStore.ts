// The Speak screen's job: text → a speak job whose sentences arrive as binary frames on
// the speech audio channel and play as they come (Web Audio, in order), its progress,
// cancel, playing the finished speech from any point, and saving the WAV.

import type { Job, JobStatus } from '../../bindings'
import { api } from '../../lib/api'
import { EarlyEvents } from '../../lib/earlyEvents'
import type { RuntimeEvent } from '../../lib/events'
import type { SpeechAudio } from '../../lib/speechAudioFrame'
import { createStore, useStore } from '../../lib/store'
import { rememberedVoice, rememberVoice } from '../voices/voicesStore'
import { PcmPlayer } from './pcmPlayer'

export interface SpeakState {
  text: string
  /** The chosen library voice (null: the first that can speak). */
  voiceId: number | null
  /** Overrides the voice's own speed; null uses it. */
  speed: number | null
  job: Job | null
  status: JobStatus | null
  /** The command that queues the job is on its way. */
  starting: boolean
  submitError: unknown
  /** What the voice's audio comes in: a Piper voice's sentences, or a Qwen3-TTS voice's
   * pieces (about a second each; its progress counts utterances). */
  unit: 'sentence' | 'piece'
  /** Pieces of audio received. */
  pieces: number
  sentencesDone: number
  sentencesTotal: number
  etaSeconds: number | null
  /** Seconds of audio received so far. */
  audioSeconds: number
  /** Milliseconds from Generate to the first piece of audio; null until it came. */
  firstAudioMs: number | null
  playing: boolean
  /** Web Audio is missing: the audio is made and saved, but not played here. */
  silent: boolean
  cancelling: boolean
  /** Why the job failed. */
  error: string | null
  saving: boolean
  savedPath: string | null
}

const VOICE_KEY = 'izwi.speak.voice'

const fresh = (): SpeakState => ({
  text: '',
  voiceId: rememberedVoice(VOICE_KEY),
  speed: null,
  job: null,
  status: null,
  starting: false,
  submitError: null,
  unit: 'sentence',
  pieces: 0,
  sentencesDone: 0,
  sentencesTotal: 0,
  etaSeconds: null,
  audioSeconds: 0,
  firstAudioMs: null,
  playing: false,
  silent: false,
  cancelling: false,
  error: null,
  saving: false,
  savedPath: null,
})

export const speakStore = createStore<SpeakState>(fresh())

/** When Generate asked for the current job (performance.now()). */
let requestedAt = 0
/** Every piece received for the current job, by index, to play it again. */
let chunks: { samples: Float32Array; sampleRate: number; gapBefore: number }[] = []
/** Events for a job id not known yet (they can beat the command's answer). */
const early = new EarlyEvents<SpeakInput>()
let player: PcmPlayer | null = null

function getPlayer(): PcmPlayer {
  if (!player) player = new PcmPlayer(() => speakStore.set((s) => (s.playing ? { ...s, playing: false } : s)))
  return player
}

export function resetSpeak(): void {
  player?.stop()
  player = null
  chunks = []
  early.clear()
  speakStore.set(fresh())
}

export function setText(text: string): void {
  speakStore.set((s) => ({ ...s, text }))
}

export function setSpeakVoice(voiceId: number): void {
  rememberVoice(VOICE_KEY, voiceId)
  speakStore.set((s) => ({ ...s, voiceId, speed: null }))
}

export function setSpeed(speed: number | null): void {
  speakStore.set((s) => ({ ...s, speed }))
}

export const isRunning = (s: Pick<SpeakState, 'starting' | 'status'>) =>
  s.starting || s.status === 'queued' || s.status === 'running'

/** Queues `text` in `voiceId`; audio plays as each sentence (or piece) is made. */
export async function generate(
  voiceId: number,
  text: string,
  speed: number | null,
  unit: SpeakState['unit'] = 'sentence',
): Promise<Job | null> {
  if (isRunning(speakStore.get())) return null
  getPlayer().stop()
  chunks = []
  early.clear()
  requestedAt = performance.now()
  speakStore.set((s) => ({
    ...fresh(),
    text: s.text,
    voiceId: s.voiceId,
    speed: s.speed,
    starting: true,
    unit,
  }))
  try {
    const job = await api.speak(String(voiceId), text, speed)
    speakStore.set((s) => ({ ...s, job, status: s.status ?? job.status, starting: false }))
    early.take(job.id).forEach(apply)
    return job
  } catch (submitError) {
    early.clear()
    speakStore.set((s) => ({ ...s, starting: false, submitError }))
    return null
  }
}

export async function cancelSpeech(): Promise<void> {
  const { job } = speakStore.get()
  getPlayer().stop()
  speakStore.set((s) => ({ ...s, playing: false }))
  if (!job || !isRunning(speakStore.get())) return
  speakStore.set((s) => ({ ...s, cancelling: true }))
  try {
    await api.cancelJob(job.id)
  } catch (e) {
    speakStore.set((s) => ({ ...s, cancelling: false }))
    throw e
  }
}

/** Plays what was made again, from the start. */
/** The whole speech as one clip: the pieces with the pauses the saved WAV has between them. */
export function speechClip(): { samples: Float32Array; sampleRate: number } | null {
  const parts = chunks.filter(Boolean)
  if (!parts.length) return null
  const sampleRate = parts[0].sampleRate
  const gaps = parts.map((c, i) => (i > 0 ? Math.round(c.gapBefore * sampleRate) : 0))
  const samples = new Float32Array(parts.reduce((n, c, i) => n + gaps[i] + c.samples.length, 0))
  let at = 0
  parts.forEach((c, i) => {
    at += gaps[i]
    samples.set(c.samples, at)
    at += c.samples.length
  })
  return { samples, sampleRate }
}

/** Loudness per slice of the speech (0…1, `buckets` of them) for its waveform. */
export function speechPeaks(buckets = 800): number[] {
  const clip = speechClip()
  if (!clip) return []
  const { samples } = clip
  const size = Math.max(1, Math.ceil(samples.length / buckets))
  const peaks: number[] = []
  for (let i = 0; i < samples.length; i += size) {
    let peak = 0
    for (let j = i; j < Math.min(samples.length, i + size); j++) peak = Math.max(peak, Math.abs(samples[j]))
    peaks.push(Math.min(1, peak))
  }
  return peaks
}

/** Plays the finished speech from `seconds` (the scrubber's seek; 0 plays it again). */
export function playFrom(seconds: number): void {
  const clip = speechClip()
  const playing = !!clip && getPlayer().playFrom(clip.samples, clip.sampleRate, seconds)
  speakStore.set((s) => ({ ...s, playing }))
}

export function playAgain(): void {
  playFrom(0)
}

/** Where playback of the finished speech is, in seconds; null when it is not playing. */
export function playbackPosition(): number | null {
  return player?.position() ?? null
}

export function stopPlayback(): void {
  getPlayer().stop()
  speakStore.set((s) => (s.playing ? { ...s, playing: false } : s))
}

/** Copies the finished WAV to `path`; returns where it went. */
export async function saveSpeech(path: string): Promise<string> {
  const { job } = speakStore.get()
  if (!job) throw new Error('Generate the speech first.')
  speakStore.set((s) => ({ ...s, saving: true }))
  try {
    const saved = await api.saveSpeech(job.id, path)
    speakStore.set((s) => ({ ...s, savedPath: saved }))
    return saved
  } finally {
    speakStore.set((s) => ({ ...s, saving: false }))
  }
}

export function clearSubmitError(): void {
  speakStore.set((s) => ({ ...s, submitError: null }))
}

/** What the Speak screen follows: the runtime's events, and the audio from the channel
 * (never as a `speech_audio` event: the app sends that as binary). */
type SpeakInput = Exclude<RuntimeEvent, { type: 'speech_audio' }> | SpeechAudio

function apply(e: SpeakInput): void {
  switch (e.type) {
    case 'job_started':
      speakStore.set((s) => ({ ...s, status: 'running' }))
      break
    case 'job_progress':
      speakStore.set((s) => ({
        ...s,
        status: s.status === 'queued' ? 'running' : s.status,
        sentencesDone: Math.max(s.sentencesDone, e.windows_done),
        sentencesTotal: e.windows_total,
        etaSeconds: e.eta_seconds,
      }))
      break
    case 'speech_audio': {
      chunks[e.index] = { samples: e.samples, sampleRate: e.sample_rate, gapBefore: e.gap_before }
      const playing = getPlayer().push(e.index, e.samples, e.sample_rate, e.gap_before)
      speakStore.set((s) => ({
        ...s,
        status: s.status === 'queued' ? 'running' : s.status,
        pieces: s.pieces + 1,
        // A piece's total counts pieces, not what the progress counts.
        sentencesTotal: s.unit === 'sentence' ? Math.max(s.sentencesTotal, e.total) : s.sentencesTotal,
        audioSeconds: s.audioSeconds + e.samples.length / e.sample_rate,
        firstAudioMs: s.firstAudioMs ?? Math.round(performance.now() - requestedAt),
        playing: s.playing || playing,
        silent: !playing && !getPlayer().playing,
      }))
      break
    }
    case 'job_finished':
      if (e.status !== 'done') getPlayer().stop()
      speakStore.set((s) => ({
        ...s,
        status: e.status,
        job: s.job ? { ...s.job, status: e.status, error: e.error } : s.job,
        error: e.error,
        cancelling: false,
        etaSeconds: null,
        playing: e.status === 'done' ? s.playing : false,
        sentencesDone: e.status === 'done' ? s.sentencesTotal : s.sentencesDone,
      }))
      break
    default:
      break
  }
}

function follow(e: SpeakInput): void {
  const s = speakStore.get()
  if (!('job_id' in e) || typeof e.job_id !== 'number') return
  if (s.job && e.job_id === s.job.id) apply(e)
  else if (s.starting && !s.job) early.hold(e)
}

/** Runtime events for the Speak screen's job. */
export function handleSpeakEvent(e: RuntimeEvent): void {
  // The app sends speech audio over its channel, never as an event.
  if (e.type !== 'speech_audio') follow(e)
}

/** A sentence of audio from the speech audio channel. */
export function handleSpeechAudio(audio: SpeechAudio): void {
  follow(audio)
}

/** "Hello there, world" → "hello-there-world.wav" */
export function suggestedName(text: string): string {
  const words = text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, ' ')
    .split(/\s+/)
    .filter(Boolean)
    .slice(0, 5)
  return `${words.join('-') || 'speech'}.wav`
}

export function useSpeak(): SpeakState {
  return useStore(speakStore)
}

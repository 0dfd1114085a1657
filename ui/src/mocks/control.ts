// Shared state of the stand-ins (mock builds only): what tests configure before the page
// loads (window.__izwiMockConfig, or URL parameters by hand) and what they read back
// (window.__izwiMock: the commands called, the fixtures found).

import type { ErrorKind } from '../bindings'

export interface MockConfig {
  /** Milliseconds between replayed job events when the recording has no timing. */
  jobStepMs: number
  /** A synthesised download takes about this long. */
  downloadMs: number
  /** Milliseconds between the synthesised chat events (each word of a reply, each level). */
  chatStepMs: number
  /** What choosePaths answers for files (default: the recorded job's file; for a
   * script, none; for a model file, a chat model's .gguf) and for folders (null: the
   * user cancelled). */
  openFiles: string[] | null
  openFolder: string | null
  /** What chooseSavePath answers; default: ~/Documents/<suggested name>. */
  savePath: string | null
  /** Files Izwi was "opened with" (takeOpenedFiles). */
  openedFiles: string[]
  /** Model ids whose download fails, with the error the command returns. */
  failDownloads: Record<string, { kind: ErrorKind; message: string }>
  /** Installs a SYNTHESISED Qwen3-TTS Base and a VoiceDesign model (no real one can be
   * installed here to record). */
  qwen3Models: boolean
  /** Lines (from 1) of a batch that the SYNTHESISED Whisper check flags, until re-taken. */
  flaggedLines: number[]
}

export interface MockCall {
  cmd: string
  args: unknown[]
  at: number
}

export interface MockHandle {
  config: MockConfig
  calls: MockCall[]
  /** The recorded fixture files the stand-ins replay. */
  fixtures: { found: string[] }
  /** The recorded answers, for tests to compare the screen with. */
  recorded: Record<string, unknown>
  /** Simulates files dropped on the window. */
  drop: (paths: string[]) => void
  /** Simulates a drag hovering over the window (shows the overlay) or leaving. */
  drag: (paths: string[] | null) => void
}

declare global {
  interface Window {
    __izwiMockConfig?: Partial<MockConfig>
    __izwiMock?: MockHandle
  }
}

function fromUrl(): Partial<MockConfig> {
  if (typeof location === 'undefined') return {}
  const q = new URLSearchParams(location.search)
  const out: Partial<MockConfig> = {}
  if (q.has('jobStepMs')) out.jobStepMs = Number(q.get('jobStepMs'))
  if (q.has('downloadMs')) out.downloadMs = Number(q.get('downloadMs'))
  if (q.has('chatStepMs')) out.chatStepMs = Number(q.get('chatStepMs'))
  if (q.has('opened')) out.openedFiles = q.getAll('opened')
  return out
}

const defaults: MockConfig = {
  jobStepMs: 250,
  downloadMs: 3000,
  chatStepMs: 80,
  openFiles: null,
  openFolder: '/home/user/Recordings',
  savePath: null,
  openedFiles: [],
  failDownloads: {},
  qwen3Models: false,
  flaggedLines: [],
}

const dragHandlers = new Set<(e: { type: string; paths?: string[] }) => void>()

export const mock: MockHandle = {
  config: { ...defaults, ...(typeof window !== 'undefined' ? window.__izwiMockConfig : {}), ...fromUrl() },
  calls: [],
  fixtures: { found: [] },
  recorded: {},
  drop(paths) {
    for (const h of dragHandlers) h({ type: 'drop', paths })
  },
  drag(paths) {
    for (const h of dragHandlers) h(paths ? { type: 'enter', paths } : { type: 'leave' })
  },
}

export function onDrag(handler: (e: { type: string; paths?: string[] }) => void): () => void {
  dragHandlers.add(handler)
  return () => dragHandlers.delete(handler)
}

if (typeof window !== 'undefined') window.__izwiMock = mock

export function logCall(cmd: string, args: unknown[]): void {
  mock.calls.push({ cmd, args: JSON.parse(JSON.stringify(args ?? [])), at: Date.now() })
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

// Errors from the Rust side, typed, and said in plain words.

import type { AppError } from '../bindings'

export type ErrorKind = 'not_found' | 'invalid' | 'model' | 'audio' | 'network' | 'disk' | 'cancelled' | 'internal'

/** A command's `AppError` (or anything thrown on the way) as an exception. */
export class ApiError extends Error {
  readonly kind: ErrorKind | string
  readonly command: string

  constructor(kind: string, message: string, command = '') {
    super(message)
    this.name = 'ApiError'
    this.kind = kind
    this.command = command
  }

  static from(value: unknown, command = ''): ApiError {
    if (value instanceof ApiError) return value
    if (isAppError(value)) return new ApiError(value.kind, value.message, command)
    if (value instanceof Error) return new ApiError('internal', value.message, command)
    return new ApiError('internal', typeof value === 'string' ? value : 'Something went wrong.', command)
  }

  get cancelled(): boolean {
    return this.kind === 'cancelled'
  }
}

function isAppError(value: unknown): value is AppError {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AppError).kind === 'string' &&
    typeof (value as AppError).message === 'string'
  )
}

/** What happened and what to do, by kind; the runtime's message adds the particulars. */
const LEADS: Record<string, string> = {
  not_found: 'It is no longer there.',
  invalid: 'That did not work.',
  model: 'The model could not run. Try again; if it fails again, check the model on the Models page.',
  audio: 'Izwi could not read this audio. Check that the file plays in another app, or convert it to WAV or MP3.',
  network: 'Could not reach the model hub. Check the connection and try again.',
  disk: 'Could not write to the disk. Check the free space and permissions.',
  cancelled: 'Cancelled.',
  device: 'The microphone or speaker could not be used. Check the ones chosen in the voice chat settings.',
  interrupted: 'Izwi was closed while this was running. Queue it again to finish it.',
  internal: 'Something went wrong inside Izwi. Try again; if it happens again, restart Izwi.',
}

/**
 * Causes the kind alone does not tell, recognised in the message: each says what happened
 * and what to do instead of the generic lead.
 */
const CAUSES: { test: RegExp; title: (message: string) => string }[] = [
  {
    // tauri-plugin-opener on Linux talks to the desktop over D-Bus; without a session bus
    // (a bare X server, a container) there is no file manager to ask.
    test: /d-?bus|org\.freedesktop|could not open the file manager/i,
    title: (m) => {
      const at = /file manager at (.+?): /.exec(m)?.[1]
      return `No file manager could be opened: this session has no desktop bus (D-Bus).${at ? ` Open ${at} yourself.` : ''}`
    },
  },
]

/** One short sentence for a person, with the technical detail kept apart. */
export function describeError(error: unknown): { title: string; detail: string } {
  const e = ApiError.from(error)
  const cause = CAUSES.find((c) => c.test.test(e.message))
  if (cause) return { title: cause.title(e.message), detail: '' }
  const lead = LEADS[e.kind] ?? LEADS.internal
  const detail = humanise(e.message)
  // Some messages already say it all in plain words (the Rust side writes them for people).
  if (!detail || detail.toLowerCase() === lead.toLowerCase()) return { title: lead, detail: '' }
  return { title: lead, detail }
}

/** What izwi-audio says when it cannot read a file (its error texts). */
const AUDIO_FAILURE =
  /audio file not found|cannot read audio file|unsupported or unrecognised audio format|unsupported audio codec|corrupt or truncated audio|no audio track|contains no audio samples|audio file is empty|audio is too long/i

/** A job's recorded failure (a string in the store) as an error of the right kind. */
export function jobError(message: string | null | undefined, status = 'failed'): { kind: string; message: string } {
  const text = message ?? ''
  if (status === 'interrupted') return { kind: 'interrupted', message: '' }
  let kind: ErrorKind = 'model'
  if (AUDIO_FAILURE.test(text)) kind = 'audio'
  else if (/english-only|cannot translate/i.test(text)) kind = 'invalid'
  else if (/no space left|disk full/i.test(text)) kind = 'disk'
  return { kind, message: text }
}

/** The message alone, first letter capitalised, one line. */
export function humanise(message: string | null | undefined): string {
  if (!message) return ''
  const line = message.replace(/\s+/g, ' ').trim()
  return line.charAt(0).toUpperCase() + line.slice(1)
}

/** Why a job stopped, in plain words. */
export function jobFailureText(status: string, error: string | null | undefined): string {
  if (status === 'interrupted') {
    return error ? humanise(error) : 'Izwi was closed while this was running.'
  }
  // A job the user did not cancel says why (an API request that ran out of time).
  if (status === 'cancelled') return error ? humanise(error) : 'Cancelled.'
  if (status === 'failed') return error ? humanise(error) : 'It failed without saying why.'
  return ''
}

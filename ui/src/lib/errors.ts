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

const LEADS: Record<string, string> = {
  not_found: 'It is no longer there.',
  invalid: 'That did not work.',
  model: 'The model could not run.',
  audio: 'The audio could not be read.',
  network: 'Could not reach the model hub. Check the connection and try again.',
  disk: 'Could not write to the disk. Check the free space and permissions.',
  cancelled: 'Cancelled.',
  internal: 'Something went wrong inside Izwi.',
}

/** One short sentence for a person, with the technical detail kept apart. */
export function describeError(error: unknown): { title: string; detail: string } {
  const e = ApiError.from(error)
  const lead = LEADS[e.kind] ?? LEADS.internal
  const detail = humanise(e.message)
  // Some messages already say it all in plain words (the Rust side writes them for people).
  if (!detail || detail.toLowerCase() === lead.toLowerCase()) return { title: lead, detail: '' }
  return { title: lead, detail }
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
  if (status === 'cancelled') return 'Cancelled.'
  if (status === 'failed') return error ? humanise(error) : 'It failed without saying why.'
  return ''
}

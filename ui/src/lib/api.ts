// A thin layer over the generated bindings: every command returns its data or throws an ApiError.

import { commands } from '../bindings'
import { ApiError } from './errors'

type Commands = typeof commands
type Data<R> = R extends { status: 'ok'; data: infer T } ? T : never

/** `commands` with the Result unwrapped: resolves to the data, rejects with an ApiError. */
export type Api = {
  [K in keyof Commands]: Commands[K] extends (...args: infer A) => Promise<infer R>
    ? (...args: A) => Promise<Data<R>>
    : never
}

async function call(name: string, args: unknown[]): Promise<unknown> {
  const fn = (commands as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name]
  if (typeof fn !== 'function') throw new ApiError('internal', `Unknown command ${name}.`, name)
  let result: unknown
  try {
    result = await fn(...args)
  } catch (e) {
    throw ApiError.from(e, name)
  }
  const r = result as { status?: string; data?: unknown; error?: unknown }
  if (r && r.status === 'ok') return r.data
  if (r && r.status === 'error') throw ApiError.from(r.error, name)
  // Commands generated in "throw" mode return the data itself.
  return result
}

// Looked up at call time, so a test's mocked `commands` is always the one called.
export const api: Api = new Proxy({} as Api, {
  get:
    (_target, name) =>
    (...args: unknown[]) =>
      call(String(name), args),
})

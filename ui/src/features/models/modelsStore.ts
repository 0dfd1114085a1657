// The model catalog, downloads in flight (from `download` events) and per-model errors.

import type { ModelInfo } from '../../bindings'
import { api } from '../../lib/api'
import { ApiError } from '../../lib/errors'
import type { RuntimeEvent } from '../../lib/events'
import { createStore, useStore } from '../../lib/store'

export interface DownloadState {
  file: string
  downloaded: number
  total: number
  bytesPerSecond: number
  etaSeconds: number | null
  cancelling: boolean
}

export interface ModelsState {
  models: ModelInfo[]
  loaded: boolean
  loadError: unknown
  downloads: Record<string, DownloadState>
  /** The last thing that failed on a model's card. */
  errors: Record<string, { action: 'download' | 'remove'; error: unknown }>
  removing: Record<string, boolean>
  importing: boolean
}

const initial: ModelsState = {
  models: [],
  loaded: false,
  loadError: null,
  downloads: {},
  errors: {},
  removing: {},
  importing: false,
}

export const modelsStore = createStore<ModelsState>(initial)

/** When each download's command settled: events still in flight after that are stale. */
const settledAt = new Map<string, number>()
const STALE_MS = 3000

export function resetModels(): void {
  settledAt.clear()
  modelsStore.set(initial)
}

function omit<T>(record: Record<string, T>, key: string): Record<string, T> {
  if (!(key in record)) return record
  const next = { ...record }
  delete next[key]
  return next
}

function putModel(model: ModelInfo) {
  modelsStore.set((s) => {
    const i = s.models.findIndex((m) => m.id === model.id)
    const models = i >= 0 ? s.models.map((m, j) => (j === i ? model : m)) : [...s.models, model]
    return { ...s, models }
  })
}

export async function loadModels(): Promise<ModelInfo[]> {
  try {
    const models = await api.listModels()
    modelsStore.set((s) => ({ ...s, models, loaded: true, loadError: null }))
    return models
  } catch (loadError) {
    modelsStore.set((s) => ({ ...s, loaded: true, loadError }))
    return []
  }
}

export async function downloadModel(id: string): Promise<void> {
  const model = modelsStore.get().models.find((m) => m.id === id)
  settledAt.delete(id)
  modelsStore.set((s) => ({
    ...s,
    errors: omit(s.errors, id),
    downloads: {
      ...s.downloads,
      [id]: s.downloads[id] ?? {
        file: '',
        downloaded: 0,
        total: model?.size_bytes ?? 0,
        bytesPerSecond: 0,
        etaSeconds: null,
        cancelling: false,
      },
    },
  }))
  try {
    const installed = await api.downloadModel(id)
    settledAt.set(id, Date.now())
    putModel(installed)
    modelsStore.set((s) => ({ ...s, downloads: omit(s.downloads, id) }))
  } catch (e) {
    const error = ApiError.from(e)
    settledAt.set(id, Date.now())
    modelsStore.set((s) => ({
      ...s,
      downloads: omit(s.downloads, id),
      errors: error.cancelled ? s.errors : { ...s.errors, [id]: { action: 'download', error } },
    }))
  }
}

export async function cancelDownload(id: string): Promise<void> {
  modelsStore.set((s) =>
    s.downloads[id] ? { ...s, downloads: { ...s.downloads, [id]: { ...s.downloads[id], cancelling: true } } } : s,
  )
  try {
    await api.cancelDownload(id)
  } catch (error) {
    modelsStore.set((s) => ({
      ...s,
      downloads: s.downloads[id] ? { ...s.downloads, [id]: { ...s.downloads[id], cancelling: false } } : s.downloads,
      errors: { ...s.errors, [id]: { action: 'download', error } },
    }))
  }
}

export async function removeModel(id: string): Promise<number | null> {
  modelsStore.set((s) => ({ ...s, removing: { ...s.removing, [id]: true }, errors: omit(s.errors, id) }))
  try {
    const freed = await api.removeModel(id)
    // The catalog entry stays (not installed); an imported model may disappear.
    await loadModels()
    return freed
  } catch (error) {
    modelsStore.set((s) => ({ ...s, errors: { ...s.errors, [id]: { action: 'remove', error } } }))
    return null
  } finally {
    modelsStore.set((s) => ({ ...s, removing: omit(s.removing, id) }))
  }
}

export async function importModel(path: string, name: string | null = null): Promise<ModelInfo> {
  modelsStore.set((s) => ({ ...s, importing: true }))
  try {
    const model = await api.importModel(path, name)
    putModel(model)
    return model
  } finally {
    modelsStore.set((s) => ({ ...s, importing: false }))
  }
}

export function dismissModelError(id: string): void {
  modelsStore.set((s) => ({ ...s, errors: omit(s.errors, id) }))
}

/** Download progress from the runtime. Downloads started before this window loaded show up too. */
export function handleModelEvent(e: RuntimeEvent): void {
  if (e.type === 'download') {
    if (e.done) return // the command's answer installs it (or a reload will)
    const settled = settledAt.get(e.model_id)
    if (settled != null && Date.now() - settled < STALE_MS) return
    modelsStore.set((s) => ({
      ...s,
      downloads: {
        ...s.downloads,
        [e.model_id]: {
          file: e.file,
          downloaded: e.downloaded,
          total: e.total,
          bytesPerSecond: e.bytes_per_second,
          etaSeconds: e.eta_seconds,
          cancelling: s.downloads[e.model_id]?.cancelling ?? false,
        },
      },
    }))
  }
}

export const isTranscriber = (m: ModelInfo) => m.task === 'transcribe'
export const isInstalled = (m: ModelInfo) => m.status === 'installed'

export function installedTranscribers(models: ModelInfo[]): ModelInfo[] {
  return models.filter((m) => isTranscriber(m) && isInstalled(m))
}

export function useModels(): ModelsState {
  return useStore(modelsStore)
}

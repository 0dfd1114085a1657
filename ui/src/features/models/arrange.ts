// Where imported models show on the Models page: an import that is a catalog model shows on
// that catalog card; any other import sits among the catalog models of its task, after the
// largest one no bigger than it (the catalog lists each family from small to large).

import type { ModelInfo } from '../../bindings'

/** A card: a model, and the imports that are this same catalog model. */
export interface ModelEntry {
  model: ModelInfo
  imports: ModelInfo[]
}

/** The catalog entry an import was recognised as, when the hub says (izwi-hub `ModelInfo.catalog_id`). */
export function catalogMatch(model: ModelInfo): string | null {
  const id = model.catalog_id
  return model.source.kind === 'local' && typeof id === 'string' && id ? id : null
}

export function arrangeModels(models: ModelInfo[]): ModelEntry[] {
  const catalog = models.filter((m) => m.source.kind === 'catalog')
  const entries: ModelEntry[] = catalog.map((model) => ({ model, imports: [] }))
  const byId = new Map(entries.map((e) => [e.model.id, e]))
  for (const m of models) {
    if (m.source.kind === 'catalog') continue
    const match = catalogMatch(m)
    const card = match ? byId.get(match) : undefined
    if (card) {
      card.imports.push(m)
      continue
    }
    const sameTask = (e: ModelEntry) => e.model.task === m.task && e.model.source.kind === 'catalog'
    let at = entries.findLastIndex((e) => sameTask(e) && e.model.size_bytes <= m.size_bytes) + 1
    if (at === 0) {
      const first = entries.findIndex(sameTask)
      at = first >= 0 ? first : entries.length
    }
    entries.splice(at, 0, { model: m, imports: [] })
  }
  return entries
}

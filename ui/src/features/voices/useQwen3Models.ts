// The installed Qwen3-TTS models of one variant (the runtime reads it from each model's
// config.json), asked again whenever the model list changes.

import { useEffect, useState } from 'react'
import type { ModelInfo, Qwen3Variant } from '../../bindings'
import { api } from '../../lib/api'
import { isInstalled, useModels } from '../models/modelsStore'
import { isQwen3Model } from './voicesStore'

/** None until the runtime has answered; an answer that fails offers none. */
export function useQwen3Models(variant: Qwen3Variant): ModelInfo[] | null {
  const { models } = useModels()
  const [ids, setIds] = useState<string[] | null>(null)
  useEffect(() => {
    let live = true
    api
      .qwen3Models(variant)
      .then((found) => live && setIds(found))
      .catch(() => live && setIds([]))
    return () => {
      live = false
    }
  }, [variant, models])
  if (ids == null) return null
  return models.filter((m) => isQwen3Model(m) && isInstalled(m) && ids.includes(m.id))
}

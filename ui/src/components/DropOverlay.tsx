// Files or folders dragged over the window: a full-window target; dropping queues them,
// unless an open dialog claims drops (lib/dropClaim).

import { getCurrentWebview } from '@tauri-apps/api/webview'
import { useEffect, useState } from 'react'
import { currentDropClaim, useDropClaim } from '../lib/dropClaim'
import { plural } from '../lib/format'
import { Icon } from './Icon'

export function DropOverlay({ onDrop }: { onDrop: (paths: string[]) => void }) {
  const [dragging, setDragging] = useState<number | null>(null)
  const claim = useDropClaim()
  useEffect(() => {
    let unlisten: (() => void) | null = null
    let cancelled = false
    try {
      getCurrentWebview()
        .onDragDropEvent((e) => {
          const p = e.payload
          if (p.type === 'enter') setDragging(p.paths.length)
          else if (p.type === 'over') setDragging((d) => d ?? 0)
          else if (p.type === 'leave') setDragging(null)
          else if (p.type === 'drop') {
            setDragging(null)
            if (p.paths.length) (currentDropClaim()?.onDrop ?? onDrop)(p.paths)
          }
        })
        .then((fn) => {
          if (cancelled) fn()
          else unlisten = fn
        })
        .catch(() => {})
    } catch {
      // Not inside Tauri (plain browser): no native drops.
    }
    return () => {
      cancelled = true
      unlisten?.()
    }
  }, [onDrop])
  if (dragging == null) return null
  return (
    <div className="drop-overlay" role="presentation">
      <div className="drop-target">
        <Icon name="upload" size={28} />
        <div className="drop-title">{claim?.title ?? 'Drop to transcribe'}</div>
        {!claim && (
          <div className="drop-hint">
            {dragging ? plural(dragging, 'item') : 'Files or folders'} · folders are searched for audio and video
          </div>
        )}
      </div>
    </div>
  )
}

// A URL an <audio> element can play for a local file. WebKitGTK hands media URLs to
// GStreamer, which cannot read Tauri's asset: scheme (WebKit bug 146351: the element
// fails with "not supported"), so on Linux the file is fetched through the scheme, which
// does work, and played from a blob URL. Elsewhere the asset URL plays as it is.

import { convertFileSrc } from '@tauri-apps/api/core'
import { useEffect, useState } from 'react'

const viaBlob =
  typeof navigator !== 'undefined' && /Linux/.test(navigator.userAgent) && !/Android/.test(navigator.userAgent)

export interface MediaSrc {
  src: string | null
  /** The file could not be read (moved, deleted, outside the asset scope). */
  failed: boolean
}

export function useMediaSrc(path: string | null): MediaSrc {
  const [state, setState] = useState<MediaSrc>({ src: null, failed: false })

  useEffect(() => {
    if (!path) {
      setState({ src: null, failed: false })
      return
    }
    let url: string
    try {
      url = convertFileSrc(path)
    } catch {
      setState({ src: null, failed: true })
      return
    }
    if (!viaBlob) {
      setState({ src: url, failed: false })
      return
    }
    let live = true
    let blobUrl: string | null = null
    setState({ src: null, failed: false })
    fetch(url)
      .then((r) => (r.ok ? r.blob() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then((blob) => {
        if (!live) return
        blobUrl = URL.createObjectURL(blob)
        setState({ src: blobUrl, failed: false })
      })
      .catch(() => live && setState({ src: null, failed: true }))
    return () => {
      live = false
      if (blobUrl) URL.revokeObjectURL(blobUrl)
    }
  }, [path])

  return state
}

// A URL an <audio> element can play for a local file. WebKitGTK hands media URLs to
// GStreamer, which cannot read Tauri's asset: scheme (WebKit bug 146351: the element
// fails with "not supported"), so on Linux the file is fetched through the scheme, which
// does work, and played from a blob URL. Elsewhere the asset URL plays as it is.

import { convertFileSrc } from '@tauri-apps/api/core'
import { useEffect, useMemo, useState } from 'react'

const viaBlob =
  typeof navigator !== 'undefined' && /Linux/.test(navigator.userAgent) && !/Android/.test(navigator.userAgent)

export interface MediaSrc {
  src: string | null
  /** The file could not be read (moved, deleted, outside the asset scope). */
  failed: boolean
}

const NONE: MediaSrc = { src: null, failed: false }

function assetUrl(path: string): string | null {
  try {
    return convertFileSrc(path)
  } catch {
    return null
  }
}

export function useMediaSrc(path: string | null): MediaSrc {
  const url = useMemo(() => (path ? assetUrl(path) : null), [path])
  // What the fetch gave, and for which URL (a stale answer is ignored).
  const [fetched, setFetched] = useState<{ url: string; media: MediaSrc } | null>(null)

  useEffect(() => {
    if (!viaBlob || !url) return
    let live = true
    let blobUrl: string | null = null
    fetch(url)
      .then((r) => (r.ok ? r.blob() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then((blob) => {
        if (!live) return
        blobUrl = URL.createObjectURL(blob)
        setFetched({ url, media: { src: blobUrl, failed: false } })
      })
      .catch(() => live && setFetched({ url, media: { src: null, failed: true } }))
    return () => {
      live = false
      if (blobUrl) URL.revokeObjectURL(blobUrl)
      // Forget the revoked URL, so that coming back to this file fetches it anew.
      setFetched((f) => (f?.url === url ? null : f))
    }
  }, [url])

  if (!path) return NONE
  if (!url) return { src: null, failed: true }
  if (!viaBlob) return { src: url, failed: false }
  return fetched?.url === url ? fetched.media : NONE
}

// Exporting a transcript: the save dialog, then the Rust side writes the file.

import type { ExportFormat } from '../../bindings'
import { api } from '../../lib/api'
import { describeError } from '../../lib/errors'
import { stem } from '../../lib/format'
import { chooseSavePath } from '../../lib/choose'
import { toast } from '../../lib/toast'

export const EXPORT_FORMATS: { id: ExportFormat; label: string; hint: string }[] = [
  { id: 'txt', label: 'Plain text', hint: '.txt' },
  { id: 'srt', label: 'SubRip subtitles', hint: '.srt' },
  { id: 'vtt', label: 'WebVTT subtitles', hint: '.vtt' },
  { id: 'json', label: 'JSON with timings', hint: '.json' },
]

/** Asks where to save, writes the file through the Rust side, says where it went. */
export async function exportTranscriptAs(
  jobId: number,
  format: ExportFormat,
  title: string,
  sourcePath?: string | null,
): Promise<string | null> {
  const path = await chooseSavePath(
    `Export ${format.toUpperCase()}`,
    `${stem(title) || 'transcript'}.${format}`,
    sourcePath,
  )
  if (!path) return null
  try {
    const written = await api.exportTranscript(jobId, format, path)
    toast({ kind: 'success', title: `Saved ${format.toUpperCase()}`, detail: written || path })
    return written || path
  } catch (e) {
    const { title: t, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not export: ${t}`, detail })
    return null
  }
}

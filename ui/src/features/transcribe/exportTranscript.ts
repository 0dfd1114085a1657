// Exporting a transcript: the save dialog, then the Rust side writes the file.

import { save } from '@tauri-apps/plugin-dialog'
import type { ExportFormat } from '../../bindings'
import { api } from '../../lib/api'
import { describeError } from '../../lib/errors'
import { dirname, joinPath, stem } from '../../lib/format'
import { toast } from '../../lib/toast'

export const EXPORT_FORMATS: { id: ExportFormat; label: string; hint: string }[] = [
  { id: 'txt', label: 'Plain text', hint: '.txt' },
  { id: 'srt', label: 'SubRip subtitles', hint: '.srt' },
  { id: 'vtt', label: 'WebVTT subtitles', hint: '.vtt' },
  { id: 'json', label: 'JSON with timings', hint: '.json' },
]

/** Where the save dialog starts: beside the source file ("/rec/talk.mp3" → "/rec/talk.srt"), else just a name. */
export function exportDefaultPath(format: ExportFormat, title: string, sourcePath?: string | null): string {
  const name = `${stem(sourcePath || title) || 'transcript'}.${format}`
  const dir = sourcePath ? dirname(sourcePath) : ''
  return dir ? joinPath(dir, name) : name
}

/** Asks where to save, writes the file through the Rust side, says where it went. */
export async function exportTranscriptAs(
  jobId: number,
  format: ExportFormat,
  title: string,
  sourcePath?: string | null,
): Promise<string | null> {
  let path: string | null
  try {
    path = await save({
      title: `Export ${format.toUpperCase()}`,
      defaultPath: exportDefaultPath(format, title, sourcePath),
      filters: [{ name: format.toUpperCase(), extensions: [format] }],
    })
  } catch (e) {
    toast({ kind: 'error', title: 'Could not open the save dialog.', detail: String(e) })
    return null
  }
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

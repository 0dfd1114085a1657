// Getting files into the queue: the Open dialogs, drops, and files given at launch.

import { open } from '@tauri-apps/plugin-dialog'
import { toast } from '../../lib/toast'
import { basename, plural } from '../../lib/format'
import { navigate, openTranscript } from '../../lib/nav'
import { jobsStore, setWaiting, submitFiles } from './jobsStore'
import { currentChoices } from './options'

export const MEDIA_EXTENSIONS = [
  'wav',
  'mp3',
  'flac',
  'ogg',
  'oga',
  'opus',
  'm4a',
  'aac',
  'mp4',
  'm4v',
  'mov',
  'mkv',
  'webm',
  'wma',
  'aiff',
  'aif',
]

/** Queues files with the current choices; without an installed model they wait for one. */
export async function queueFiles(paths: string[], opts: { openWhenDone?: boolean } = {}): Promise<void> {
  if (!paths.length) return
  navigate('transcribe')
  const { options } = currentChoices()
  if (!options) {
    setWaiting([...new Set([...jobsStore.get().waiting, ...paths])])
    toast({
      kind: 'info',
      title: 'Install a transcription model first',
      detail: `${plural(paths.length, 'file')} will be transcribed once one is installed.`,
    })
    return
  }
  const jobs = await submitFiles(paths, options, opts)
  // Show the first new file's transcript as it comes in.
  if (jobs && jobs.length) openTranscript(jobs[0].id)
  if (jobs && jobs.length === 0) {
    toast({
      kind: 'info',
      title: 'No audio or video found',
      detail:
        paths.length === 1 ? `Nothing to transcribe in ${basename(paths[0])}.` : 'Nothing to transcribe in those.',
    })
  }
}

/** Files that waited for a model, now that one is installed. */
export async function flushWaiting(): Promise<void> {
  const waiting = jobsStore.get().waiting
  if (!waiting.length || !currentChoices().options) return
  setWaiting([])
  await queueFiles(waiting, { openWhenDone: waiting.length === 1 })
}

function asList(picked: string | string[] | null): string[] {
  if (!picked) return []
  return Array.isArray(picked) ? picked : [picked]
}

export async function pickFiles(): Promise<void> {
  let picked: string | string[] | null
  try {
    picked = await open({
      multiple: true,
      directory: false,
      title: 'Choose audio or video files',
      filters: [
        { name: 'Audio and video', extensions: MEDIA_EXTENSIONS },
        { name: 'All files', extensions: ['*'] },
      ],
    })
  } catch (e) {
    toast({ kind: 'error', title: 'Could not open the file picker.', detail: String(e) })
    return
  }
  await queueFiles(asList(picked))
}

export async function pickFolder(): Promise<void> {
  let picked: string | string[] | null
  try {
    picked = await open({ multiple: false, directory: true, title: 'Choose a folder of recordings' })
  } catch (e) {
    toast({ kind: 'error', title: 'Could not open the folder picker.', detail: String(e) })
    return
  }
  await queueFiles(asList(picked))
}

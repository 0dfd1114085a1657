// Getting files into the queue: the Open dialogs, drops, and files given at launch.

import { toast } from '../../lib/toast'
import { basename, plural } from '../../lib/format'
import { navigate, openTranscript } from '../../lib/nav'
import { choose } from '../../lib/choose'
import { jobsStore, setWaiting, submitFiles } from './jobsStore'
import { currentChoices } from './options'

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
  const queued = await submitFiles(paths, options, opts)
  const jobs = queued?.jobs
  // Show the first new file's transcript as it comes in.
  if (jobs && jobs.length) openTranscript(jobs[0].id)
  if (queued?.skipped.length) {
    toast({
      kind: 'info',
      title: `Skipped ${plural(queued.skipped.length, 'folder')} that could not be read`,
      detail: queued.skipped.map((s) => `${s.path}: ${s.reason}`).join('\n'),
    })
  }
  if (queued?.left_out) {
    toast({
      kind: 'info',
      title: `Queued the first ${plural(jobs?.length ?? 0, 'file')}`,
      detail: `${plural(queued.left_out, 'more file')} ${queued.left_out === 1 ? 'was' : 'were'} left out: queue them in smaller parts.`,
    })
  }
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

export async function pickFiles(): Promise<void> {
  await queueFiles(await choose('media_files'))
}

export async function pickFolder(): Promise<void> {
  await queueFiles(await choose('media_folder'))
}

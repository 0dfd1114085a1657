// Start-up: listen to the runtime first (so no event is missed), load state, then take the
// files Izwi was opened with and queue them, and those of every later launch.

import { toast } from './lib/toast'
import { handleBatchEvent } from './features/batch/batchStore'
import { listenChatEvents } from './features/chat/chatStore'
import { listenDictateEvents } from './features/dictate/dictateStore'
import { handleModelEvent, installedTranscribers, loadModels, modelsStore } from './features/models/modelsStore'
import { loadSettings } from './features/settings/settingsStore'
import { handleJobEvent, loadActiveJobs } from './features/transcribe/jobsStore'
import { flushWaiting, queueFiles } from './features/transcribe/queueFiles'
import { handleSpeakEvent, handleSpeechAudio } from './features/speak/speakStore'
import { isVoiceModel, loadVoices } from './features/voices/voicesStore'
import { events } from './bindings'
import { api } from './lib/api'
import { describeError } from './lib/errors'
import { subscribeRuntime } from './lib/events'
import { listenSpeechAudio } from './lib/speechAudio'

let booted: Promise<void> | null = null

export function boot(): Promise<void> {
  if (!booted) booted = run()
  return booted
}

/** For tests: allows boot() to run again. */
export function resetBoot(): void {
  booted = null
}

async function run(): Promise<void> {
  const sub = subscribeRuntime((e) => {
    handleJobEvent(e)
    handleModelEvent(e)
    handleSpeakEvent(e)
    handleBatchEvent(e)
  })
  await sub.ready
  await listenSpeechAudio(handleSpeechAudio).catch((e) => console.error('could not open the speech audio channel', e))
  // Also from the start: a voice chat still running (the window was reloaded) shows up, to be stopped.
  await listenChatEvents().catch((e) => console.error('could not listen to chat events', e))
  // A dictation the global shortcut starts shows on the Dictate screen, whichever screen is open.
  await listenDictateEvents().catch((e) => console.error('could not listen to dictation events', e))
  await Promise.all([loadSettings(), loadModels(), loadActiveJobs(), loadVoices()])

  // A voice model installed or removed adds or drops its voices in the library.
  const installedVoices = () =>
    modelsStore
      .get()
      .models.filter((m) => isVoiceModel(m) && m.status === 'installed')
      .map((m) => m.id)
      .join('|')
  let voiceModels = installedVoices()
  modelsStore.subscribe(() => {
    const now = installedVoices()
    if (now !== voiceModels) {
      voiceModels = now
      void loadVoices()
    }
  })

  // Files that waited for a model go as soon as one is installed.
  let hadModel = installedTranscribers(modelsStore.get().models).length > 0
  modelsStore.subscribe(() => {
    const has = installedTranscribers(modelsStore.get().models).length > 0
    if (has && !hadModel) void flushWaiting()
    hadModel = has
  })

  let opened: string[] = []
  try {
    opened = await api.takeOpenedFiles()
  } catch (e) {
    const { title, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not read the files Izwi was opened with: ${title}`, detail })
  }
  if (opened.length) await queueFiles(opened, { openWhenDone: true })

  // Izwi runs once: a second launch ("Open with" while it runs) hands its files here.
  try {
    await events.filesOpened.listen((e) => {
      void queueFiles(e.payload, { openWhenDone: e.payload.length === 1 })
    })
  } catch (e) {
    console.error('could not listen for files opened later', e)
  }
}

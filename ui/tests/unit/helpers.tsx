// Resets the app's module-level state between tests.

import { resetBoot } from '../../src/boot'
import { resetBatch } from '../../src/features/batch/batchStore'
import { resetChat } from '../../src/features/chat/chatStore'
import { resetDictate } from '../../src/features/dictate/dictateStore'
import { resetModels } from '../../src/features/models/modelsStore'
import { settingsStore } from '../../src/features/settings/settingsStore'
import { resetJobs } from '../../src/features/transcribe/jobsStore'
import { resetChoices } from '../../src/features/transcribe/options'
import { resetSpeak } from '../../src/features/speak/speakStore'
import { resetRecordSample } from '../../src/features/voices/recordSample'
import { resetVoices } from '../../src/features/voices/voicesStore'
import { resetRuntimeEvents } from '../../src/lib/events'
import { navStore } from '../../src/lib/nav'
import { toastStore } from '../../src/lib/toast'
import { resetBindings } from './bindingsMock'

export function resetApp(): void {
  localStorage.clear()
  resetBindings()
  resetRuntimeEvents()
  resetBoot()
  resetJobs()
  resetModels()
  resetChoices()
  resetSpeak()
  resetBatch()
  resetVoices()
  resetChat()
  resetDictate()
  resetRecordSample()
  settingsStore.set({ settings: null, error: null })
  navStore.set({ view: 'transcribe', transcribe: null, history: null })
  localStorage.clear()
  toastStore.set([])
}

// Resets the app's module-level state between tests.

import { resetBoot } from '../../src/boot'
import { resetModels } from '../../src/features/models/modelsStore'
import { settingsStore } from '../../src/features/settings/settingsStore'
import { resetJobs } from '../../src/features/transcribe/jobsStore'
import { resetChoices } from '../../src/features/transcribe/options'
import { resetRuntimeEvents } from '../../src/lib/events'
import { navStore } from '../../src/lib/nav'
import { resetBindings } from './bindingsMock'

export function resetApp(): void {
  resetBindings()
  resetRuntimeEvents()
  resetBoot()
  resetJobs()
  resetModels()
  resetChoices()
  settingsStore.set({ settings: null, error: null })
  navStore.set({ view: 'transcribe', transcribe: null, history: null })
  localStorage.clear()
}

// Stand-in for @tauri-apps/plugin-dialog (mock builds): answers from window.__izwiMock.config.

import { logCall, mock } from './control'
import { recordedJobs } from './fixtures'

interface OpenOptions {
  multiple?: boolean
  directory?: boolean
  title?: string
}

export async function open(options: OpenOptions = {}): Promise<string | string[] | null> {
  logCall('dialog.open', [options])
  if (options.directory) {
    const dir = mock.config.openFolder
    return dir == null ? null : options.multiple ? [dir] : dir
  }
  const files = mock.config.openFiles ?? [recordedJobs[0]?.input ?? '/home/user/Audio/jfk.wav']
  if (!files || !files.length) return null
  return options.multiple ? files : files[0]
}

export async function save(options: { defaultPath?: string; title?: string } = {}): Promise<string | null> {
  logCall('dialog.save', [options])
  if (mock.config.savePath) return mock.config.savePath
  return `/home/user/Documents/${options.defaultPath ?? 'transcript.txt'}`
}

export async function message(): Promise<void> {}
export async function ask(): Promise<boolean> {
  return true
}
export async function confirm(): Promise<boolean> {
  return true
}

// Choosing files, folders and save destinations: native dialogs the Rust side opens
// (choose_paths, choose_save_path), which also let the commands use what was chosen.
// A dialog that cannot open says so in a toast and counts as cancelled.

import type { Choice } from '../bindings'
import { api } from './api'
import { describeError } from './errors'
import { toast } from './toast'

/** What the user chose for `pick`; empty when they cancelled. */
export async function choose(pick: Choice): Promise<string[]> {
  try {
    return await api.choosePaths(pick)
  } catch (e) {
    const { title, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not open the dialog: ${title}`, detail })
    return []
  }
}

/** Where to save `fileName` (in the folder of `beside`, a file the user chose, if given); null when cancelled. */
export async function chooseSavePath(title: string, fileName: string, beside?: string | null): Promise<string | null> {
  try {
    return await api.chooseSavePath(title, fileName, beside ?? null)
  } catch (e) {
    const { title: t, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not open the save dialog: ${t}`, detail })
    return null
  }
}

// Keyboard actions that depend on what is on screen (find, export, open).
// The most recently mounted handler of an action wins, so a transcript view's "find"
// takes over from its page's while it is open.

import { useEffect, useRef } from 'react'
import { VIEWS } from './nav'
import { shortcutLabel } from './platform'

export type Action = 'find' | 'export' | 'open' | 'openFolder' | 'generate'

const stacks = new Map<Action, { run: () => void }[]>()

export function runAction(action: Action): boolean {
  const stack = stacks.get(action)
  const top = stack?.[stack.length - 1]
  if (!top) return false
  top.run()
  return true
}

export function useAction(action: Action, handler: () => void, enabled = true): void {
  const ref = useRef(handler)
  useEffect(() => {
    ref.current = handler
  })
  useEffect(() => {
    if (!enabled) return
    const entry = { run: () => ref.current() }
    const stack = stacks.get(action) ?? []
    stack.push(entry)
    stacks.set(action, stack)
    return () => {
      const i = stack.indexOf(entry)
      if (i >= 0) stack.splice(i, 1)
    }
  }, [action, enabled])
}

/** Everything the `?` sheet lists. */
export const SHORTCUTS: { group: string; items: { keys: string; label: string }[] }[] = [
  {
    group: 'Navigate',
    items: VIEWS.map((v) => ({ keys: shortcutLabel(v.key), label: v.label })),
  },
  {
    group: 'Files',
    items: [
      { keys: shortcutLabel('O'), label: 'Open audio or video files' },
      { keys: shortcutLabel('Shift+O'), label: 'Open a folder' },
      { keys: shortcutLabel('E'), label: 'Export the open transcript' },
    ],
  },
  {
    group: 'Transcript',
    items: [
      { keys: shortcutLabel('F'), label: 'Search the transcript (or history)' },
      { keys: 'Enter / Shift+Enter', label: 'Next / previous match' },
      { keys: 'Space', label: 'Play or pause (outside text fields)' },
    ],
  },
  {
    group: 'Speech',
    items: [
      { keys: shortcutLabel('Enter'), label: 'Generate speech / start the batch' },
      { keys: shortcutLabel('E'), label: 'Save the speech as WAV' },
      { keys: shortcutLabel('O'), label: 'Import lines from a .txt or .csv (Batch export)' },
      { keys: 'Esc', label: 'Stop playback (Speak)' },
    ],
  },
  {
    group: 'Chat',
    items: [
      { keys: 'Enter / Shift+Enter', label: 'Send the message / new line' },
      { keys: 'Space (hold)', label: 'Talk, in push-to-talk voice chat (outside text fields)' },
      { keys: shortcutLabel('F'), label: 'Search the chats' },
    ],
  },
  {
    group: 'General',
    items: [
      { keys: '?', label: 'Show this sheet' },
      { keys: 'Esc', label: 'Close dialogs, menus and search' },
    ],
  },
]

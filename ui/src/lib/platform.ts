export const isMac: boolean =
  typeof navigator !== 'undefined' && /Mac|iPhone|iPad/i.test(navigator.platform || navigator.userAgent)

/** The modifier key's label: ⌘ on macOS, Ctrl elsewhere. */
export const modLabel = isMac ? '⌘' : 'Ctrl'

/** "Ctrl+O" / "⌘O" for a tooltip. */
export function shortcutLabel(key: string, withMod = true): string {
  if (!withMod) return key
  return isMac ? `⌘${key}` : `Ctrl+${key}`
}

export function isModKey(e: KeyboardEvent | React.KeyboardEvent): boolean {
  return isMac ? e.metaKey && !e.ctrlKey : e.ctrlKey && !e.metaKey
}

/** True when the key press goes to a text field and should not trigger single-key shortcuts. */
export function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null
  if (!el || !el.tagName) return false
  const tag = el.tagName
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || el.isContentEditable
}

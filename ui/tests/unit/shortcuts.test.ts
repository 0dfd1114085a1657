import { describe, expect, it } from 'vitest'
import { VIEWS } from '../../src/lib/nav'
import { shortcutLabel } from '../../src/lib/platform'
import { SHORTCUTS } from '../../src/lib/shortcuts'

describe('navigation shortcuts', () => {
  it('are Ctrl/⌘ 1 to 9 in sidebar order', () => {
    expect(VIEWS.map((v) => v.key)).toEqual(VIEWS.map((_, i) => String(i + 1)))
  })

  it('are listed in the shortcut sheet as the sidebar shows them', () => {
    const navigate = SHORTCUTS.find((g) => g.group === 'Navigate')!
    expect(navigate.items).toEqual(VIEWS.map((v) => ({ keys: shortcutLabel(v.key), label: v.label })))
  })
})

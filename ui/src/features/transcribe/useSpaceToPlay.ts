// Space plays and pauses when no field or button has the focus.

import { useEffect } from 'react'
import { isTyping } from '../../lib/platform'

export function useSpaceToPlay(toggle: () => void): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== ' ' || e.ctrlKey || e.metaKey || e.altKey) return
      const t = e.target as HTMLElement | null
      if (isTyping(t) || t?.closest('button, [role="slider"], [role="menu"], [role="dialog"]')) return
      e.preventDefault()
      toggle()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [toggle])
}

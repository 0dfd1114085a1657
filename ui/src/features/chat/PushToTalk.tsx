// Push-to-talk: the voice mode switch, and the button (or Space) held while the user
// speaks. Letting go sends what was said at once, without waiting for a pause.

import { useEffect, useRef } from 'react'
import { Icon } from '../../components/Icon'
import { isTyping } from '../../lib/platform'
import { setTalking, setVoiceMode, useChat, type VoiceMode } from './chatStore'

const MODES: { id: VoiceMode; label: string; tip: string }[] = [
  { id: 'hands-free', label: 'Hands-free', tip: 'Speak, and a pause sends it' },
  { id: 'push-to-talk', label: 'Push to talk', tip: 'Hold the talk button or Space while you speak' },
]

export function VoiceModeSwitch() {
  const voiceMode = useChat((s) => s.voiceMode)
  return (
    <div className="segmented chat-voice-mode" role="radiogroup" aria-label="Voice mode">
      {MODES.map((m) => (
        <button
          key={m.id}
          type="button"
          role="radio"
          aria-checked={voiceMode === m.id}
          className={voiceMode === m.id ? 'segmented-on' : ''}
          data-tooltip={m.tip}
          onClick={() => setVoiceMode(m.id)}
        >
          {m.label}
        </button>
      ))}
    </div>
  )
}

/** Space talks wherever it does not type or act on an open dialog or menu. */
function isTalkKey(e: KeyboardEvent): boolean {
  if (e.key !== ' ' || e.ctrlKey || e.metaKey || e.altKey) return false
  const t = e.target as HTMLElement | null
  return !isTyping(t) && !t?.closest?.('[role="dialog"], [role="menu"]')
}

/** Shown while a push-to-talk voice chat runs. */
export function HoldToTalk() {
  const talking = useChat((s) => s.talking)
  const ready = useChat((s) => s.phase !== 'starting' && !s.stopping)
  // What holds the talk down: only its own release lets go (moving the pointer off the
  // button does not end a turn held with Space).
  const heldBy = useRef<'key' | 'pointer' | null>(null)

  const press = (by: 'key' | 'pointer') => {
    if (heldBy.current) return
    heldBy.current = by
    setTalking(true)
  }
  const release = (by: 'key' | 'pointer' | null) => {
    if (by && heldBy.current !== by) return
    heldBy.current = null
    setTalking(false)
  }

  useEffect(() => {
    const down = (e: KeyboardEvent) => {
      if (!isTalkKey(e)) return
      // Also keeps a focused button from being clicked by the Space that talks.
      e.preventDefault()
      if (!e.repeat) press('key')
    }
    const up = (e: KeyboardEvent) => {
      if (e.key !== ' ' || heldBy.current !== 'key') return
      e.preventDefault()
      release('key')
    }
    // A key let go in another window never comes back up here.
    const blur = () => release(null)
    window.addEventListener('keydown', down)
    window.addEventListener('keyup', up)
    window.addEventListener('blur', blur)
    return () => {
      window.removeEventListener('keydown', down)
      window.removeEventListener('keyup', up)
      window.removeEventListener('blur', blur)
      release(null)
    }
  }, [])

  return (
    <button
      type="button"
      className={`btn chat-talk${talking ? ' chat-talk-on' : ''}`}
      aria-pressed={talking}
      disabled={!ready}
      data-tooltip="Hold while you speak (or hold Space); let go to send"
      onPointerDown={(e) => {
        if (e.button === 0) press('pointer')
      }}
      onPointerUp={() => release('pointer')}
      onPointerLeave={() => release('pointer')}
      onPointerCancel={() => release('pointer')}
      // A long touch would open the context menu instead of talking.
      onContextMenu={(e) => e.preventDefault()}
    >
      <Icon name="mic" size={14} /> Hold to talk
    </button>
  )
}

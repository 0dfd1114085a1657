// Where the user speaks: the message box (Enter sends, Shift+Enter starts a new line),
// the voice mode and the microphone toggle for voice chat (with push-to-talk, the button
// held to talk), Stop, and what the chat is doing now.

import { useEffect, useRef } from 'react'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { navigate, VIEWS, type View } from '../../lib/nav'
import {
  chatStore,
  dismissError,
  sendMessage,
  setDraft,
  startVoiceChat,
  stopChat,
  useChat,
  type ChatState,
} from './chatStore'
import { LevelMeter } from './LevelMeter'
import { HoldToTalk, VoiceModeSwitch } from './PushToTalk'

function stateText(s: ChatState): string {
  if (s.stopping) return 'Stopping…'
  if (s.talking) return 'Talking… (release to send)'
  switch (s.phase) {
    case 'starting':
      return 'Starting voice chat…'
    case 'listening':
      if (s.voiceMode === 'push-to-talk') return s.input ? `Hold to talk on ${s.input}` : 'Hold to talk'
      return s.input ? `Listening on ${s.input}…` : 'Listening…'
    case 'hearing':
      return 'Hearing you…'
    case 'thinking':
      return 'Thinking…'
    case 'writing':
      return 'Writing…'
    case 'speaking':
      return 'Speaking…'
    default:
      return ''
  }
}

function ActivityLine() {
  const s = useChat()
  if (!s.activity) return null
  return (
    <div className="chat-activity">
      {s.activity === 'voice' && <LevelMeter />}
      <span role="status" data-testid="chat-state">
        {s.hint && <strong>{s.hint} </strong>}
        {stateText(s)}
      </span>
      {s.activity === 'voice' && s.output && s.phase === 'speaking' && (
        <span className="muted small truncate">on {s.output}</span>
      )}
    </div>
  )
}

const pageLabel = (view: View) => VIEWS.find((v) => v.id === view)?.label ?? view

export function Composer({ blocker }: { blocker: { reason: string; fix: View } | null }) {
  const draft = useChat((s) => s.draft)
  const activity = useChat((s) => s.activity)
  const stopping = useChat((s) => s.stopping)
  const error = useChat((s) => s.error)
  const openId = useChat((s) => s.openId)
  const pushToTalk = useChat((s) => s.voiceMode === 'push-to-talk')
  const box = useRef<HTMLTextAreaElement>(null)
  const voiceOn = activity === 'voice'
  const canSend = !activity && draft.trim().length > 0

  // A chat opened (or a new one) is ready to be typed in; not during voice chat, where a
  // first turn opens the new chat and Space in the box would type instead of talk.
  useEffect(() => {
    if (chatStore.get().activity !== 'voice') box.current?.focus()
  }, [openId])

  const send = () => {
    if (canSend) void sendMessage(draft)
  }

  return (
    <div className="chat-bottom">
      {error && <ErrorNote error={error.error} title={error.title} onDismiss={dismissError} />}
      <ActivityLine />
      <form
        className="chat-composer"
        aria-label="Send a message"
        onSubmit={(e) => {
          e.preventDefault()
          send()
        }}
      >
        <textarea
          ref={box}
          className="textarea chat-input"
          aria-label="Message"
          placeholder="Message Izwi… (Enter sends, Shift+Enter adds a line)"
          rows={2}
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            // Not while an input method is composing: its Enter picks a word.
            if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
              e.preventDefault()
              send()
            }
          }}
        />
        <div className="chat-composer-actions">
          {!voiceOn && <VoiceModeSwitch />}
          {voiceOn && pushToTalk && <HoldToTalk />}
          <button
            type="button"
            className={`btn btn-icon${voiceOn ? ' btn-active' : ''}`}
            aria-label="Voice chat"
            aria-pressed={voiceOn}
            aria-describedby={blocker && !voiceOn ? 'voice-chat-blocked' : undefined}
            data-tooltip={
              voiceOn
                ? 'Stop voice chat'
                : (blocker?.reason ??
                  (pushToTalk
                    ? 'Talk: hold to speak, and hear the reply'
                    : 'Talk hands-free: speak, and hear the reply'))
            }
            data-tooltip-align="end"
            disabled={!voiceOn && (blocker != null || activity != null)}
            onClick={() => void (voiceOn ? stopChat() : startVoiceChat())}
          >
            <Icon name="mic" />
          </button>
          {activity ? (
            <button type="button" className="btn" onClick={() => void stopChat()} disabled={stopping}>
              <Icon name="stop" size={11} /> Stop
            </button>
          ) : (
            <button type="submit" className="btn btn-primary" disabled={!canSend}>
              <Icon name="send" size={14} /> Send
            </button>
          )}
        </div>
      </form>
      {blocker && !voiceOn && (
        <p id="voice-chat-blocked" className="muted small chat-hint">
          {blocker.reason}{' '}
          <button type="button" className="link" onClick={() => navigate(blocker.fix)}>
            Open {pageLabel(blocker.fix)}
          </button>
        </p>
      )}
    </div>
  )
}

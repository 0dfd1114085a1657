// The open chat's messages (system prompts are not shown), then the turn under way as
// its events arrive. Follows the newest words unless the user has scrolled up to read.

import { useEffect, useRef } from 'react'
import { EmptyState } from '../../components/EmptyState'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { ChatBubble } from './ChatBubble'
import { loadMessages, useChat } from './chatStore'

/** How close to the bottom still counts as following the conversation. */
const FOLLOW_PX = 80

export function MessageList() {
  const { messages, messagesLoading, messagesError, openId, turn } = useChat()
  const shown = messages.filter((m) => m.role !== 'system')
  const ref = useRef<HTMLDivElement>(null)
  const following = useRef(true)

  useEffect(() => {
    const el = ref.current
    if (el && following.current) el.scrollTop = el.scrollHeight
  }, [shown.length, turn?.user, turn?.reply])

  if (messagesError != null && openId != null) {
    return (
      <div className="chat-scroll">
        <ErrorNote error={messagesError} title="Could not read this chat" onRetry={() => void loadMessages(openId)} />
      </div>
    )
  }
  const empty = !shown.length && !turn
  return (
    <div
      ref={ref}
      className="chat-scroll"
      role="log"
      aria-label="Messages"
      aria-busy={turn?.state === 'live' || undefined}
      onScroll={(e) => {
        const el = e.currentTarget
        following.current = el.scrollHeight - el.scrollTop - el.clientHeight < FOLLOW_PX
      }}
    >
      {empty && messagesLoading && (
        <p className="muted chat-wait">
          <Icon name="spinner" size={14} /> Reading the chat…
        </p>
      )}
      {empty && !messagesLoading && (
        <EmptyState icon="chat" title={openId == null ? 'A new conversation' : 'Nothing said yet'}>
          <p>
            Type a message, or turn on the microphone to talk, hands-free or holding the talk button (or Space) while
            you speak: it answers aloud, and you can interrupt it. Everything runs and stays on this computer.
          </p>
        </EmptyState>
      )}
      {!empty && (
        <ol className="chat-messages">
          {shown.map((m) => (
            <ChatBubble
              key={m.id}
              who={m.role === 'user' ? 'user' : 'assistant'}
              // A speech-to-speech turn stores the user's recording, no words.
              text={m.content || (m.audio_path != null ? '(spoken)' : '')}
              metrics={m.metrics}
              at={m.created_at}
              ended={m.metrics?.interrupted ? 'interrupted' : null}
            />
          ))}
          {turn?.user != null && <ChatBubble who="user" text={turn.user} />}
          {turn && (turn.reply || (turn.state === 'live' && turn.user != null)) && (
            <ChatBubble
              who="assistant"
              text={turn.reply}
              live={turn.state === 'live' && !turn.bargeIn}
              ended={turn.bargeIn ? 'interrupted' : turn.state === 'stopped' ? 'stopped' : null}
            />
          )}
        </ol>
      )}
    </div>
  )
}

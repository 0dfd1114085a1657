// The stored conversations, most recently active first: search (titles and messages),
// a new chat, open one, delete one after asking.

import { useRef } from 'react'
import type { ChatRecord } from '../../bindings'
import { ErrorNote } from '../../components/ErrorNote'
import { Highlighted } from '../../components/Highlight'
import { Icon } from '../../components/Icon'
import { SearchBox } from '../../components/SearchBox'
import { confirm } from '../../lib/confirm'
import { describeError } from '../../lib/errors'
import { formatDate } from '../../lib/format'
import { useAction } from '../../lib/shortcuts'
import { toast } from '../../lib/toast'
import { deleteChat, loadChats, openChat, setQuery, useChat } from './chatStore'

const titleOf = (chat: ChatRecord) => chat.title.trim() || 'Untitled chat'

function ChatRow({ chat, query, open, busy }: { chat: ChatRecord; query: string; open: boolean; busy: boolean }) {
  const title = titleOf(chat)
  const remove = async () => {
    const ok = await confirm({
      title: `Delete ${title}?`,
      body: 'The chat, its messages and its recordings are deleted from Izwi.',
      confirmLabel: 'Delete',
      danger: true,
    })
    if (!ok) return
    try {
      await deleteChat(chat.id)
      toast({ kind: 'success', title: `Deleted ${title}` })
    } catch (e) {
      const { title: why, detail } = describeError(e)
      toast({ kind: 'error', title: `Could not delete ${title}: ${why}`, detail })
    }
  }
  return (
    <li className={`chat-row${open ? ' chat-row-open' : ''}`} aria-label={title} data-chat={chat.id}>
      <button
        type="button"
        className="chat-row-main"
        onClick={() => openChat(chat.id)}
        aria-current={open ? 'true' : undefined}
        // The reply or voice chat under way belongs to the open chat.
        disabled={busy && !open}
        title={chat.title}
      >
        <span className="chat-row-title">
          <Highlighted text={title} query={query} />
        </span>
        <time className="chat-row-time tabular" dateTime={new Date(chat.updated_at).toISOString()}>
          {formatDate(chat.updated_at)}
        </time>
      </button>
      <button
        type="button"
        className="btn btn-icon btn-ghost btn-sm chat-row-delete"
        aria-label={`Delete ${title}`}
        data-tooltip={busy && open ? 'Stop the chat first' : 'Delete'}
        data-tooltip-align="end"
        disabled={busy && open}
        onClick={remove}
      >
        <Icon name="trash" size={14} />
      </button>
    </li>
  )
}

export function ChatList() {
  const { chats, chatsLoaded, chatsError, query, searching, openId, activity } = useChat()
  const inputRef = useRef<HTMLInputElement>(null)
  useAction('find', () => {
    inputRef.current?.focus()
    inputRef.current?.select()
  })
  const busy = activity != null
  const q = query.trim()
  return (
    <section className="chat-list" aria-label="Conversations">
      <div className="chat-list-head">
        <SearchBox ref={inputRef} label="Search chats" value={query} onChange={setQuery} searching={searching} />
        <button
          type="button"
          className="btn btn-sm"
          onClick={() => openChat(null)}
          disabled={busy}
          data-tooltip={busy ? 'Stop the chat first' : 'Start a new conversation'}
          data-tooltip-align="end"
        >
          <Icon name="plus" size={13} /> New chat
        </button>
      </div>
      {chatsError != null ? (
        <ErrorNote error={chatsError} title="Could not list the chats" onRetry={() => void loadChats()} compact />
      ) : chatsLoaded && chats.length === 0 ? (
        <p className="muted small list-empty">
          {q ? `No chat mentions “${q}”.` : 'No chats yet: what you say is kept here, on this computer.'}
        </p>
      ) : (
        <ul className="chat-rows" aria-label="Chats">
          {chats.map((c) => (
            <ChatRow key={c.id} chat={c} query={q} open={c.id === openId} busy={busy} />
          ))}
        </ul>
      )}
    </section>
  )
}

// One segment: its time (jumps there), its text with find matches (or, while it plays
// and has word times, the word being said highlighted), and, when the transcript is
// stored, editing in place (Edit or double-click; Enter or leaving the field saves, Esc
// cancels) with an "edited" mark that shows what was heard and reverts.

import { useEffect, useRef, useState } from 'react'
import { Highlighted } from '../../components/Highlight'
import { Icon } from '../../components/Icon'
import { formatTimestamp } from '../../lib/format'

export interface Row {
  key: string
  idx: number
  start: number
  end: number
  text: string
  /** What the model heard, when the user corrected `text`. */
  original: string | null
  /** Each word of what the model heard and when it is said; empty without word timestamps. */
  words: TimedWord[]
}

export interface TimedWord {
  word: string
  start: number
  end: number
}

/** The word under the playhead: the last one started by `time`, or -1 before the first. */
function wordAt(words: TimedWord[], time: number): number {
  let found = -1
  for (let i = 0; i < words.length && words[i].start <= time; i++) found = i
  return found
}

export function SegmentRow({
  row,
  index,
  current,
  time,
  flash,
  query,
  currentMatch,
  editable,
  onSeek,
  onSave,
  onRevert,
}: {
  row: Row
  index: number
  current: boolean
  /** The playhead while this row is the current one, else null. */
  time: number | null
  flash: boolean
  query: string
  /** The index of the current find match within this row, or -1. */
  currentMatch: number
  editable: boolean
  onSeek: (seconds: number) => void
  /** Saves a correction; rejects (and editing goes on) when it could not be saved. */
  onSave: (idx: number, text: string) => Promise<void>
  onRevert: (idx: number) => Promise<void>
}) {
  const [editing, setEditing] = useState(false)
  const [draft, setDraft] = useState('')
  const [saving, setSaving] = useState(false)
  // Whether the field is open and nothing is saving, read by events that come late: a
  // browser blurs a field it disables or removes, which must not save a second time or
  // save what Esc dropped.
  const open = useRef(false)
  const fieldRef = useRef<HTMLTextAreaElement>(null)
  const editButtonRef = useRef<HTMLButtonElement>(null)
  const text = row.text.trim()

  useEffect(() => {
    if (!editing) return
    const el = fieldRef.current
    el?.focus()
    el?.setSelectionRange(el.value.length, el.value.length)
  }, [editing])

  const start = () => {
    if (!editable) return
    setDraft(text)
    open.current = true
    setEditing(true)
  }
  const stop = () => {
    open.current = false
    setEditing(false)
    // Back to the row's Edit button, so the keyboard keeps its place.
    requestAnimationFrame(() => editButtonRef.current?.focus())
  }
  const save = async () => {
    if (!open.current) return
    const next = draft.trim()
    if (next === text) return stop()
    open.current = false
    setSaving(true)
    try {
      await onSave(row.idx, next)
      stop()
    } catch {
      // The error is shown by onSave; the draft stays for another try.
      open.current = true
    } finally {
      setSaving(false)
    }
  }

  const cls = [
    'segment',
    current && 'segment-current',
    flash && 'segment-flash',
    row.original != null && 'segment-edited',
  ]
    .filter(Boolean)
    .join(' ')
  return (
    <li
      className={cls}
      data-row={index}
      aria-current={current ? 'true' : undefined}
      onClick={(e) => {
        const target = e.target as HTMLElement
        if (editing || target.closest('.segment-tools, textarea')) return
        // Selecting text should not seek.
        if (window.getSelection?.()?.toString() && !target.closest('button')) return
        onSeek(row.start)
      }}
    >
      <button type="button" className="segment-time tabular" aria-label={`Jump to ${formatTimestamp(row.start)}`}>
        {formatTimestamp(row.start)}
      </button>
      {editing ? (
        <textarea
          ref={fieldRef}
          className="segment-field"
          aria-label={`Text at ${formatTimestamp(row.start)}`}
          value={draft}
          rows={Math.max(1, Math.ceil(draft.length / 70))}
          readOnly={saving}
          aria-busy={saving || undefined}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault()
              void save()
            } else if (e.key === 'Escape') {
              e.preventDefault()
              e.stopPropagation()
              stop()
            }
          }}
          onBlur={() => void save()}
        />
      ) : (
        <p className="segment-text" onDoubleClick={start}>
          {time != null && row.words.length > 0 && row.original == null && !query ? (
            <SpokenWords words={row.words} current={wordAt(row.words, time)} />
          ) : (
            <Highlighted text={text} query={query} current={currentMatch} />
          )}
        </p>
      )}
      {editable && !editing && (
        <span className="segment-tools">
          {row.original != null && (
            <>
              <span className="badge segment-edited-mark" title={`Heard: ${row.original.trim()}`}>
                edited
              </span>
              <button
                type="button"
                className="btn btn-icon btn-ghost btn-sm"
                aria-label={`Revert to what was heard: ${row.original.trim()}`}
                data-tooltip={`Revert to “${row.original.trim()}”`}
                onClick={() => void onRevert(row.idx).catch(() => {})}
              >
                <Icon name="redo" size={13} />
              </button>
            </>
          )}
          <button
            ref={editButtonRef}
            type="button"
            className="btn btn-icon btn-ghost btn-sm segment-edit"
            aria-label={`Edit text at ${formatTimestamp(row.start)}`}
            data-tooltip="Edit (double-click the text)"
            onClick={start}
          >
            <Icon name="edit" size={13} />
          </button>
        </span>
      )}
    </li>
  )
}

/** The segment's words with the one being said marked. */
function SpokenWords({ words, current }: { words: TimedWord[]; current: number }) {
  return (
    <>
      {words.map((w, i) => {
        const lead = i === 0 ? '' : w.word.slice(0, w.word.length - w.word.trimStart().length)
        return (
          <span key={i}>
            {lead}
            <span
              className={i === current ? 'word-current' : undefined}
              aria-current={i === current ? 'true' : undefined}
            >
              {w.word.trim()}
            </span>
          </span>
        )
      })}
    </>
  )
}

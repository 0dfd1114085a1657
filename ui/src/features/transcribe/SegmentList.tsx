// The segments of a transcript, in time order.

import type { Ref } from 'react'
import type { Match } from './useFind'
import { SegmentRow, type Row } from './SegmentRow'

export function SegmentList({
  rows,
  listRef,
  currentRow,
  time,
  flashRow,
  query,
  currentMatch,
  editable,
  onSeek,
  onSave,
  onRevert,
}: {
  rows: Row[]
  listRef: Ref<HTMLOListElement>
  currentRow: number
  /** The playhead, in seconds: the current row highlights the word under it. */
  time: number
  flashRow: number | null
  query: string
  currentMatch: Match | null
  editable: boolean
  onSeek: (seconds: number) => void
  onSave: (idx: number, text: string) => Promise<void>
  onRevert: (idx: number) => Promise<void>
}) {
  return (
    <ol className="segments" ref={listRef} aria-label="Segments">
      {rows.map((r, i) => (
        <SegmentRow
          key={r.key}
          row={r}
          index={i}
          current={i === currentRow}
          time={i === currentRow ? time : null}
          flash={flashRow === i}
          query={query}
          currentMatch={currentMatch?.row === i ? currentMatch.n : -1}
          editable={editable}
          onSeek={onSeek}
          onSave={onSave}
          onRevert={onRevert}
        />
      ))}
    </ol>
  )
}

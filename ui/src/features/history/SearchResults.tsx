import type { SearchHit } from '../../bindings'
import { Snippet } from '../../components/Highlight'
import { Icon } from '../../components/Icon'
import { basename, formatTimestamp } from '../../lib/format'

export function SearchResults({
  hits,
  searched,
  onOpen,
  selected,
}: {
  hits: SearchHit[]
  searched: string
  onOpen: (hit: SearchHit) => void
  /** The job and segment open now. */
  selected?: { jobId: number; segmentIdx: number | null } | null
}) {
  if (!hits.length) {
    return searched ? <p className="muted list-empty">Nothing found for “{searched}”.</p> : null
  }
  return (
    <ul className="hits" aria-label="Search results">
      {hits.map((h, i) => (
        <li key={`${h.transcript_id}-${h.segment_idx ?? 't'}-${i}`}>
          <button
            type="button"
            className={`hit${selected && h.job_id === selected.jobId && h.segment_idx === selected.segmentIdx ? ' hit-selected' : ''}`}
            disabled={h.job_id == null}
            title={h.job_id == null ? 'This transcript was not made by a job and cannot be opened here' : undefined}
            onClick={() => onOpen(h)}
          >
            <span className="hit-head">
              <Icon name="file" size={13} />
              <span className="hit-title">{basename(h.title)}</span>
              {h.start != null && <span className="hit-time tabular">{formatTimestamp(h.start)}</span>}
            </span>
            <span className="hit-snippet">
              <Snippet snippet={h.snippet} />
            </span>
          </button>
        </li>
      ))}
    </ul>
  )
}

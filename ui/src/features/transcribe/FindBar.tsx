// The find bar of a transcript: the query, "n of m", previous / next, close.

import { Icon } from '../../components/Icon'
import type { Find } from './useFind'

export function FindBar({ find }: { find: Find }) {
  const { query, matches, position } = find
  return (
    <div className="findbar" role="search">
      <Icon name="search" size={14} />
      <input
        ref={find.inputRef}
        type="search"
        className="findbar-input"
        placeholder="Find in transcript"
        aria-label="Find in transcript"
        value={query}
        onChange={(e) => find.setQuery(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            e.preventDefault()
            find.step(e.shiftKey ? -1 : 1)
          } else if (e.key === 'Escape') {
            e.preventDefault()
            e.stopPropagation()
            find.close()
          }
        }}
      />
      <span className="findbar-count tabular" aria-live="polite">
        {query.trim() ? (matches.length ? `${position + 1} of ${matches.length}` : 'No matches') : ''}
      </span>
      <button
        type="button"
        className="btn btn-icon btn-ghost btn-sm"
        aria-label="Previous match"
        data-tooltip="Previous (Shift+Enter)"
        disabled={!matches.length}
        onClick={() => find.step(-1)}
      >
        <Icon name="chevronUp" size={14} />
      </button>
      <button
        type="button"
        className="btn btn-icon btn-ghost btn-sm"
        aria-label="Next match"
        data-tooltip="Next (Enter)"
        disabled={!matches.length}
        onClick={() => find.step(1)}
      >
        <Icon name="chevronDown" size={14} />
      </button>
      <button
        type="button"
        className="btn btn-icon btn-ghost btn-sm"
        aria-label="Close search"
        data-tooltip="Close (Esc)"
        onClick={find.close}
      >
        <Icon name="close" size={12} />
      </button>
    </div>
  )
}

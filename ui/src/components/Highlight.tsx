// Text with highlighted parts: snippets marked with [ ] by the search index, or a query's matches.

import { Fragment } from 'react'
import { findMatches, parseSnippet } from '../lib/highlight'

export function Snippet({ snippet }: { snippet: string }) {
  return (
    <>
      {parseSnippet(snippet).map((p, i) =>
        p.hit ? <mark key={i}>{p.text}</mark> : <Fragment key={i}>{p.text}</Fragment>,
      )}
    </>
  )
}

/** `text` with each match of `query` marked; the match numbered `current` gets its own class. */
export function Highlighted({
  text,
  query,
  current = -1,
}: {
  text: string
  query: string
  /** Index among this text's matches of the current one, or -1. */
  current?: number
}) {
  const matches = findMatches(text, query)
  if (!matches.length) return <>{text}</>
  const out = []
  let last = 0
  matches.forEach(([s, e], i) => {
    if (s > last) out.push(<Fragment key={`t${i}`}>{text.slice(last, s)}</Fragment>)
    out.push(
      <mark
        key={`m${i}`}
        className={i === current ? 'match match-current' : 'match'}
        data-current={i === current || undefined}
      >
        {text.slice(s, e)}
      </mark>,
    )
    last = e
  })
  if (last < text.length) out.push(<Fragment key="end">{text.slice(last)}</Fragment>)
  return <>{out}</>
}

// Finding the parts of a text to highlight.

/** "… ask not what your [country] can do …" → text with <mark>country</mark>. */
export function parseSnippet(snippet: string): { text: string; hit: boolean }[] {
  const parts: { text: string; hit: boolean }[] = []
  const re = /\[([^\]]*)\]/g
  let last = 0
  for (let m = re.exec(snippet); m; m = re.exec(snippet)) {
    if (m.index > last) parts.push({ text: snippet.slice(last, m.index), hit: false })
    if (m[1]) parts.push({ text: m[1], hit: true })
    last = m.index + m[0].length
  }
  if (last < snippet.length) parts.push({ text: snippet.slice(last), hit: false })
  return parts
}

/** Where `query` occurs in `text`, case-insensitively: [start, end) pairs. */
export function findMatches(text: string, query: string): [number, number][] {
  const q = query.trim().toLocaleLowerCase()
  if (!q) return []
  const hay = text.toLocaleLowerCase()
  const out: [number, number][] = []
  for (let i = hay.indexOf(q); i >= 0; i = hay.indexOf(q, i + q.length)) out.push([i, i + q.length])
  return out
}

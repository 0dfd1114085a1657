import { render } from '@testing-library/react'
import { describe, expect, it } from 'vitest'
import { Highlighted, Snippet } from '../../src/components/Highlight'
import { findMatches, parseSnippet } from '../../src/lib/highlight'

describe('search highlighting', () => {
  it('parses the [ ] markers of search snippets', () => {
    expect(parseSnippet('…ask not what your [country] can do…')).toEqual([
      { text: '…ask not what your ', hit: false },
      { text: 'country', hit: true },
      { text: ' can do…', hit: false },
    ])
    expect(parseSnippet('[ask] [not]')).toEqual([
      { text: 'ask', hit: true },
      { text: ' ', hit: false },
      { text: 'not', hit: true },
    ])
  })

  it('renders the marked words as <mark>', () => {
    const { container } = render(<Snippet snippet="for your [country] and [Country]." />)
    const marks = [...container.querySelectorAll('mark')].map((m) => m.textContent)
    expect(marks).toEqual(['country', 'Country'])
    expect(container.textContent).toBe('for your country and Country.')
  })

  it('finds a query case-insensitively and marks the current match', () => {
    expect(findMatches('Country, country, COUNTRY', 'country')).toEqual([
      [0, 7],
      [9, 16],
      [18, 25],
    ])
    expect(findMatches('anything', '  ')).toEqual([])
    const { container } = render(<Highlighted text="Country, country" query="COUNTRY" current={1} />)
    const marks = container.querySelectorAll('mark')
    expect(marks).toHaveLength(2)
    expect(marks[1]).toHaveClass('match-current')
    expect(marks[0]).not.toHaveClass('match-current')
  })
})

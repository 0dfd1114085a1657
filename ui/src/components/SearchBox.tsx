// A search field: Esc clears it; while a search runs it shows a spinner, else the
// shortcut that focuses it (Ctrl/⌘+F, which the page wires to `ref`).
import type { Ref } from 'react'
import { shortcutLabel } from '../lib/platform'
import { Icon } from './Icon'

export function SearchBox({
  ref,
  label,
  value,
  onChange,
  searching,
}: {
  ref: Ref<HTMLInputElement>
  label: string
  value: string
  onChange: (value: string) => void
  searching: boolean
}) {
  return (
    <div className="searchbox">
      <Icon name="search" size={14} />
      <input
        ref={ref}
        type="search"
        placeholder={label}
        aria-label={label}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Escape' && value) {
            e.preventDefault()
            onChange('')
          }
        }}
      />
      {searching ? <Icon name="spinner" size={13} /> : <kbd className="kbd kbd-faint">{shortcutLabel('F')}</kbd>}
    </div>
  )
}

// A small dropdown menu: opens under its button, arrow keys move, Esc and outside clicks close.

import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react'

export interface MenuItem {
  id: string
  label: string
  hint?: string
  disabled?: boolean
}

export function Menu({
  button,
  items,
  onSelect,
  label,
  open: controlledOpen,
  onOpenChange,
  align = 'end',
}: {
  button: (props: { onClick: () => void; 'aria-expanded': boolean; 'aria-haspopup': 'menu' }) => ReactNode
  items: MenuItem[]
  onSelect: (id: string) => void
  label: string
  open?: boolean
  onOpenChange?: (open: boolean) => void
  align?: 'start' | 'end'
}) {
  const [ownOpen, setOwnOpen] = useState(false)
  const open = controlledOpen ?? ownOpen
  const onChange = useRef(onOpenChange)
  useEffect(() => {
    onChange.current = onOpenChange
  })
  const setOpen = useCallback((v: boolean) => {
    setOwnOpen(v)
    onChange.current?.(v)
  }, [])
  const ref = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (!open) return
    const first = ref.current?.querySelector<HTMLButtonElement>('[role="menuitem"]:not([disabled])')
    first?.focus()
    const onDown = (e: MouseEvent) => {
      if (!ref.current?.parentElement?.contains(e.target as Node)) setOpen(false)
    }
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.stopPropagation()
        setOpen(false)
      }
    }
    document.addEventListener('mousedown', onDown)
    window.addEventListener('keydown', onKey, true)
    return () => {
      document.removeEventListener('mousedown', onDown)
      window.removeEventListener('keydown', onKey, true)
    }
  }, [open, setOpen])
  const onKeyDown = (e: React.KeyboardEvent) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return
    e.preventDefault()
    const list = [...(ref.current?.querySelectorAll<HTMLButtonElement>('[role="menuitem"]:not([disabled])') ?? [])]
    const i = list.indexOf(document.activeElement as HTMLButtonElement)
    const next = e.key === 'ArrowDown' ? (i + 1) % list.length : (i - 1 + list.length) % list.length
    list[next]?.focus()
  }
  return (
    <div className="menu-anchor">
      {button({ onClick: () => setOpen(!open), 'aria-expanded': open, 'aria-haspopup': 'menu' })}
      {open && (
        <div ref={ref} className={`menu menu-${align}`} role="menu" aria-label={label} onKeyDown={onKeyDown}>
          {items.map((it) => (
            <button
              key={it.id}
              type="button"
              role="menuitem"
              className="menu-item"
              disabled={it.disabled}
              onClick={() => {
                setOpen(false)
                onSelect(it.id)
              }}
            >
              <span>{it.label}</span>
              {it.hint && <span className="menu-hint">{it.hint}</span>}
            </button>
          ))}
        </div>
      )}
    </div>
  )
}

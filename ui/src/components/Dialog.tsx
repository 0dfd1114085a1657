// Modal dialogs: Esc closes, focus moves in and comes back, clicks outside close.
// ConfirmHost shows the question confirm() (lib/confirm) asks.

import { useEffect, useRef, type ReactNode } from 'react'
import { confirmStore } from '../lib/confirm'
import { Icon } from './Icon'
import { useStore } from '../lib/store'

export function Dialog({
  title,
  onClose,
  children,
  footer,
  wide,
  labelledBy = 'dialog-title',
}: {
  title: string
  onClose: () => void
  children: ReactNode
  footer?: ReactNode
  wide?: boolean
  labelledBy?: string
}) {
  const ref = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null
    const el = ref.current
    const first = el?.querySelector<HTMLElement>('[data-autofocus]') ?? el
    first?.focus()
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.preventDefault()
        e.stopPropagation()
        onClose()
      } else if (e.key === 'Tab' && el) {
        // Keep Tab inside the dialog.
        const items = [
          ...el.querySelectorAll<HTMLElement>(
            'button, [href], input, select, textarea, [tabindex]:not([tabindex="-1"])',
          ),
        ].filter((x) => !x.hasAttribute('disabled'))
        if (!items.length) return
        const i = items.indexOf(document.activeElement as HTMLElement)
        if (e.shiftKey && i <= 0) {
          e.preventDefault()
          items[items.length - 1].focus()
        } else if (!e.shiftKey && i === items.length - 1) {
          e.preventDefault()
          items[0].focus()
        }
      }
    }
    window.addEventListener('keydown', onKey, true)
    return () => {
      window.removeEventListener('keydown', onKey, true)
      previous?.focus?.()
    }
  }, [onClose])
  return (
    <div className="dialog-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div
        ref={ref}
        className={`dialog${wide ? ' dialog-wide' : ''}`}
        role="dialog"
        aria-modal="true"
        aria-labelledby={labelledBy}
        tabIndex={-1}
      >
        <div className="dialog-head">
          <h2 id={labelledBy} className="dialog-title">
            {title}
          </h2>
          <button type="button" className="btn btn-icon btn-ghost btn-sm" aria-label="Close" onClick={onClose}>
            <Icon name="close" size={12} />
          </button>
        </div>
        <div className="dialog-body">{children}</div>
        {footer && <div className="dialog-footer">{footer}</div>}
      </div>
    </div>
  )
}

export function ConfirmHost() {
  const req = useStore(confirmStore)
  if (!req) return null
  const answer = (ok: boolean) => {
    confirmStore.set(null)
    req.resolve(ok)
  }
  return (
    <Dialog
      title={req.title}
      onClose={() => answer(false)}
      labelledBy="confirm-title"
      footer={
        <>
          <button type="button" className="btn" onClick={() => answer(false)}>
            Cancel
          </button>
          <button
            type="button"
            className={`btn ${req.danger ? 'btn-danger' : 'btn-primary'}`}
            data-autofocus
            onClick={() => answer(true)}
          >
            {req.confirmLabel}
          </button>
        </>
      }
    >
      <p>{req.body}</p>
    </Dialog>
  )
}

// Short confirmations and failures, bottom right; callable from anywhere with toast().

import { useStore } from '../lib/store'
import { dismissToast, toastStore } from '../lib/toast'
import { Icon } from './Icon'

export function Toaster() {
  const toasts = useStore(toastStore)
  return (
    <div className="toaster" aria-live="polite">
      {toasts.map((t) => (
        <div key={t.id} className={`toast toast-${t.kind}`} role={t.kind === 'error' ? 'alert' : 'status'}>
          <Icon name={t.kind === 'error' ? 'alert' : t.kind === 'success' ? 'check' : 'dot'} size={15} />
          <div className="toast-text">
            <div className="toast-title">{t.title}</div>
            {t.detail && <div className="toast-detail">{t.detail}</div>}
          </div>
          {t.action && (
            <button
              type="button"
              className="btn btn-ghost btn-sm"
              onClick={() => {
                t.action?.run()
                dismissToast(t.id)
              }}
            >
              {t.action.label}
            </button>
          )}
          <button
            type="button"
            className="btn btn-icon btn-ghost btn-sm"
            aria-label="Dismiss"
            onClick={() => dismissToast(t.id)}
          >
            <Icon name="close" size={12} />
          </button>
        </div>
      ))}
    </div>
  )
}

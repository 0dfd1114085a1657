import { SHORTCUTS } from '../lib/shortcuts'
import { Dialog } from './Dialog'
import { Kbd } from './Kbd'

export function ShortcutSheet({ onClose }: { onClose: () => void }) {
  return (
    <Dialog title="Keyboard shortcuts" onClose={onClose} labelledBy="shortcuts-title" wide>
      <div className="shortcut-grid">
        {SHORTCUTS.map((g) => (
          <section key={g.group}>
            <h3 className="section-label">{g.group}</h3>
            <dl className="shortcut-list">
              {g.items.map((it) => (
                <div key={it.label} className="shortcut-row">
                  <dt>{it.label}</dt>
                  <dd>
                    <Kbd>{it.keys}</Kbd>
                  </dd>
                </div>
              ))}
            </dl>
          </section>
        ))}
      </div>
    </Dialog>
  )
}

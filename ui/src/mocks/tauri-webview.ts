// Stand-in for @tauri-apps/api/webview (mock builds): drags and drops come from
// window.__izwiMock.drag(paths) / .drop(paths).

import { onDrag } from './control'

type DragDrop =
  | { type: 'enter'; paths: string[]; position: { x: number; y: number } }
  | { type: 'over'; position: { x: number; y: number } }
  | { type: 'drop'; paths: string[]; position: { x: number; y: number } }
  | { type: 'leave' }

export function getCurrentWebview() {
  return {
    label: 'main',
    async onDragDropEvent(handler: (e: { event: string; id: number; payload: DragDrop }) => void) {
      return onDrag((e) => {
        const position = { x: 0, y: 0 }
        const payload: DragDrop =
          e.type === 'drop'
            ? { type: 'drop', paths: e.paths ?? [], position }
            : e.type === 'enter'
              ? { type: 'enter', paths: e.paths ?? [], position }
              : { type: 'leave' }
        handler({ event: 'tauri://drag-drop', id: 0, payload })
      })
    },
  }
}

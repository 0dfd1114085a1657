import '@testing-library/jest-dom/vitest'
import { cleanup } from '@testing-library/react'
import { afterEach, vi } from 'vitest'

afterEach(() => {
  cleanup()
})

// jsdom has no canvas, no media playback and no layout: quiet stand-ins.
HTMLCanvasElement.prototype.getContext = (() => null) as unknown as HTMLCanvasElement['getContext']
HTMLMediaElement.prototype.play = vi.fn(function (this: HTMLMediaElement) {
  this.dispatchEvent(new Event('play'))
  return Promise.resolve()
})
HTMLMediaElement.prototype.pause = vi.fn(function (this: HTMLMediaElement) {
  this.dispatchEvent(new Event('pause'))
})
Element.prototype.scrollIntoView = vi.fn()

// Tauri's JS modules need the Tauri runtime: plain stand-ins (the bindings are mocked per test file).
vi.mock('@tauri-apps/api/core', () => ({
  convertFileSrc: (path: string) => `asset://localhost/${encodeURIComponent(path)}`,
  invoke: vi.fn(),
  // The mocked commands call `onmessage` themselves (bindingsMock.sendSpeechAudio).
  Channel: class {
    onmessage: (message: unknown) => void = () => {}
  },
}))
vi.mock('@tauri-apps/api/webview', () => ({
  getCurrentWebview: () => ({ onDragDropEvent: vi.fn(async () => () => {}) }),
}))

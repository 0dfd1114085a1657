import path from 'node:path'
import { fileURLToPath } from 'node:url'
import react from '@vitejs/plugin-react'
import { defineConfig, type Plugin } from 'vite'

const root = path.dirname(fileURLToPath(import.meta.url))
const src = (p: string) => path.join(root, 'src', p)

/**
 * `--mode mock` builds the UI for a plain browser: the generated Tauri bindings and the
 * @tauri-apps modules the UI imports are swapped for stand-ins under src/mocks/ that
 * replay what the real commands returned (tests/fixtures/recorded/*.json).
 */
function tauriStandIns(): Plugin {
  const modules: Record<string, string> = {
    '@tauri-apps/api/core': src('mocks/tauri-core.ts'),
    '@tauri-apps/api/event': src('mocks/tauri-event.ts'),
    '@tauri-apps/api/webview': src('mocks/tauri-webview.ts'),
  }
  const bindings = src('bindings')
  const mockBindings = src('mocks/bindings.ts')
  return {
    name: 'izwi-tauri-stand-ins',
    enforce: 'pre',
    resolveId(source, importer) {
      if (source in modules) return modules[source]
      if (!importer || importer.startsWith(src('mocks'))) return null
      if (source.startsWith('.') && /bindings(\.ts)?$/.test(source)) {
        const resolved = path.resolve(path.dirname(importer), source).replace(/\.ts$/, '')
        if (resolved === bindings) return mockBindings
      }
      return null
    },
  }
}

export default defineConfig(({ mode }) => ({
  plugins: [react(), ...(mode === 'mock' ? [tauriStandIns()] : [])],
  // Tauri expects a fixed port and a relative base for the bundled assets.
  clearScreen: false,
  server: { port: 1420, strictPort: true },
  preview: { port: mode === 'mock' ? 4173 : 4174, strictPort: true },
  envPrefix: ['VITE_', 'TAURI_ENV_'],
  build: {
    outDir: mode === 'mock' ? 'dist-mock' : 'dist',
    target: 'es2022',
    sourcemap: mode === 'mock',
  },
}))

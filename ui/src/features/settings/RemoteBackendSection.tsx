// Where transcription, speech and chat run: this computer, or a remote server that
// speaks OpenAI's API (another Izwi, vLLM, vLLM-Omni). The key goes to the Rust side and
// is never shown again: the UI learns only whether there is one.

import { useEffect, useState } from 'react'
import type { RemoteInfo } from '../../bindings'
import { ErrorNote } from '../../components/ErrorNote'
import { api } from '../../lib/api'

export function RemoteBackendSection() {
  const [remote, setRemote] = useState<RemoteInfo | null | undefined>(undefined)
  const [url, setUrl] = useState('')
  const [key, setKey] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<{ title: string; error: unknown } | null>(null)

  const show = (next: RemoteInfo | null) => {
    setRemote(next)
    setUrl(next?.url ?? '')
    setKey('')
  }

  useEffect(() => {
    let live = true
    api
      .getRemoteBackend()
      .then((r) => live && show(r))
      .catch((e) => live && setError({ title: 'Could not read the backend', error: e }))
    return () => {
      live = false
    }
  }, [])

  const save = async (next: string | null) => {
    setBusy(true)
    setError(null)
    try {
      show(await api.setRemoteBackend(next, next == null ? null : key.trim() || null))
    } catch (e) {
      setError({ title: next == null ? 'Could not go back to this computer' : 'Could not use that server', error: e })
    } finally {
      setBusy(false)
    }
  }

  return (
    <section className="settings-group" aria-label="Backend">
      <h2 className="section-label">Backend</h2>
      <div className="setting">
        <div className="setting-text">
          <div className="setting-label">Where models run</div>
          <div className="setting-hint" data-testid="remote-backend-status">
            {remote ? (
              <>
                Transcription, speech and chat run on <code>{remote.url}</code>
                {remote.has_key ? ', with an API key' : ''}. Jobs and history stay here.
              </>
            ) : (
              'This computer.'
            )}
          </div>
        </div>
        {remote && (
          <button type="button" className="btn btn-sm" disabled={busy} onClick={() => save(null)}>
            Use this computer
          </button>
        )}
      </div>
      {error && <ErrorNote error={error.error} title={error.title} onDismiss={() => setError(null)} />}
      {remote !== undefined && (
        <form
          className="setting remote-backend-fields"
          onSubmit={(e) => {
            e.preventDefault()
            if (url.trim()) void save(url.trim())
          }}
        >
          <label className="field">
            <span className="field-label">Server</span>
            <input
              className="input"
              value={url}
              aria-label="Remote server URL"
              placeholder="http://gpu-box:8000/v1"
              disabled={busy}
              onChange={(e) => setUrl(e.target.value)}
              aria-describedby="remote-url-hint"
            />
          </label>
          <label className="field">
            <span className="field-label">Key</span>
            <input
              className="input"
              type="password"
              autoComplete="off"
              value={key}
              aria-label="Remote server key"
              disabled={busy}
              onChange={(e) => setKey(e.target.value)}
              placeholder={remote?.has_key ? 'Kept' : 'None'}
            />
          </label>
          <button type="submit" className="btn btn-sm btn-primary" disabled={busy || !url.trim()}>
            {busy ? 'Saving…' : 'Use this server'}
          </button>
          <span id="remote-url-hint" className="muted small remote-backend-hint">
            An OpenAI-compatible server’s base URL: another Izwi, vLLM, vLLM-Omni.
          </span>
        </form>
      )}
    </section>
  )
}

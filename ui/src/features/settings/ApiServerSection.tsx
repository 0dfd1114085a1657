// The OpenAI-compatible API, served by the app while it is open: where it listens, its
// key, on or off. The settings are remembered on the Rust side when the API starts.

import { useEffect, useState } from 'react'
import type { ApiServerSettings, ApiServerStatus } from '../../bindings'
import { CopyButton } from '../../components/CopyButton'
import { ErrorNote } from '../../components/ErrorNote'
import { api } from '../../lib/api'

/** The port as typed, when it is one (1 to 65535). */
function parsePort(text: string): number | null {
  if (!/^\d{1,5}$/.test(text.trim())) return null
  const port = Number(text)
  return port >= 1 && port <= 65535 ? port : null
}

export function ApiServerSection() {
  const [status, setStatus] = useState<ApiServerStatus | null>(null)
  const [host, setHost] = useState('')
  const [port, setPort] = useState('')
  const [key, setKey] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<{ title: string; error: unknown } | null>(null)

  const show = (next: ApiServerStatus) => {
    setStatus(next)
    setHost(next.settings.host)
    setPort(String(next.settings.port))
    setKey(next.settings.api_key ?? '')
  }

  useEffect(() => {
    let live = true
    api
      .getApiServer()
      .then((s) => live && show(s))
      .catch((e) => live && setError({ title: 'Could not read the API’s settings', error: e }))
    return () => {
      live = false
    }
  }, [])

  const running = status?.url != null
  const portNumber = parsePort(port)

  const toggle = async () => {
    if (!status) return
    setBusy(true)
    setError(null)
    try {
      if (running) {
        show(await api.stopApiServer())
      } else {
        if (portNumber == null) return
        const settings: ApiServerSettings = { host: host.trim(), port: portNumber, api_key: key.trim() || null }
        show(await api.startApiServer(settings))
      }
    } catch (e) {
      setError({ title: running ? 'Could not stop the API' : 'Could not start the API', error: e })
    } finally {
      setBusy(false)
    }
  }

  return (
    <section className="settings-group" aria-label="API">
      <h2 className="section-label">API</h2>
      <div className="setting">
        <div className="setting-text">
          <div className="setting-label" id="api-server-label">
            OpenAI-compatible API
          </div>
          <div className="setting-hint" data-testid="api-server-status">
            {running ? (
              <>
                Listening at <code>{status.url}</code> while Izwi is open.
              </>
            ) : (
              'Off. Programs that speak OpenAI’s API can use Izwi’s models through it.'
            )}
          </div>
        </div>
        <div className="api-server-actions">
          {running && status.url && <CopyButton text={status.url} what="the address" />}
          <button
            type="button"
            role="switch"
            aria-checked={running}
            aria-labelledby="api-server-label"
            className={`btn btn-sm${running ? ' btn-primary' : ''}`}
            disabled={!status || busy || (!running && portNumber == null)}
            onClick={toggle}
          >
            {busy ? (running ? 'Stopping…' : 'Starting…') : running ? 'On' : 'Off'}
          </button>
        </div>
      </div>
      {error && <ErrorNote error={error.error} title={error.title} onDismiss={() => setError(null)} />}
      {status && (
        <div className="setting api-server-fields">
          <label className="field">
            <span className="field-label">Address</span>
            <input
              className="input"
              value={host}
              aria-label="Address"
              disabled={running || busy}
              onChange={(e) => setHost(e.target.value)}
              aria-describedby="api-host-hint"
            />
            <span id="api-host-hint" className="muted small">
              127.0.0.1: this computer only. Any other needs a key.
            </span>
          </label>
          <label className="field">
            <span className="field-label">Port</span>
            <input
              className="input"
              inputMode="numeric"
              value={port}
              aria-label="Port"
              disabled={running || busy}
              onChange={(e) => setPort(e.target.value)}
              aria-invalid={portNumber == null}
            />
            {portNumber == null && <span className="muted small">A port is 1 to 65535.</span>}
          </label>
          <label className="field">
            <span className="field-label">API key</span>
            <input
              className="input"
              type="password"
              autoComplete="off"
              value={key}
              aria-label="API key"
              disabled={running || busy}
              onChange={(e) => setKey(e.target.value)}
              placeholder="None"
              aria-describedby="api-key-hint"
            />
            <span id="api-key-hint" className="muted small">
              Clients send it as <code>Authorization: Bearer KEY</code>.
            </span>
          </label>
        </div>
      )}
    </section>
  )
}

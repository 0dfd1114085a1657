// Settings: where data lives, what runs the models, the default model, the theme, the
// dictation shortcut, the API.

import { useState } from 'react'
import type { Theme } from '../../bindings'
import { CopyButton } from '../../components/CopyButton'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon, type IconName } from '../../components/Icon'
import { Kbd } from '../../components/Kbd'
import { toast } from '../../lib/toast'
import { describeError } from '../../lib/errors'
import { deviceLabel } from '../../lib/format'
import { installedTranscribers, useModels } from '../models/modelsStore'
import { ApiServerSection } from './ApiServerSection'
import { RemoteBackendSection } from './RemoteBackendSection'
import { changeDefaultModel, changeDictationShortcut, changeTheme, loadSettings, useSettings } from './settingsStore'

const THEMES: { id: Theme; label: string; icon: IconName }[] = [
  { id: 'system', label: 'System', icon: 'monitor' },
  { id: 'light', label: 'Light', icon: 'sun' },
  { id: 'dark', label: 'Dark', icon: 'moon' },
]

/** The global dictation shortcut, typed as modifiers and a key; saved when the field is left or Enter pressed. */
function DictationShortcut({ current }: { current: string }) {
  const [draft, setDraft] = useState(current)
  const [error, setError] = useState<unknown>(null)
  const save = async () => {
    if (draft.trim() === current) return
    try {
      await changeDictationShortcut(draft)
      setError(null)
    } catch (e) {
      setError(e)
    }
  }
  return (
    <div className="setting">
      <div className="setting-text">
        <label className="setting-label" htmlFor="dictation-shortcut">
          Dictation shortcut
        </label>
        <div className="setting-hint">
          Starts dictating from any app; pressed again, it stops and puts the text on the clipboard to paste. Modifiers
          and a key, like CommandOrControl+Shift+Space.
        </div>
        {error != null && <ErrorNote error={error} compact />}
      </div>
      <input
        id="dictation-shortcut"
        className="input"
        value={draft}
        spellCheck={false}
        onChange={(e) => setDraft(e.target.value)}
        onBlur={() => void save()}
        onKeyDown={(e) => {
          if (e.key === 'Enter') void save()
        }}
      />
    </div>
  )
}

function PathRow({ label, path, hint }: { label: string; path: string; hint: string }) {
  return (
    <div className="setting">
      <div className="setting-text">
        <div className="setting-label">{label}</div>
        <div className="setting-hint">{hint}</div>
        <code className="path" title={path}>
          {path}
        </code>
      </div>
      <CopyButton text={path} what="the path" />
    </div>
  )
}

export function SettingsPage({ onShowShortcuts }: { onShowShortcuts: () => void }) {
  const { settings, error } = useSettings()
  const { models } = useModels()
  const installed = installedTranscribers(models)
  const [saving, setSaving] = useState(false)

  const fail = (what: string) => (e: unknown) => {
    const { title, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not change ${what}: ${title}`, detail })
  }

  return (
    <div className="page page-settings">
      <header className="page-header">
        <h1 className="page-title">Settings</h1>
      </header>
      <div className="page-scroll settings">
        {error != null && !settings && (
          <ErrorNote error={error} title="Could not read the settings" onRetry={() => loadSettings()} />
        )}
        {settings && (
          <>
            <section className="settings-group" aria-label="Appearance">
              <h2 className="section-label">Appearance</h2>
              <div className="setting">
                <div className="setting-text">
                  <div className="setting-label" id="theme-label">
                    Theme
                  </div>
                  <div className="setting-hint">System follows your computer’s light or dark mode.</div>
                </div>
                <div className="segmented" role="radiogroup" aria-labelledby="theme-label">
                  {THEMES.map((t) => (
                    <button
                      key={t.id}
                      type="button"
                      role="radio"
                      aria-checked={settings.theme === t.id}
                      className={settings.theme === t.id ? 'segmented-on' : ''}
                      onClick={() => changeTheme(t.id).catch(fail('the theme'))}
                    >
                      <Icon name={t.icon} size={13} /> {t.label}
                    </button>
                  ))}
                </div>
              </div>
            </section>

            <section className="settings-group" aria-label="Transcription">
              <h2 className="section-label">Transcription</h2>
              <div className="setting">
                <div className="setting-text">
                  <label className="setting-label" htmlFor="default-model">
                    Default model
                  </label>
                  <div className="setting-hint">
                    {installed.length
                      ? 'Used for new transcriptions unless you pick another.'
                      : 'Install a model on the Models page first.'}
                  </div>
                </div>
                <select
                  id="default-model"
                  className="select"
                  value={settings.default_transcribe_model ?? ''}
                  disabled={saving || !installed.length}
                  onChange={async (e) => {
                    setSaving(true)
                    try {
                      await changeDefaultModel(e.target.value || null)
                    } catch (err) {
                      fail('the default model')(err)
                    } finally {
                      setSaving(false)
                    }
                  }}
                >
                  <option value="">First installed model</option>
                  {installed.map((m) => (
                    <option key={m.id} value={m.id}>
                      {m.name}
                    </option>
                  ))}
                  {settings.default_transcribe_model &&
                    !installed.some((m) => m.id === settings.default_transcribe_model) && (
                      <option value={settings.default_transcribe_model}>
                        {settings.default_transcribe_model} (not installed)
                      </option>
                    )}
                </select>
              </div>
              <div className="setting">
                <div className="setting-text">
                  <div className="setting-label">Device</div>
                  <div className="setting-hint">
                    Models run on <strong data-testid="device-now">{deviceLabel(settings.device)}</strong>.
                    {settings.devices.length > 1 ? ' Izwi picks the fastest one that works.' : ''}
                  </div>
                </div>
                <ul className="chips" aria-label="Available devices">
                  {settings.devices.map((d) => (
                    <li key={d} className={`chip${d === settings.device ? ' chip-on' : ''}`}>
                      <Icon name="cpu" size={12} /> {deviceLabel(d)}
                    </li>
                  ))}
                </ul>
              </div>
            </section>

            <ApiServerSection />
            <RemoteBackendSection />

            <section className="settings-group" aria-label="Storage">
              <h2 className="section-label">Storage</h2>
              <PathRow
                label="Data folder"
                path={settings.data_dir}
                hint="Jobs, transcripts and the audio copies Izwi keeps."
              />
              <PathRow
                label="Model cache"
                path={settings.hf_cache_dir}
                hint="The Hugging Face cache, shared with other tools."
              />
            </section>

            <section className="settings-group" aria-label="Keyboard">
              <h2 className="section-label">Keyboard</h2>
              <div className="setting">
                <div className="setting-text">
                  <div className="setting-label">Shortcuts</div>
                  <div className="setting-hint">
                    Press <Kbd>?</Kbd> anywhere to see them.
                  </div>
                </div>
                <button type="button" className="btn btn-sm" onClick={onShowShortcuts}>
                  <Icon name="keyboard" size={13} /> Show shortcuts
                </button>
              </div>
              <DictationShortcut current={settings.dictation_shortcut} />
            </section>
          </>
        )}
      </div>
    </div>
  )
}

// Voices: the library (rename, settings, preview, delete), voices to download, and new
// voices on an installed voice model with their own settings, designed by a Qwen3-TTS
// VoiceDesign model or cloned from a recording by a Qwen3-TTS Base model.

import { useState, type FormEvent } from 'react'
import type { ModelInfo, VoiceInfo } from '../../bindings'
import { Dialog } from '../../components/Dialog'
import { EmptyState } from '../../components/EmptyState'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { ProgressBar } from '../../components/ProgressBar'
import { confirm } from '../../lib/confirm'
import { describeError } from '../../lib/errors'
import { formatBytes, formatEta, plural } from '../../lib/format'
import { navigate } from '../../lib/nav'
import { toast } from '../../lib/toast'
import { cancelDownload, downloadModel, dismissModelError, isInstalled, useModels } from '../models/modelsStore'
import { CloneVoiceDialog } from './CloneVoiceDialog'
import { DesignVoiceDialog } from './DesignVoiceDialog'
import { PreviewButton } from './VoicePicker'
import { ModelAndNameFields } from './VoiceFields'
import { SpeedPitchFields, VoiceSettingsForm } from './VoiceSettingsForm'
import {
  addVoice,
  DEFAULT_SETTINGS,
  deleteVoice,
  isVoiceModel,
  loadVoices,
  originLabel,
  renameVoice,
  settingsOf,
  updateVoiceSettings,
  useVoices,
  voiceFamily,
  voiceLanguage,
} from './voicesStore'

function settingsSummary(v: VoiceInfo, family: string | null): string {
  if (family === 'LFM2-Audio') return `Built-in voice ${v.settings.speaker_name ?? ''} · sampled, no speed or pitch`
  const s = settingsOf(v.settings)
  const parts = [`${s.speed.toFixed(2)}× speed`]
  if (s.pitch) parts.push(`${s.pitch > 0 ? '+' : ''}${s.pitch} st pitch`)
  if (s.noise_scale != null) parts.push(`expressiveness ${s.noise_scale}`)
  if (s.noise_w != null) parts.push(`rhythm variation ${s.noise_w}`)
  if (s.speaker != null) parts.push(`speaker ${s.speaker}`)
  return parts.join(' · ')
}

function RenameForm({ voice, onDone }: { voice: VoiceInfo; onDone: () => void }) {
  const [name, setName] = useState(voice.name)
  const [error, setError] = useState<unknown>(null)
  const [saving, setSaving] = useState(false)
  const submit = async (e: FormEvent) => {
    e.preventDefault()
    if (name.trim() === voice.name) return onDone()
    setSaving(true)
    try {
      await renameVoice(voice.id, name)
      onDone()
    } catch (err) {
      setError(err)
    } finally {
      setSaving(false)
    }
  }
  return (
    <form className="voice-rename" onSubmit={submit} aria-label={`Rename ${voice.name}`}>
      <input
        className="input"
        value={name}
        onChange={(e) => setName(e.target.value)}
        aria-label="Voice name"
        autoFocus
        maxLength={80}
        onKeyDown={(e) => {
          if (e.key === 'Escape') {
            e.preventDefault()
            onDone()
          }
        }}
      />
      <button type="submit" className="btn btn-primary btn-sm" disabled={saving || !name.trim()}>
        Save
      </button>
      <button type="button" className="btn btn-sm" onClick={onDone}>
        Cancel
      </button>
      {error != null && <ErrorNote error={error} title="Could not rename it" compact />}
    </form>
  )
}

function VoiceCard({ voice, origin, family }: { voice: VoiceInfo; origin: string; family: string | null }) {
  // LFM2-Audio's voices have no preview and no settings of their own.
  const lfm2 = family === 'LFM2-Audio'
  const [mode, setMode] = useState<'view' | 'rename' | 'settings'>('view')
  const [deleting, setDeleting] = useState(false)
  const remove = async () => {
    const ok = await confirm({
      title: `Delete ${voice.name}?`,
      body:
        voice.source === 'cloned'
          ? 'Izwi forgets this voice and deletes its copy of the recording it was cloned from: a file you chose stays where it was, but a recording made in Izwi is kept nowhere else. The voice model stays installed.'
          : 'Izwi forgets this voice and its settings. The voice model stays installed.',
      confirmLabel: 'Delete',
      danger: true,
    })
    if (!ok) return
    setDeleting(true)
    try {
      await deleteVoice(voice.id)
      toast({ kind: 'success', title: `Deleted ${voice.name}` })
    } catch (e) {
      const { title, detail } = describeError(e)
      toast({ kind: 'error', title: `Could not delete ${voice.name}: ${title}`, detail })
    } finally {
      setDeleting(false)
    }
  }
  return (
    <li className="voice-card" aria-label={voice.name} data-voice={voice.id}>
      <div className="voice-head">
        {mode === 'rename' ? (
          <RenameForm voice={voice} onDone={() => setMode('view')} />
        ) : (
          <div className="voice-names">
            <h3 className="voice-name">{voice.name}</h3>
            <span className="muted small">
              {family ? `${family} · ` : ''}
              {voiceLanguage(voice.language)} · <code className="model-id">{voice.model_id}</code>
            </span>
          </div>
        )}
        <div className="voice-badges">
          <span className="badge badge-muted">{origin}</span>
          {voice.installed ? (
            <span className="badge badge-done">
              <Icon name="check" size={11} /> Installed
            </span>
          ) : (
            <span className="badge badge-muted">Not installed</span>
          )}
        </div>
      </div>
      <p className="voice-summary muted small" data-testid="voice-settings-summary">
        {settingsSummary(voice, family)}
      </p>
      {mode === 'settings' && (
        <VoiceSettingsForm
          name={voice.name}
          settings={voice.settings}
          onCancel={() => setMode('view')}
          onSave={async (settings) => {
            await updateVoiceSettings(voice.id, settings)
            setMode('view')
            toast({ kind: 'success', title: `Saved the settings of ${voice.name}` })
          }}
        />
      )}
      {mode === 'view' && (
        <div className="toolbar voice-actions">
          {!lfm2 && <PreviewButton voice={voice} />}
          <button
            type="button"
            className="btn btn-ghost btn-sm"
            onClick={() => setMode('rename')}
            aria-label={`Rename ${voice.name}`}
          >
            <Icon name="edit" size={13} /> Rename
          </button>
          {!lfm2 && (
            <button
              type="button"
              className="btn btn-ghost btn-sm"
              onClick={() => setMode('settings')}
              aria-label={`Settings of ${voice.name}`}
            >
              <Icon name="sliders" size={13} /> Settings
            </button>
          )}
          <button
            type="button"
            className="btn btn-ghost btn-sm btn-danger-text"
            onClick={remove}
            disabled={deleting}
            aria-label={`Delete ${voice.name}`}
          >
            <Icon name={deleting ? 'spinner' : 'trash'} size={13} /> Delete
          </button>
        </div>
      )}
    </li>
  )
}

function DownloadRow({ model }: { model: ModelInfo }) {
  const { downloads, errors } = useModels()
  const dl = downloads[model.id]
  const err = errors[model.id]
  return (
    <li className="voice-download" aria-label={model.name}>
      <div className="voice-names">
        <span className="voice-name">{model.name}</span>
        <span className="muted small">
          {model.languages.map((l) => voiceLanguage(l)).join(', ')} · {formatBytes(model.size_bytes)}
          {model.license ? ` · ${model.license}` : ''}
        </span>
      </div>
      {dl ? (
        <div className="voice-download-progress">
          <ProgressBar value={dl.total ? dl.downloaded / dl.total : null} label={`Downloading ${model.name}`} />
          <span className="muted small tabular" data-testid="voice-download-progress">
            {formatBytes(dl.downloaded)} of {formatBytes(dl.total)} ·{' '}
            {dl.cancelling ? 'Cancelling…' : formatEta(dl.etaSeconds)}
          </span>
          <button
            type="button"
            className="btn btn-sm"
            disabled={dl.cancelling}
            onClick={() => cancelDownload(model.id)}
            aria-label={`Cancel download of ${model.name}`}
          >
            <Icon name="stop" size={11} /> Cancel
          </button>
        </div>
      ) : (
        <button
          type="button"
          className="btn btn-sm btn-primary"
          onClick={() => downloadModel(model.id)}
          aria-label={`Download ${model.name}`}
        >
          <Icon name="download" size={13} /> Download
        </button>
      )}
      {err && (
        <ErrorNote
          compact
          error={err.error}
          title="The download stopped"
          onRetry={err.action === 'download' ? () => downloadModel(model.id) : undefined}
          onDismiss={() => dismissModelError(model.id)}
        />
      )}
    </li>
  )
}

function AddVoiceDialog({ models, onClose }: { models: ModelInfo[]; onClose: () => void }) {
  const [modelId, setModelId] = useState(models[0]?.id ?? '')
  const [name, setName] = useState('')
  const [speed, setSpeed] = useState(1)
  const [pitch, setPitch] = useState(0)
  const [error, setError] = useState<unknown>(null)
  const [saving, setSaving] = useState(false)
  const submit = async (e?: FormEvent) => {
    e?.preventDefault()
    setSaving(true)
    try {
      const voice = await addVoice(modelId, name, { ...DEFAULT_SETTINGS, speed, pitch })
      toast({
        kind: 'success',
        title: `Added ${voice.name}`,
        detail: 'Its settings hold more, such as expressiveness.',
      })
      onClose()
    } catch (err) {
      setError(err)
    } finally {
      setSaving(false)
    }
  }
  return (
    <Dialog
      title="Add a voice"
      onClose={onClose}
      labelledBy="add-voice-title"
      footer={
        <>
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            form="add-voice-form"
            className="btn btn-primary"
            disabled={saving || !name.trim() || !modelId}
          >
            {saving ? 'Adding…' : 'Add voice'}
          </button>
        </>
      }
    >
      <form id="add-voice-form" className="add-voice" onSubmit={submit}>
        <p className="muted">A voice is a voice model with its own name and settings, e.g. a slower narrator.</p>
        <ModelAndNameFields
          modelLabel="Voice model"
          models={models}
          modelId={modelId}
          onModel={setModelId}
          name={name}
          onName={setName}
          placeholder="Narrator, slow"
        />
        <SpeedPitchFields speed={speed} pitch={pitch} onSpeed={setSpeed} onPitch={setPitch} />
        {error != null && <ErrorNote error={error} title="Could not add the voice" compact />}
      </form>
    </Dialog>
  )
}

export function VoicesPage() {
  const { voices, loaded, loadError } = useVoices()
  const { models } = useModels()
  const [adding, setAdding] = useState(false)
  const [designing, setDesigning] = useState(false)
  const [cloning, setCloning] = useState(false)
  const voiceModels = models.filter(isVoiceModel)
  const installedModels = voiceModels.filter(isInstalled)
  const toDownload = voiceModels.filter((m) => !isInstalled(m))

  return (
    <div className="page page-voices">
      <header className="page-header">
        <h1 className="page-title">Voices</h1>
        <p className="page-summary" data-testid="voices-summary">
          {loaded ? `${plural(voices.length, 'voice')} in the library` : 'Loading…'}
        </p>
        <div className="page-actions">
          <button
            type="button"
            className="btn btn-sm"
            onClick={() => setAdding(true)}
            disabled={!installedModels.length}
            data-tooltip={
              installedModels.length ? 'A voice model with its own name and settings' : 'Download a voice first'
            }
          >
            <Icon name="plus" size={13} /> Add voice
          </button>
          <button type="button" className="btn btn-sm" onClick={() => setDesigning(true)}>
            <Icon name="plus" size={13} /> Design a voice
          </button>
          <button type="button" className="btn btn-sm" onClick={() => setCloning(true)}>
            <Icon name="plus" size={13} /> Clone a voice
          </button>
        </div>
      </header>
      {loadError != null && (
        <ErrorNote error={loadError} title="Could not list the voices" onRetry={() => loadVoices()} />
      )}
      <div className="page-scroll">
        <section className="voice-group" aria-label="Library">
          <h2 className="section-label">Library</h2>
          {loaded && !loadError && voices.length === 0 ? (
            <EmptyState icon="voices" title="No voices yet">
              <p>
                Download a voice below (about 60 MB, once); it appears here and on the Speak and Batch export pages.
              </p>
            </EmptyState>
          ) : (
            <ul className="voice-list" aria-label="Voices">
              {voices.map((v) => (
                <VoiceCard key={v.id} voice={v} origin={originLabel(v, voices)} family={voiceFamily(v, models)} />
              ))}
            </ul>
          )}
        </section>
        <section className="voice-group" aria-label="Download voices">
          <h2 className="section-label">Download voices</h2>
          {toDownload.length ? (
            <ul className="voice-downloads" aria-label="Voices to download">
              {toDownload.map((m) => (
                <DownloadRow key={m.id} model={m} />
              ))}
            </ul>
          ) : (
            <p className="muted small">
              {voiceModels.length ? 'Every voice of the catalog is installed.' : 'The catalog has no voices. '}
              <button type="button" className="link" onClick={() => navigate('models')}>
                See all models
              </button>
            </p>
          )}
        </section>
      </div>
      {adding && <AddVoiceDialog models={installedModels} onClose={() => setAdding(false)} />}
      {designing && <DesignVoiceDialog onClose={() => setDesigning(false)} />}
      {cloning && <CloneVoiceDialog onClose={() => setCloning(false)} />}
    </div>
  )
}

// "Clone a voice": a Qwen3-TTS Base model makes a voice from a recording the user chose,
// with its transcript (typed, or Whisper's when left empty).

import { useState, type FormEvent } from 'react'
import type { ClonedVoice, ModelInfo, TranscriptSource } from '../../bindings'
import { Dialog } from '../../components/Dialog'
import { ErrorNote } from '../../components/ErrorNote'
import { choose } from '../../lib/choose'
import { navigate } from '../../lib/nav'
import { cloneVoice } from './voicesStore'

function sourceLabel(source: TranscriptSource): string {
  switch (source.kind) {
    case 'given':
      return 'the transcript you gave'
    case 'whisper':
      return `heard by ${source.model_id}`
    case 'missing':
      return `no transcript: ${source.reason}`
  }
}

/** `models`: the installed Qwen3-TTS models; the runtime refuses one that is not Base. */
export function CloneVoiceDialog({ models, onClose }: { models: ModelInfo[]; onClose: () => void }) {
  const [modelId, setModelId] = useState(models[0]?.id ?? '')
  const [name, setName] = useState('')
  const [audio, setAudio] = useState<string | null>(null)
  const [text, setText] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [saving, setSaving] = useState(false)
  const [cloned, setCloned] = useState<ClonedVoice | null>(null)
  const pick = async () => {
    const [path] = await choose('media_files')
    if (path) setAudio(path)
  }
  const submit = async (e?: FormEvent) => {
    e?.preventDefault()
    if (!audio) return
    setSaving(true)
    setError(null)
    try {
      setCloned(await cloneVoice(modelId, name, audio, text.trim() ? text : null))
    } catch (err) {
      setError(err)
    } finally {
      setSaving(false)
    }
  }
  const footer = cloned ? (
    <button type="button" className="btn btn-primary" onClick={onClose}>
      Done
    </button>
  ) : (
    <>
      <button type="button" className="btn" onClick={onClose}>
        Cancel
      </button>
      <button
        type="submit"
        form="clone-voice-form"
        className="btn btn-primary"
        disabled={saving || !modelId || !name.trim() || !audio}
      >
        {saving ? 'Cloning…' : 'Clone'}
      </button>
    </>
  )
  return (
    <Dialog title="Clone a voice" onClose={onClose} labelledBy="clone-voice-title" footer={footer}>
      {cloned ? (
        <div data-testid="cloned-voice">
          <p>
            Cloned <strong>{cloned.voice.name}</strong>; preview it in the library.
          </p>
          {cloned.voice.reference_text && <blockquote>{cloned.voice.reference_text}</blockquote>}
          <p className="muted small" data-testid="transcript-source">
            Transcript: {sourceLabel(cloned.transcript)}
          </p>
        </div>
      ) : models.length === 0 ? (
        <p className="muted" data-testid="no-clone-model">
          Cloning a voice needs a Qwen3-TTS Base model, and none is installed.{' '}
          <button
            type="button"
            className="link"
            onClick={() => {
              onClose()
              navigate('models')
            }}
          >
            Import one on the Models page
          </button>
        </p>
      ) : (
        <form id="clone-voice-form" className="add-voice" onSubmit={submit}>
          <p className="muted">A recording of the speaker (up to 60 s) and a Qwen3-TTS Base model make the voice.</p>
          <div className="field">
            <span className="field-label">Recording</span>
            <div className="toolbar">
              <button type="button" className="btn btn-sm" onClick={pick}>
                Choose a file…
              </button>
              <span className="muted small" data-testid="clone-audio">
                {audio ?? 'none chosen'}
              </span>
            </div>
          </div>
          <label className="field">
            <span className="field-label">Base model</span>
            <select className="select" value={modelId} onChange={(e) => setModelId(e.target.value)}>
              {models.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.name}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span className="field-label">Name</span>
            <input
              className="input"
              value={name}
              onChange={(e) => setName(e.target.value)}
              placeholder="Me"
              maxLength={80}
              data-autofocus
            />
          </label>
          <label className="field">
            <span className="field-label">Transcript</span>
            <textarea
              className="textarea"
              value={text}
              onChange={(e) => setText(e.target.value)}
              placeholder="What is said in the recording; empty: Whisper's, when a Whisper model is installed"
              rows={3}
            />
          </label>
          {error != null && <ErrorNote error={error} title="Could not clone the voice" compact />}
        </form>
      )}
    </Dialog>
  )
}

// "Design a voice": a Qwen3-TTS VoiceDesign model makes a voice from a description.

import { useState, type FormEvent } from 'react'
import type { ModelInfo } from '../../bindings'
import { Dialog } from '../../components/Dialog'
import { ErrorNote } from '../../components/ErrorNote'
import { navigate } from '../../lib/nav'
import { toast } from '../../lib/toast'
import { designVoice } from './voicesStore'

/** `models`: the installed Qwen3-TTS models; the runtime refuses one that is not VoiceDesign. */
export function DesignVoiceDialog({ models, onClose }: { models: ModelInfo[]; onClose: () => void }) {
  const [modelId, setModelId] = useState(models[0]?.id ?? '')
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [saving, setSaving] = useState(false)
  const submit = async (e?: FormEvent) => {
    e?.preventDefault()
    setSaving(true)
    setError(null)
    try {
      const voice = await designVoice(modelId, name, description)
      toast({ kind: 'success', title: `Designed ${voice.name}`, detail: 'Preview it in the library.' })
      onClose()
    } catch (err) {
      setError(err)
    } finally {
      setSaving(false)
    }
  }
  return (
    <Dialog
      title="Design a voice"
      onClose={onClose}
      labelledBy="design-voice-title"
      footer={
        <>
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            form="design-voice-form"
            className="btn btn-primary"
            disabled={saving || !modelId || !name.trim() || !description.trim()}
          >
            {saving ? 'Designing…' : 'Keep'}
          </button>
        </>
      }
    >
      {models.length === 0 ? (
        <p className="muted" data-testid="no-design-model">
          Designing a voice needs a Qwen3-TTS VoiceDesign model, and none is installed.{' '}
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
        <form id="design-voice-form" className="add-voice" onSubmit={submit}>
          <p className="muted">Describe a voice and a Qwen3-TTS VoiceDesign model makes it.</p>
          <label className="field">
            <span className="field-label">VoiceDesign model</span>
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
              placeholder="Calm"
              maxLength={80}
              data-autofocus
            />
          </label>
          <label className="field">
            <span className="field-label">Description</span>
            <textarea
              className="textarea"
              value={description}
              onChange={(e) => setDescription(e.target.value)}
              placeholder="A calm, low male voice, speaking slowly"
              rows={3}
            />
          </label>
          {error != null && <ErrorNote error={error} title="Could not design the voice" compact />}
        </form>
      )}
    </Dialog>
  )
}

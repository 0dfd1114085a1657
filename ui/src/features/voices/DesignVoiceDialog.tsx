// "Design a voice": a Qwen3-TTS VoiceDesign model makes a voice from a description.

import { useState, type FormEvent } from 'react'
import { Dialog } from '../../components/Dialog'
import { ErrorNote } from '../../components/ErrorNote'
import { navigate } from '../../lib/nav'
import { toast } from '../../lib/toast'
import { useQwen3Models } from './useQwen3Models'
import { ModelAndNameFields } from './VoiceFields'
import { designVoice } from './voicesStore'

/** Offers the installed Qwen3-TTS models of the variant it needs. */
export function DesignVoiceDialog({ onClose }: { onClose: () => void }) {
  const models = useQwen3Models('voice_design')
  const [picked, setModelId] = useState('')
  const modelId = picked || models?.[0]?.id || ''
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
      {models == null ? (
        <p className="muted">Finding the Qwen3-TTS models…</p>
      ) : models.length === 0 ? (
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
          <ModelAndNameFields
            modelLabel="VoiceDesign model"
            models={models}
            modelId={modelId}
            onModel={setModelId}
            name={name}
            onName={setName}
            placeholder="Calm"
          />
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

// How a voice speaks: speed, noise scale, noise w, pitch, speaker. Empty noise fields
// use the voice model's own values.

import { useState, type FormEvent } from 'react'
import type { VoiceSettings } from '../../bindings'
import { ErrorNote } from '../../components/ErrorNote'
import { settingsOf } from './voicesStore'

/** A form's text for an optional number; '' is "the model's default". */
const text = (v: number | null) => (v == null ? '' : String(v))

function parseOptional(value: string, min: number, max: number, what: string): number | null {
  const t = value.trim()
  if (!t) return null
  const n = Number(t)
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`${what} must be between ${min} and ${max}.`)
  return n
}

export function VoiceSettingsForm({
  name,
  settings,
  onSave,
  onCancel,
}: {
  name: string
  settings: VoiceSettings
  onSave: (settings: VoiceSettings) => Promise<unknown>
  onCancel: () => void
}) {
  const initial = settingsOf(settings)
  const [speed, setSpeed] = useState(initial.speed)
  const [pitch, setPitch] = useState(initial.pitch)
  const [noiseScale, setNoiseScale] = useState(text(initial.noise_scale))
  const [noiseW, setNoiseW] = useState(text(initial.noise_w))
  const [speaker, setSpeaker] = useState(text(initial.speaker))
  const [error, setError] = useState<unknown>(null)
  const [saving, setSaving] = useState(false)

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    let next: VoiceSettings
    try {
      const spk = parseOptional(speaker, 0, 10_000, 'Speaker')
      if (spk != null && !Number.isInteger(spk)) throw new Error('Speaker must be a whole number.')
      next = {
        speed,
        pitch,
        noise_scale: parseOptional(noiseScale, 0, 2, 'Noise scale'),
        noise_w: parseOptional(noiseW, 0, 2, 'Noise w'),
        speaker: spk,
      }
    } catch (err) {
      setError({ kind: 'invalid', message: (err as Error).message })
      return
    }
    setSaving(true)
    setError(null)
    try {
      await onSave(next)
    } catch (err) {
      setError(err)
    } finally {
      setSaving(false)
    }
  }

  return (
    <form className="voice-settings" aria-label={`Settings of ${name}`} onSubmit={submit}>
      <div className="voice-settings-grid">
        <label className="field">
          <span className="field-label">Speed</span>
          <span className="range-row">
            <input
              type="range"
              min={0.25}
              max={4}
              step={0.05}
              value={speed}
              onChange={(e) => setSpeed(Number(e.target.value))}
              aria-label="Speed"
              aria-valuetext={`${speed.toFixed(2)}×`}
            />
            <output className="tabular">{speed.toFixed(2)}×</output>
          </span>
        </label>
        <label className="field">
          <span className="field-label">Pitch</span>
          <span className="range-row">
            <input
              type="range"
              min={-12}
              max={12}
              step={0.5}
              value={pitch}
              onChange={(e) => setPitch(Number(e.target.value))}
              aria-label="Pitch"
              aria-valuetext={`${pitch} semitones`}
            />
            <output className="tabular">
              {pitch > 0 ? '+' : ''}
              {pitch} st
            </output>
          </span>
        </label>
        <label className="field">
          <span className="field-label">Noise scale</span>
          <input
            className="input"
            inputMode="decimal"
            value={noiseScale}
            onChange={(e) => setNoiseScale(e.target.value)}
            placeholder="Model default"
            aria-label="Noise scale"
            aria-describedby="noise-scale-hint"
          />
          <span id="noise-scale-hint" className="muted small">
            Expressiveness, 0 to 2
          </span>
        </label>
        <label className="field">
          <span className="field-label">Noise w</span>
          <input
            className="input"
            inputMode="decimal"
            value={noiseW}
            onChange={(e) => setNoiseW(e.target.value)}
            placeholder="Model default"
            aria-label="Noise w"
            aria-describedby="noise-w-hint"
          />
          <span id="noise-w-hint" className="muted small">
            Rhythm variation, 0 to 2
          </span>
        </label>
        <label className="field">
          <span className="field-label">Speaker</span>
          <input
            className="input"
            inputMode="numeric"
            value={speaker}
            onChange={(e) => setSpeaker(e.target.value)}
            placeholder="Default"
            aria-label="Speaker"
            aria-describedby="speaker-hint"
          />
          <span id="speaker-hint" className="muted small">
            For voices with several speakers
          </span>
        </label>
      </div>
      {error != null && <ErrorNote error={error} title="Could not save the settings" compact />}
      <div className="toolbar voice-settings-actions">
        <button
          type="button"
          className="btn btn-ghost btn-sm"
          onClick={() => {
            setSpeed(1)
            setPitch(0)
            setNoiseScale('')
            setNoiseW('')
            setSpeaker('')
          }}
        >
          Reset to defaults
        </button>
        <button type="button" className="btn btn-sm" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="btn btn-primary btn-sm" disabled={saving}>
          {saving ? 'Saving…' : 'Save settings'}
        </button>
      </div>
    </form>
  )
}

// How a voice speaks: speed, pitch, expressiveness (Piper's noise scale), rhythm variation
// (noise w), speaker. Empty fields use the voice model's own values.

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
        noise_scale: parseOptional(noiseScale, 0, 2, 'Expressiveness'),
        noise_w: parseOptional(noiseW, 0, 2, 'Rhythm variation'),
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
        <SpeedPitchFields speed={speed} pitch={pitch} onSpeed={setSpeed} onPitch={setPitch} />
        <label className="field">
          <span className="field-label">Expressiveness</span>
          <input
            className="input"
            inputMode="decimal"
            value={noiseScale}
            onChange={(e) => setNoiseScale(e.target.value)}
            placeholder="Model default"
            aria-label="Expressiveness"
            aria-describedby="noise-scale-hint"
          />
          <span id="noise-scale-hint" className="muted small">
            0 (flat) to 2 (lively) · <span title="Piper's name for it">noise scale</span>
          </span>
        </label>
        <label className="field">
          <span className="field-label">Rhythm variation</span>
          <input
            className="input"
            inputMode="decimal"
            value={noiseW}
            onChange={(e) => setNoiseW(e.target.value)}
            placeholder="Model default"
            aria-label="Rhythm variation"
            aria-describedby="noise-w-hint"
          />
          <span id="noise-w-hint" className="muted small">
            0 (even) to 2 (varied) · <span title="Piper's name for it">noise w</span>
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
            Which one, for voice models with several speakers
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

/** Speed and pitch sliders: in a voice's settings and when adding a voice. */
export function SpeedPitchFields({
  speed,
  pitch,
  onSpeed,
  onPitch,
}: {
  speed: number
  pitch: number
  onSpeed: (speed: number) => void
  onPitch: (pitch: number) => void
}) {
  return (
    <>
      <label className="field">
        <span className="field-label">Speed</span>
        <span className="range-row">
          <input
            type="range"
            min={0.25}
            max={4}
            step={0.05}
            value={speed}
            onChange={(e) => onSpeed(Number(e.target.value))}
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
            onChange={(e) => onPitch(Number(e.target.value))}
            aria-label="Pitch"
            aria-valuetext={`${pitch} semitones`}
          />
          <output className="tabular">
            {pitch > 0 ? '+' : ''}
            {pitch} st
          </output>
        </span>
      </label>
    </>
  )
}

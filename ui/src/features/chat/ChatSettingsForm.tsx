// The chat's pickers: the chat model in the page header; the voice, the speech
// recognition model, the microphone and speaker, barge-in and the end-of-speech pause in
// the voice chat settings. Each change is saved at once (the backend remembers them).

import { useEffect, useState } from 'react'
import { END_SILENCE_MS_RANGE, type AudioDevice } from '../../bindings'
import { ErrorNote } from '../../components/ErrorNote'
import { describeError } from '../../lib/errors'
import { toast } from '../../lib/toast'
import { installedTranscribers, useModels } from '../models/modelsStore'
import { useSettings } from '../settings/settingsStore'
import { useVoices, voiceLanguage } from '../voices/voicesStore'
import { changeChatSettings, loadDevices, useChat, useShownSettings } from './chatStore'
import { chatVoices, installedChatModels, installedSpeechToSpeech, type FullChatSettings } from './choices'

function save(patch: Partial<FullChatSettings>): void {
  changeChatSettings(patch).catch((e) => {
    const { title, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not save the chat settings: ${title}`, detail })
  })
}

export function ChatModelPicker() {
  const shown = useShownSettings()
  const { models } = useModels()
  const chatModels = installedChatModels(models)
  return (
    <div className="field">
      <label className="field-label" htmlFor="chat-model">
        Chat model
      </label>
      <select
        id="chat-model"
        className="select"
        value={shown?.llm ?? ''}
        disabled={!shown || !chatModels.length}
        onChange={(e) => save({ llm: e.target.value })}
      >
        {!chatModels.length && <option value="">None installed</option>}
        {chatModels.map((m) => (
          <option key={m.id} value={m.id}>
            {m.name}
          </option>
        ))}
      </select>
    </div>
  )
}

/** A device picker: "System default" (null), the devices there are, and the saved one if it is not plugged in. */
function DeviceField({
  id,
  label,
  value,
  devices,
  onChange,
}: {
  id: string
  label: string
  value: string | null
  devices: AudioDevice[] | null
  onChange: (id: string | null) => void
}) {
  const missing = value != null && devices != null && !devices.some((d) => d.id === value)
  return (
    <div className="field">
      <label className="field-label" htmlFor={id}>
        {label}
      </label>
      <select
        id={id}
        className="select"
        value={value ?? ''}
        onChange={(e) => onChange(e.target.value || null)}
        disabled={devices == null}
      >
        <option value="">System default</option>
        {missing && <option value={value}>{value} (not connected)</option>}
        {devices?.map((d) => (
          <option key={d.id} value={d.id}>
            {d.name}
            {d.is_default ? ' (default)' : ''}
          </option>
        ))}
      </select>
    </div>
  )
}

/** The end-of-speech pause: saved once the slider rests, not at every step of a drag. */
function PauseField({ value }: { value: number }) {
  const [moving, setMoving] = useState<number | null>(null)
  const ms = moving ?? value
  const [min, max] = END_SILENCE_MS_RANGE
  useEffect(() => {
    if (moving == null) return
    const t = setTimeout(() => {
      save({ end_silence_ms: moving })
      setMoving(null)
    }, 400)
    return () => clearTimeout(t)
  }, [moving])
  return (
    <div className="field">
      <label className="field-label" htmlFor="chat-pause">
        End-of-speech pause
      </label>
      <div className="range-row">
        <input
          id="chat-pause"
          type="range"
          min={min}
          max={max}
          step={50}
          value={ms}
          onChange={(e) => setMoving(Number(e.target.value))}
          aria-valuetext={`${(ms / 1000).toFixed(2)} s`}
        />
        <output htmlFor="chat-pause" className="tabular">
          {(ms / 1000).toFixed(2)} s
        </output>
      </div>
    </div>
  )
}

export function VoiceChatSettings() {
  const shown = useShownSettings()
  const { models } = useModels()
  const { voices } = useVoices()
  const defaultAsr = useSettings().settings?.default_transcribe_model ?? null
  const devices = useChat((s) => s.devices)
  const devicesError = useChat((s) => s.devicesError)
  const voiceOn = useChat((s) => s.activity === 'voice')
  const usable = chatVoices(voices, models)
  const transcribers = installedTranscribers(models)
  const speechToSpeech = installedSpeechToSpeech(models)
  const defaultName = (transcribers.find((m) => m.id === defaultAsr) ?? transcribers[0])?.name

  // Microphones and speakers come and go: listed afresh each time the settings open.
  useEffect(() => {
    void loadDevices()
  }, [])

  if (!shown) return null
  return (
    <section id="voice-chat-settings" className="chat-settings" aria-label="Voice chat settings">
      <div className="options">
        {speechToSpeech.length > 0 && (
          <div className="field">
            <label className="field-label" htmlFor="chat-mode">
              Answered by
            </label>
            <select
              id="chat-mode"
              className="select"
              value={shown.s2s ?? ''}
              onChange={(e) => save({ s2s: e.target.value || null })}
            >
              <option value="">Speech recognition, chat model and voice</option>
              {speechToSpeech.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.name}, speech to speech
                </option>
              ))}
            </select>
          </div>
        )}
        <div className="field">
          <label className="field-label" htmlFor="chat-voice">
            Voice
          </label>
          <select
            id="chat-voice"
            className="select"
            value={shown.voice ?? ''}
            disabled={!usable.length}
            onChange={(e) => save({ voice: e.target.value })}
          >
            {!usable.length && <option value="">None installed</option>}
            {usable.map((v) => (
              <option key={v.id} value={v.name}>
                {v.name} · {voiceLanguage(v.language)}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label className="field-label" htmlFor="chat-asr">
            Speech recognition
          </label>
          <select
            id="chat-asr"
            className="select"
            value={shown.asr ?? ''}
            onChange={(e) => save({ asr: e.target.value || null })}
          >
            <option value="">{defaultName ? `Default (${defaultName})` : 'Default'}</option>
            {transcribers.map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}
              </option>
            ))}
          </select>
        </div>
        <DeviceField
          id="chat-input"
          label="Microphone"
          value={shown.input_device}
          devices={devices?.inputs ?? null}
          onChange={(input_device) => save({ input_device })}
        />
        <DeviceField
          id="chat-output"
          label="Speaker"
          value={shown.output_device}
          devices={devices?.outputs ?? null}
          onChange={(output_device) => save({ output_device })}
        />
        <PauseField value={shown.end_silence_ms} />
        <label className="chat-check">
          <input type="checkbox" checked={shown.barge_in} onChange={(e) => save({ barge_in: e.target.checked })} />
          <span>
            Interrupt the reply by speaking
            <span className="muted small"> Turn off when the microphone hears the speaker.</span>
          </span>
        </label>
      </div>
      {devicesError != null && (
        <ErrorNote
          error={devicesError}
          title="Could not list the microphones and speakers"
          onRetry={() => void loadDevices()}
          compact
        />
      )}
      {voiceOn && <p className="muted small">Changes apply the next time voice chat starts.</p>}
    </section>
  )
}

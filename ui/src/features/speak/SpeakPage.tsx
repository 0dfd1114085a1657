// Speak: type text, choose a voice (preview it), set the speed, Generate: sentences play
// as they are made; then play again or save the WAV.

import { useEffect } from 'react'
import { EmptyState } from '../../components/EmptyState'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { ProgressBar } from '../../components/ProgressBar'
import { describeError, jobFailureText } from '../../lib/errors'
import { formatDuration, formatEta, plural } from '../../lib/format'
import { navigate } from '../../lib/nav'
import { chooseSavePath } from '../../lib/choose'
import { shortcutLabel } from '../../lib/platform'
import { useAction } from '../../lib/shortcuts'
import { toast } from '../../lib/toast'
import { useModels } from '../models/modelsStore'
import { VoicePicker } from '../voices/VoicePicker'
import { loadVoices, pickVoice, useVoices } from '../voices/voicesStore'
import {
  cancelSpeech,
  clearSubmitError,
  generate,
  isRunning,
  playAgain,
  saveSpeech,
  setSpeakVoice,
  setSpeed,
  setText,
  speakStore,
  stopPlayback,
  suggestedName,
  useSpeak,
} from './speakStore'

/** The most text one job takes; longer scripts belong in a batch. */
export const MAX_CHARS = 20_000

async function saveWav(): Promise<void> {
  const s = speakStore.get()
  if (!s.job || s.status !== 'done') return
  const path = await chooseSavePath('Save the speech as WAV', suggestedName(s.text))
  if (!path) return
  try {
    const saved = await saveSpeech(path)
    toast({ kind: 'success', title: 'Saved WAV', detail: saved })
  } catch (e) {
    const { title, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not save the WAV: ${title}`, detail })
  }
}

function SpeedControl({ value, voiceSpeed, disabled }: { value: number; voiceSpeed: number; disabled: boolean }) {
  return (
    <div className="field speed-field">
      <label className="field-label" htmlFor="speak-speed">
        Speed
      </label>
      <div className="speed-control">
        <input
          id="speak-speed"
          type="range"
          min={0.5}
          max={2}
          step={0.05}
          value={value}
          disabled={disabled}
          onChange={(e) => {
            const v = Number(e.target.value)
            setSpeed(Math.abs(v - voiceSpeed) < 1e-6 ? null : v)
          }}
          aria-valuetext={`${value.toFixed(2)}×`}
        />
        <output htmlFor="speak-speed" className="tabular speed-value">
          {value.toFixed(2)}×
        </output>
      </div>
    </div>
  )
}

function Progress() {
  const s = useSpeak()
  if (!s.job && !s.starting) return null
  const running = isRunning(s)
  const value = s.sentencesTotal ? s.sentencesDone / s.sentencesTotal : null
  let label: string
  if (s.starting || s.status === 'queued') label = 'Getting the voice ready…'
  else if (running)
    label = s.sentencesTotal
      ? `Sentence ${Math.min(s.sentencesDone + 1, s.sentencesTotal)} of ${s.sentencesTotal}`
      : 'Reading the text…'
  else if (s.status === 'done') label = `Done · ${plural(s.sentencesTotal, 'sentence')}`
  else label = jobFailureText(s.status ?? '', s.error)
  const tone = s.status === 'failed' ? 'danger' : s.status === 'done' ? 'success' : running ? 'accent' : 'muted'
  return (
    <section className="speak-progress" aria-label="Speech progress">
      <ProgressBar value={s.status === 'done' ? 1 : value} label="Speech progress" tone={tone} />
      <div className="speak-progress-text tabular" data-testid="speak-progress" role="status">
        <span>{label}</span>
        {s.audioSeconds > 0 && <span>{formatDuration(s.audioSeconds)} of audio</span>}
        {running && s.sentencesDone > 0 && <span>{s.cancelling ? 'Cancelling…' : formatEta(s.etaSeconds)}</span>}
        {s.silent && <span>This window cannot play audio; save the WAV to hear it.</span>}
      </div>
      {s.status === 'failed' && s.error && <ErrorNote error={{ kind: 'model', message: s.error }} compact />}
    </section>
  )
}

export function SpeakPage() {
  const s = useSpeak()
  const { voices, loaded, loadError } = useVoices()
  const { models } = useModels()
  const voice = pickVoice(voices, s.voiceId)
  const running = isRunning(s)
  const speed = s.speed ?? voice?.settings.speed ?? 1
  const text = s.text
  const tooLong = text.length > MAX_CHARS
  const canGenerate = !!voice && text.trim().length > 0 && !running && !tooLong
  const done = s.status === 'done' && !!s.job

  const start = () => {
    if (canGenerate && voice) void generate(voice.id, text, s.speed)
  }
  useAction('generate', start)
  useAction('export', () => void saveWav(), done)
  useEffect(() => {
    if (!s.playing) return
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && !e.defaultPrevented) stopPlayback()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [s.playing])

  const voiceModels = models.filter((m) => m.family === 'piper')
  const noVoice = loaded && !loadError && !voice

  return (
    <div className="page page-speak">
      <header className="page-header">
        <h1 className="page-title">Speak</h1>
        <div className="options" role="group" aria-label="Speech options">
          <VoicePicker value={voice} onChange={setSpeakVoice} disabled={running} />
          <SpeedControl value={speed} voiceSpeed={voice?.settings.speed ?? 1} disabled={running || !voice} />
        </div>
      </header>
      {loadError != null && (
        <ErrorNote error={loadError} title="Could not list the voices" onRetry={() => loadVoices()} />
      )}
      {noVoice ? (
        <EmptyState
          icon="voices"
          title="Download a voice to start"
          actions={
            <button type="button" className="btn btn-primary" onClick={() => navigate('voices')}>
              <Icon name="voices" /> Choose a voice
            </button>
          }
        >
          <p>
            Izwi reads text aloud on this computer with Piper voices.{' '}
            {voiceModels.length
              ? `${plural(voiceModels.length, 'voice')} can be downloaded on the Voices page (about 60 MB each).`
              : 'Import a Piper voice on the Models page.'}
          </p>
        </EmptyState>
      ) : (
        <div className="page-scroll speak-body">
          <label className="field speak-text-field">
            <span className="field-label">Text</span>
            <textarea
              className="textarea speak-text"
              value={text}
              onChange={(e) => setText(e.target.value)}
              placeholder="Type or paste what the voice should say. Each sentence plays as soon as it is ready."
              aria-label="Text to speak"
              aria-invalid={tooLong || undefined}
              rows={10}
              readOnly={running}
            />
            <span className={`muted small tabular${tooLong ? ' text-danger' : ''}`}>
              {tooLong
                ? `${text.length.toLocaleString()} characters: at most ${MAX_CHARS.toLocaleString()}. Use Batch export for long scripts.`
                : `${text.length.toLocaleString()} characters`}
            </span>
          </label>
          {s.submitError != null && (
            <ErrorNote error={s.submitError} title="Could not start the speech" onDismiss={clearSubmitError} />
          )}
          <div className="toolbar speak-actions">
            {running ? (
              <button
                type="button"
                className="btn"
                onClick={() =>
                  cancelSpeech().catch((e) => {
                    const { title, detail } = describeError(e)
                    toast({ kind: 'error', title: `Could not cancel: ${title}`, detail })
                  })
                }
                disabled={s.cancelling || s.starting}
              >
                <Icon name="stop" size={11} /> Cancel
              </button>
            ) : (
              <button
                type="button"
                className="btn btn-primary"
                onClick={start}
                disabled={!canGenerate}
                data-tooltip={`Generate and play (${shortcutLabel('Enter')})`}
              >
                <Icon name="speak" /> Generate
              </button>
            )}
            {s.job && !running && s.audioSeconds > 0 && (
              <button type="button" className="btn" onClick={s.playing ? stopPlayback : playAgain}>
                <Icon name={s.playing ? 'stop' : 'play'} size={11} /> {s.playing ? 'Stop' : 'Play'}
              </button>
            )}
            {running && s.playing && (
              <button type="button" className="btn btn-ghost" onClick={stopPlayback}>
                Mute
              </button>
            )}
            <button
              type="button"
              className="btn"
              onClick={() => void saveWav()}
              disabled={!done || s.saving}
              data-tooltip={`Save as a WAV file (${shortcutLabel('E')})`}
            >
              <Icon name={s.saving ? 'spinner' : 'download'} size={13} /> Save WAV
            </button>
          </div>
          <Progress />
          {s.savedPath && (
            <p className="muted small" data-testid="saved-path">
              Saved to {s.savedPath}
            </p>
          )}
        </div>
      )}
    </div>
  )
}

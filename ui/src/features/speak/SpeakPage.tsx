// Speak: type text, choose a voice (preview it), set the speed, Generate: sentences play
// as they are made; then play it from anywhere on its waveform, or save the WAV.

import { useEffect, useMemo, useState } from 'react'
import { EmptyState } from '../../components/EmptyState'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { ProgressBar } from '../../components/ProgressBar'
import { SpeedField } from '../../components/SpeedField'
import { describeError, jobError, jobFailureText } from '../../lib/errors'
import { formatDuration, formatEta, formatTimestamp, plural } from '../../lib/format'
import { navigate } from '../../lib/nav'
import { chooseSavePath } from '../../lib/choose'
import { shortcutLabel } from '../../lib/platform'
import { useAction } from '../../lib/shortcuts'
import { toast } from '../../lib/toast'
import { useModels } from '../models/modelsStore'
import { useSettings } from '../settings/settingsStore'
import { Waveform } from '../transcribe/Waveform'
import { VoicePicker } from '../voices/VoicePicker'
import { isSampledModel, loadVoices, pickVoice, useVoices } from '../voices/voicesStore'
import {
  cancelSpeech,
  clearSubmitError,
  generate,
  isRunning,
  playbackPosition,
  playFrom,
  saveSpeech,
  setSpeakVoice,
  setSpeed,
  setText,
  speakStore,
  speechClip,
  speechPeaks,
  stopPlayback,
  suggestedName,
  useSpeak,
} from './speakStore'

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

function Progress() {
  const s = useSpeak()
  if (!s.job && !s.starting) return null
  const running = isRunning(s)
  const value = s.sentencesTotal ? s.sentencesDone / s.sentencesTotal : null
  let label: string
  if (s.starting || s.status === 'queued') label = 'Getting the voice ready…'
  else if (running && s.unit === 'piece') label = s.pieces ? `${plural(s.pieces, 'piece')} of audio` : 'Speaking…'
  else if (running)
    label = s.sentencesTotal
      ? `Sentence ${Math.min(s.sentencesDone + 1, s.sentencesTotal)} of ${s.sentencesTotal}`
      : 'Reading the text…'
  else if (s.status === 'done')
    label = `Done · ${s.unit === 'piece' ? plural(s.pieces, 'piece') : plural(s.sentencesTotal, 'sentence')}`
  // A failure's reason is in the note below: said once.
  else if (s.status === 'failed') label = 'Failed'
  else label = jobFailureText(s.status ?? '', s.error)
  const tone = s.status === 'failed' ? 'danger' : s.status === 'done' ? 'success' : running ? 'accent' : 'muted'
  return (
    <section className="speak-progress" aria-label="Speech progress">
      <ProgressBar value={s.status === 'done' ? 1 : value} label="Speech progress" tone={tone} />
      <div className="speak-progress-text tabular" data-testid="speak-progress" role="status">
        <span>{label}</span>
        {s.audioSeconds > 0 && <span>{formatDuration(s.audioSeconds)} of audio</span>}
        {s.status === 'done' && s.firstAudioMs != null && <span>first audio in {s.firstAudioMs} ms</span>}
        {running && s.sentencesDone > 0 && <span>{s.cancelling ? 'Cancelling…' : formatEta(s.etaSeconds)}</span>}
        {s.silent && <span>This window cannot play audio; save the WAV to hear it.</span>}
      </div>
      {s.status === 'failed' && s.error && <ErrorNote error={jobError(s.error)} compact />}
    </section>
  )
}

/** The finished speech: play/stop, its waveform to see and seek in, and the time. */
function SpeechPlayer() {
  const { playing } = useSpeak()
  const clip = useMemo(() => speechClip(), [])
  const peaks = useMemo(() => speechPeaks(), [])
  const duration = clip ? clip.samples.length / clip.sampleRate : 0
  const [time, setTime] = useState(0)
  useEffect(() => {
    if (!playing) return
    let frame = 0
    const tick = () => {
      const at = playbackPosition()
      if (at != null) setTime(Math.min(at, duration))
      frame = requestAnimationFrame(tick)
    }
    frame = requestAnimationFrame(tick)
    return () => cancelAnimationFrame(frame)
  }, [playing, duration])
  const seek = (seconds: number) => {
    setTime(seconds)
    if (playing) playFrom(seconds)
  }
  const toggle = () => {
    if (playing) return stopPlayback()
    // From where the scrubber is; from the start once it reached the end.
    playFrom(time < duration - 0.05 ? time : 0)
  }
  return (
    <div className="player speak-player" aria-label="Speech player" role="group">
      <button
        type="button"
        className="btn btn-icon btn-round"
        aria-label={playing ? 'Stop' : 'Play'}
        data-tooltip={playing ? 'Stop (Esc)' : 'Play'}
        onClick={toggle}
      >
        <Icon name={playing ? 'stop' : 'play'} />
      </button>
      <Waveform peaks={peaks} duration={duration} time={time} onSeek={seek} />
      <span className="player-time tabular">
        {formatTimestamp(time)} / {formatTimestamp(duration)}
      </span>
    </div>
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
  // The runtime's limit for one request; until the settings arrive, the runtime alone checks.
  const maxChars = useSettings().settings?.speak_max_chars ?? Infinity
  const tooLong = text.length > maxChars
  const canGenerate = !!voice && text.trim().length > 0 && !running && !tooLong
  const done = s.status === 'done' && !!s.job
  // A Qwen3-TTS or LFM2-Audio voice's audio comes in pieces as it is decoded, not
  // sentences, and it has no speed.
  const sampled = models.some((m) => m.id === voice?.model_id && isSampledModel(m))

  const start = () => {
    if (canGenerate && voice) void generate(voice.id, text, sampled ? null : s.speed, sampled ? 'piece' : 'sentence')
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
          <SpeedField
            id="speak-speed"
            value={speed}
            voiceSpeed={voice?.settings.speed ?? 1}
            disabled={running || !voice || sampled}
            onChange={setSpeed}
          />
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
                ? `${text.length.toLocaleString()} characters: at most ${maxChars.toLocaleString()}. Use Batch export for long scripts.`
                : plural(text.length, 'character')}
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
          {s.job && !running && s.audioSeconds > 0 && <SpeechPlayer key={s.job.id} />}
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

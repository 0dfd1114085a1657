// "Clone a voice": a Qwen3-TTS Base model makes a voice from a sample of the speaker,
// recorded here (a script to read, a level meter) or a file chosen or dropped; trimmed to
// the part wanted; with its transcript, filled in by Whisper and editable.

import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react'
import type { ClonedVoice, TranscriptSource, VoiceSample } from '../../bindings'
import { Dialog } from '../../components/Dialog'
import { ErrorNote } from '../../components/ErrorNote'
import { api } from '../../lib/api'
import { choose } from '../../lib/choose'
import { useClaimDrops } from '../../lib/dropClaim'
import { basename, formatTimestamp } from '../../lib/format'
import { navigate } from '../../lib/nav'
import { useStore } from '../../lib/store'
import { recordStore, resetRecording, startRecording, stopRecording } from './recordSample'
import { TrimRange } from './TrimRange'
import { isWhole, MAX_SAMPLE_SECONDS, type Trim } from './trim'
import { useQwen3Models } from './useQwen3Models'
import { ModelAndNameFields } from './VoiceFields'
import { cloneVoice } from './voicesStore'

/** What to read aloud: varied sounds, about fifteen seconds at an easy pace. */
export const CLONE_SCRIPT =
  'The quick brown fox jumps over the lazy dog. On bright spring mornings, we walk along the river, ' +
  'count the boats, and wonder how far each one will travel before the evening light fades away.'

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

function LevelMeter({ level }: { level: number }) {
  // Speech sits around 0.05–0.3 RMS: a square root spreads it over the bar.
  const fill = Math.min(1, Math.sqrt(level) * 1.6)
  return (
    <div
      className="level-meter"
      role="meter"
      aria-label="Microphone level"
      aria-valuemin={0}
      aria-valuemax={1}
      aria-valuenow={Number(fill.toFixed(2))}
    >
      <div className="level-meter-fill" style={{ width: `${fill * 100}%` }} />
    </div>
  )
}

/** Offers the installed Qwen3-TTS models of the variant it needs. */
export function CloneVoiceDialog({ onClose }: { onClose: () => void }) {
  const models = useQwen3Models('base')
  const [modelId, setModelId] = useState('')
  const [name, setName] = useState('')
  const [sample, setSample] = useState<VoiceSample | null>(null)
  const [trim, setTrim] = useState<Trim>({ start: 0, end: 0 })
  const [text, setText] = useState('')
  const [heard, setHeard] = useState<TranscriptSource | null>(null)
  const [hearing, setHearing] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const [saving, setSaving] = useState(false)
  const [cloned, setCloned] = useState<ClonedVoice | null>(null)
  const recording = useStore(recordStore)
  const busy = recording.phase !== 'idle'
  const chosenModel = modelId || models?.[0]?.id || ''

  // Whisper's answers can come out of order (a file dropped, then a recording made):
  // only the latest request's counts, and text typed while it listened is kept.
  const asked = useRef(0)
  const textNow = useRef(text)
  useEffect(() => {
    textNow.current = text
  }, [text])
  const hear = useCallback(async (path: string | Promise<string>, onError: (e: unknown) => void) => {
    const ask = ++asked.current
    const typed = textNow.current
    setHearing(true)
    try {
      const t = await api.transcribeVoiceSample(await path)
      if (ask !== asked.current) return
      setHeard(t.source)
      if (t.text && textNow.current === typed) setText(t.text)
    } catch (e) {
      if (ask === asked.current) onError(e)
    } finally {
      if (ask === asked.current) setHearing(false)
    }
  }, [])

  const takeSample = useCallback(
    (s: VoiceSample) => {
      setSample(s)
      // A clone takes at most a minute: a longer file starts trimmed to it.
      setTrim({ start: 0, end: Math.min(s.seconds, MAX_SAMPLE_SECONDS) })
      setHeard(null)
      void hear(s.path, (e) => setHeard({ kind: 'missing', reason: String(e instanceof Error ? e.message : e) }))
    },
    [hear],
  )

  const openFile = useCallback(
    async (path: string) => {
      setError(null)
      try {
        takeSample(await api.openVoiceSample(path))
      } catch (e) {
        setError(e)
      }
    },
    [takeSample],
  )

  const onDrop = useCallback((paths: string[]) => void openFile(paths[0]), [openFile])
  useClaimDrops('Drop to use as the recording', onDrop)

  useEffect(() => {
    resetRecording()
    return () => {
      if (recordStore.get().phase !== 'idle') void stopRecording()
    }
  }, [])
  // A recording that stopped becomes the sample.
  useEffect(() => {
    let last = recordStore.get().sample
    return recordStore.subscribe(() => {
      const { sample: made } = recordStore.get()
      if (made && made !== last) takeSample(made)
      last = made
    })
  }, [takeSample])

  const pick = async () => {
    const [path] = await choose('media_files')
    if (path) await openFile(path)
  }

  /** The sample as trimmed: the file itself when all of it is kept. */
  const keptPath = async (s: VoiceSample) =>
    isWhole(trim, s.seconds) ? s.path : (await api.trimVoiceSample(s.path, trim.start, trim.end)).path

  const hearKept = async () => {
    if (!sample) return
    setError(null)
    await hear(keptPath(sample), setError)
  }

  const submit = async (e?: FormEvent) => {
    e?.preventDefault()
    if (!sample) return
    setSaving(true)
    setError(null)
    try {
      const audio = await keptPath(sample)
      setCloned(await cloneVoice(chosenModel, name, audio, text.trim() ? text : null))
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
        disabled={saving || busy || !chosenModel || !name.trim() || !sample}
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
      ) : models == null ? (
        <p className="muted">Finding the Qwen3-TTS models…</p>
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
          <p className="muted">
            Record the speaker reading the script, or choose or drop a recording (up to 60 s); keep the part you want.
          </p>
          <div className="field">
            <span className="field-label">Recording</span>
            {busy ? (
              <div className="record-sample" data-testid="recording">
                <blockquote className="clone-script">{CLONE_SCRIPT}</blockquote>
                <LevelMeter level={recording.level} />
                <div className="toolbar">
                  <button
                    type="button"
                    className="btn btn-sm btn-danger"
                    onClick={() => void stopRecording()}
                    disabled={recording.phase !== 'recording'}
                  >
                    Stop
                  </button>
                  <span className="muted small">
                    {recording.phase === 'starting' ? 'Opening the microphone…' : formatTimestamp(recording.heard)}
                  </span>
                </div>
              </div>
            ) : (
              <div className="toolbar">
                <button type="button" className="btn btn-sm" onClick={() => void startRecording()}>
                  Record…
                </button>
                <button type="button" className="btn btn-sm" onClick={pick}>
                  Choose a file…
                </button>
                <span className="muted small" data-testid="clone-audio">
                  {sample ? basename(sample.path) : 'or drop one here'}
                </span>
              </div>
            )}
            {recording.error != null && !busy && <ErrorNote error={recording.error} title="Could not record" compact />}
          </div>
          {sample && !busy && <TrimRange peaks={sample.peaks} seconds={sample.seconds} trim={trim} onTrim={setTrim} />}
          <ModelAndNameFields
            modelLabel="Base model"
            models={models}
            modelId={chosenModel}
            onModel={setModelId}
            name={name}
            onName={setName}
            placeholder="Me"
          />
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
          <div className="toolbar">
            <span className="muted small" data-testid="heard-by">
              {hearing ? 'Whisper is listening…' : heard ? `Transcript: ${sourceLabel(heard)}` : ''}
            </span>
            {sample && !busy && (
              <button type="button" className="btn btn-sm" onClick={hearKept} disabled={hearing}>
                Transcribe the kept part
              </button>
            )}
          </div>
          {error != null && <ErrorNote error={error} title="Could not clone the voice" compact />}
        </form>
      )}
    </Dialog>
  )
}

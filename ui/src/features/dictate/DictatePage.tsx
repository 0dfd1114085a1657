// Dictate: speak and watch the words appear. Final text is settled; the words after it
// (in grey, italic) are still being decided and may change. Each dictation is saved to
// History as a transcript with its recording. The global shortcut (Settings) does the
// same from any app and puts the text on the clipboard.

import { useEffect } from 'react'
import { CopyButton } from '../../components/CopyButton'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { languageName } from '../../lib/format'
import { navigate, openTranscript } from '../../lib/nav'
import { useStore } from '../../lib/store'
import { settingsStore } from '../settings/settingsStore'
import { DelayChoice } from '../transcribe/DelayChoice'
import { setChoices, useChoices } from '../transcribe/options'
import { listenDictateEvents, startDictation, stopDictation, useDictate } from './dictateStore'

function ModelChoice({ disabled }: { disabled: boolean }) {
  const c = useChoices()
  if (!c.installed.length) {
    return (
      <div className="field">
        <span className="field-label">Model</span>
        <button type="button" className="btn btn-sm" onClick={() => navigate('models')}>
          <Icon name="models" size={13} /> Get a model
        </button>
      </div>
    )
  }
  return (
    <>
      <label className="field">
        <span className="field-label">Model</span>
        <select
          className="select"
          value={c.model?.id ?? ''}
          onChange={(e) => setChoices({ modelId: e.target.value })}
          disabled={disabled}
          aria-label="Model"
        >
          {c.installed.map((m) => (
            <option key={m.id} value={m.id}>
              {m.name}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span className="field-label">Language</span>
        <select
          className="select"
          value={c.language}
          onChange={(e) => setChoices({ language: e.target.value })}
          disabled={disabled || c.englishOnly}
          aria-label="Language"
        >
          {!c.englishOnly && <option value="auto">Detect automatically</option>}
          {c.languages.map((code) => (
            <option key={code} value={code}>
              {languageName(code)}
            </option>
          ))}
        </select>
      </label>
      <DelayChoice disabled={disabled} />
    </>
  )
}

export function DictatePage() {
  const c = useChoices()
  const phase = useDictate((s) => s.phase)
  const input = useDictate((s) => s.input)
  const finals = useDictate((s) => s.finals)
  const partial = useDictate((s) => s.partial)
  const savedJobId = useDictate((s) => s.savedJobId)
  const error = useDictate((s) => s.error)
  const shortcut = useStore(settingsStore, (s) => s.settings?.dictation_shortcut ?? null)

  useEffect(() => {
    void listenDictateEvents()
  }, [])

  const running = phase !== 'idle'
  const start = () => void startDictation(c.model?.id ?? null, c.language === 'auto' ? null : c.language, c.delayMs)
  const text = finals.join(' ')

  return (
    <div className="page page-dictate">
      <header className="page-header">
        <h1 className="page-title">Dictate</h1>
        <div className="options" role="group" aria-label="Dictation options">
          <ModelChoice disabled={running} />
        </div>
        <div className="page-actions">
          {running ? (
            <button
              type="button"
              className="btn btn-primary"
              onClick={() => void stopDictation()}
              disabled={phase === 'stopping' || phase === 'starting'}
            >
              <Icon name={phase === 'stopping' ? 'spinner' : 'stop'} size={13} /> Stop
            </button>
          ) : (
            <button type="button" className="btn btn-primary" onClick={start} disabled={!c.model}>
              <Icon name="mic" size={13} /> Start dictating
            </button>
          )}
        </div>
      </header>
      <div className="page-scroll">
        <p className="dictate-status muted" role="status">
          {phase === 'starting' && 'Opening the microphone…'}
          {phase === 'listening' && `Listening${input ? ` on ${input}` : ''}: speak, and stop when you are done.`}
          {phase === 'stopping' && 'Finishing the last words…'}
          {phase === 'idle' &&
            (shortcut
              ? `Start here, or press ${shortcut} in any app: pressed again, it stops and puts the text on the clipboard.`
              : 'Start, speak, stop: the text is saved to History with its recording.')}
        </p>
        {error != null && <ErrorNote error={error.error} title={error.title} />}
        <section className="dictate-text" aria-label="Dictated text" aria-live="polite">
          {finals.map((piece, i) => (
            <span key={i} className="dictate-final">
              {piece}{' '}
            </span>
          ))}
          {partial && <span className="dictate-partial">{partial}</span>}
          {!finals.length && !partial && (
            <span className="muted">{running ? 'Words appear here as you speak.' : 'Nothing dictated yet.'}</span>
          )}
        </section>
        <div className="dictate-actions">
          <CopyButton text={() => text} what="the dictated text" />
          {savedJobId != null && !running && (
            <button type="button" className="btn btn-sm" onClick={() => openTranscript(savedJobId, { on: 'history' })}>
              <Icon name="history" size={13} /> Open in History
            </button>
          )}
        </div>
      </div>
    </div>
  )
}

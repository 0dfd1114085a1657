// Transcribe: choose files (or drop them anywhere), pick model/language/task, watch the queue,
// read the transcript as it arrives.

import { EmptyState } from '../../components/EmptyState'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { ProgressBar } from '../../components/ProgressBar'
import type { ModelInfo } from '../../bindings'
import { basename, formatBytes, formatEta, formatRate, languageName, plural } from '../../lib/format'
import { closeTranscript, navigate, openTranscript, useNav } from '../../lib/nav'
import { shortcutLabel } from '../../lib/platform'
import { useAction } from '../../lib/shortcuts'
import { downloadModel, loadModels, useModels } from '../models/modelsStore'
import { DelayChoice } from './DelayChoice'
import { clearSubmitError, setWaiting, useJobs } from './jobsStore'
import { setChoices, useChoices } from './options'
import { Queue } from './Queue'
import { pickFiles, pickFolder } from './queueFiles'
import { TranscriptView } from './TranscriptView'

/** The model a new user is offered first. */
export const STARTER_MODEL = 'whisper-base'

function OpenButtons({ big }: { big?: boolean }) {
  return (
    <>
      <button
        type="button"
        className={`btn${big ? '' : ' btn-sm'}`}
        onClick={pickFolder}
        data-tooltip="Transcribe every recording in a folder"
      >
        <Icon name="folder" /> Open folder
      </button>
      <button
        type="button"
        className={`btn btn-primary${big ? '' : ' btn-sm'}`}
        onClick={pickFiles}
        data-tooltip={`Open audio or video files (${shortcutLabel('O')})`}
      >
        <Icon name="upload" /> Open files
      </button>
    </>
  )
}

function Options() {
  const c = useChoices()
  const sortedLanguages = [...c.languages].sort((a, b) => languageName(a).localeCompare(languageName(b)))
  return (
    <div className="options" role="group" aria-label="Transcription options">
      {!c.installed.length ? (
        <div className="field">
          <span className="field-label">Model</span>
          <button type="button" className="btn btn-sm" onClick={() => navigate('models')}>
            <Icon name="models" size={13} /> Get a model
          </button>
        </div>
      ) : (
        <label className="field">
          <span className="field-label">Model</span>
          <select
            className="select"
            value={c.model?.id ?? ''}
            onChange={(e) => setChoices({ modelId: e.target.value })}
            disabled={!c.installed.length}
            aria-label="Model"
          >
            {c.installed.map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}
              </option>
            ))}
          </select>
        </label>
      )}
      <label className="field" data-tooltip={c.englishOnly ? 'This model only knows English' : undefined}>
        <span className="field-label">Language</span>
        <select
          className="select"
          value={c.language}
          onChange={(e) => setChoices({ language: e.target.value })}
          disabled={!c.model || c.englishOnly}
          aria-label="Language"
        >
          {!c.englishOnly && <option value="auto">Detect automatically</option>}
          {sortedLanguages.map((code) => (
            <option key={code} value={code}>
              {languageName(code)}
            </option>
          ))}
        </select>
      </label>
      <div className="field field-task">
        <span className="field-label" id="task-label">
          Task
        </span>
        <div className="segmented" role="radiogroup" aria-labelledby="task-label">
          {(['transcribe', 'translate'] as const).map((t) => (
            <button
              key={t}
              type="button"
              role="radio"
              aria-checked={c.task === t}
              className={c.task === t ? 'segmented-on' : ''}
              disabled={!c.model || (!c.translates && t === 'translate')}
              aria-describedby={t === 'translate' && !c.translates ? 'translate-why' : undefined}
              data-tooltip={t === 'translate' && c.translates ? 'Into English' : undefined}
              onClick={() => setChoices({ task: t })}
            >
              {t === 'transcribe' ? 'Transcribe' : 'Translate'}
            </button>
          ))}
        </div>
        {!c.translates && c.model && (
          <span id="translate-why" className="field-note">
            {c.englishOnly
              ? `${c.model.name} knows only English; to translate, pick a multilingual model.`
              : `${c.model.name} writes what it hears; to translate, pick a multilingual Whisper model.`}
          </span>
        )}
      </div>
      <label
        className="field field-check"
        data-tooltip="Times each word, highlighted as the audio plays and in SRT/VTT exports; a little slower"
      >
        <input
          type="checkbox"
          checked={c.wordTimestamps}
          disabled={!c.model}
          onChange={(e) => setChoices({ wordTimestamps: e.target.checked })}
        />
        <span>Word timestamps</span>
      </label>
      <DelayChoice />
    </div>
  )
}

function StarterDownload({ models }: { models: ModelInfo[] }) {
  const { downloads, errors } = useModels()
  const starter = models.find((m) => m.id === STARTER_MODEL) ?? models.find((m) => m.task === 'transcribe') ?? null
  const waiting = useJobs().waiting
  if (!starter) {
    return (
      <EmptyState
        icon="models"
        title="No transcription model"
        actions={
          <button type="button" className="btn btn-primary" onClick={() => navigate('models')}>
            Go to Models
          </button>
        }
      >
        Import a Whisper model folder on the Models page to start.
      </EmptyState>
    )
  }
  const dl = downloads[starter.id]
  const err = errors[starter.id]
  return (
    <EmptyState
      icon="models"
      title={`Download ${starter.name} (${formatBytes(starter.size_bytes)}) to start`}
      actions={
        dl ? null : (
          <>
            <button type="button" className="btn btn-primary" onClick={() => downloadModel(starter.id)}>
              <Icon name="download" /> Download {starter.name}
            </button>
            <button type="button" className="btn" onClick={() => navigate('models')}>
              Browse all models
            </button>
          </>
        )
      }
    >
      <p>Izwi transcribes on this computer; nothing leaves it. {starter.description}</p>
      {dl && (
        <div className="starter-progress">
          <ProgressBar value={dl.total ? dl.downloaded / dl.total : null} label={`Downloading ${starter.name}`} />
          <span className="muted small tabular">
            {formatBytes(dl.downloaded)} of {formatBytes(dl.total)}
            {dl.bytesPerSecond ? ` · ${formatRate(dl.bytesPerSecond)}` : ''} · {formatEta(dl.etaSeconds)}
          </span>
        </div>
      )}
      {err && (
        <ErrorNote error={err.error} title="The download stopped" onRetry={() => downloadModel(starter.id)} compact />
      )}
      {waiting.length > 0 && (
        <p className="muted small">
          Waiting: {waiting.map(basename).join(', ')}{' '}
          <button type="button" className="link" onClick={() => setWaiting([])}>
            Forget {waiting.length === 1 ? 'it' : 'them'}
          </button>
        </p>
      )}
    </EmptyState>
  )
}

export function TranscribePage() {
  const { models, loaded, loadError } = useModels()
  const { order, submitError, submitting } = useJobs()
  const nav = useNav()
  const c = useChoices()
  const focus = nav.transcribe
  useAction('open', pickFiles)
  useAction('openFolder', pickFolder)

  const noModel = loaded && !loadError && c.installed.length === 0
  const hasJobs = order.length > 0

  return (
    <div className="page page-transcribe">
      <header className="page-header">
        <h1 className="page-title">Transcribe</h1>
        <Options />
        <div className="page-actions">
          <OpenButtons />
        </div>
      </header>

      {loadError != null && (
        <ErrorNote error={loadError} title="Could not list the models" onRetry={() => loadModels()} />
      )}
      {submitError != null && (
        <ErrorNote error={submitError} title="Could not queue the files" onDismiss={clearSubmitError} />
      )}
      {submitting && (
        <div className="sr-only" role="status">
          Queueing…
        </div>
      )}

      {noModel && !hasJobs ? (
        <StarterDownload models={models} />
      ) : !hasJobs && !focus ? (
        <div className="dropzone-empty">
          <EmptyState icon="upload" title="Drop audio or video here" actions={<OpenButtons big />}>
            <p>
              Or open files or a whole folder. WAV, MP3, FLAC, OGG, M4A, MP4, MKV and WebM all work.
              {c.model
                ? ` ${c.model.name} will transcribe them${c.language !== 'auto' ? ` as ${languageName(c.language)}` : ''}.`
                : ''}
            </p>
          </EmptyState>
        </div>
      ) : (
        <div className="split">
          {hasJobs && <Queue selected={focus?.jobId ?? null} onOpen={(id) => openTranscript(id)} />}
          <div className="split-main">
            {focus ? (
              <TranscriptView
                key={focus.jobId}
                jobId={focus.jobId}
                focusSegment={focus.segmentIdx}
                focusNonce={focus.nonce}
                onClose={() => closeTranscript('transcribe')}
              />
            ) : (
              <EmptyState icon="file" title="Pick a file from the queue">
                <p>Its transcript shows here, live while it is being transcribed.</p>
              </EmptyState>
            )}
          </div>
        </div>
      )}
      {noModel && hasJobs && (
        <p className="hint">{plural(order.length, 'job')} in the list, but no model is installed now.</p>
      )}
    </div>
  )
}

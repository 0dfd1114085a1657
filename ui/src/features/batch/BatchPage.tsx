// Batch export: many lines → one WAV each in a folder (with manifest.csv), line by line.

import { useCallback, useEffect, useRef, useState } from 'react'
import { EmptyState } from '../../components/EmptyState'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { ProgressBar } from '../../components/ProgressBar'
import { SpeedField } from '../../components/SpeedField'
import { describeError, jobError, jobFailureText } from '../../lib/errors'
import { basename, formatDuration, formatEta, plural } from '../../lib/format'
import { useMediaSrc } from '../../lib/mediaSrc'
import { navigate } from '../../lib/nav'
import { choose } from '../../lib/choose'
import { shortcutLabel } from '../../lib/platform'
import { useAction } from '../../lib/shortcuts'
import { toast } from '../../lib/toast'
import { VoicePicker } from '../voices/VoicePicker'
import { FlaggedLines } from './FlaggedLines'
import { loadVoices, pickVoice, useVoices } from '../voices/voicesStore'
import {
  batchStore,
  cancelBatch,
  clearBatchError,
  importLines,
  isRunning,
  linesOf,
  newBatch,
  setBatchText,
  setBatchSpeed,
  setBatchVoice,
  setOutputDir,
  showBatchFolder,
  startBatch,
  useBatch,
} from './batchStore'

function fail(what: string) {
  return (e: unknown) => {
    const { title, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not ${what}: ${title}`, detail })
  }
}

async function pickLinesFile(): Promise<void> {
  if (isRunning(batchStore.get())) return
  const [path] = await choose('script')
  if (!path) return
  try {
    const lines = await importLines(path)
    toast({ kind: 'success', title: `Read ${plural(lines.length, 'line')}`, detail: path })
  } catch (e) {
    fail(`read ${basename(path)}`)(e)
  }
}

async function pickFolder(): Promise<void> {
  const [dir] = await choose('output_folder')
  if (dir) setOutputDir(dir)
}

/** Plays one finished line's WAV; `file` null plays nothing. */
function useLinePlayer(file: string | null, onEnd: () => void) {
  const media = useMediaSrc(file)
  const audioRef = useRef<HTMLAudioElement>(null)
  useEffect(() => {
    const el = audioRef.current
    if (media.src && el) el.play().catch(onEnd)
  }, [media.src, onEnd])
  useEffect(() => {
    if (media.failed) onEnd()
  }, [media.failed, onEnd])
  return media.src ? (
    <audio ref={audioRef} src={media.src} onEnded={onEnd} onError={onEnd} data-testid="line-audio" />
  ) : null
}

function LineList() {
  const s = useBatch()
  const running = isRunning(s)
  const firstOpen = s.lines.findIndex((_, i) => !s.done[i])
  const [playing, setPlaying] = useState<number | null>(null)
  const stop = useCallback(() => setPlaying(null), [])
  const audio = useLinePlayer(playing != null ? (s.done[playing]?.file ?? null) : null, stop)
  return (
    <>
      {audio}
      <ol className="batch-lines" aria-label="Lines">
        {s.lines.map((line, i) => {
          const done = s.done[i]
          const working = running && i === firstOpen
          const state = done ? 'done' : working ? 'working' : running ? 'waiting' : 'skipped'
          return (
            <li key={i} className={`batch-line batch-line-${state}`} aria-label={`Line ${i + 1}`} data-state={state}>
              <span className="batch-line-icon" aria-hidden="true">
                <Icon
                  name={done ? 'check' : working ? 'spinner' : state === 'skipped' ? 'close' : 'dot'}
                  size={done || working ? 13 : 11}
                />
              </span>
              <span className="batch-line-num tabular">{i + 1}</span>
              <span className="batch-line-text">{line}</span>
              {done ? (
                <button
                  type="button"
                  className="btn btn-icon btn-ghost btn-sm batch-line-play"
                  aria-label={playing === i ? `Stop line ${i + 1}` : `Play line ${i + 1}`}
                  onClick={() => setPlaying(playing === i ? null : i)}
                >
                  <Icon name={playing === i ? 'stop' : 'play'} size={11} />
                </button>
              ) : (
                <span className="batch-line-play" />
              )}
              <span className="batch-line-status tabular muted small">
                {done
                  ? `${basename(done.file)} · ${formatDuration(done.seconds)}`
                  : working
                    ? 'Speaking…'
                    : state === 'waiting'
                      ? 'Waiting'
                      : 'Not made'}
              </span>
            </li>
          )
        })}
      </ol>
    </>
  )
}

function Run() {
  const s = useBatch()
  const running = isRunning(s)
  const doneCount = Object.keys(s.done).length
  const total = s.lines.length
  const tone = s.status === 'failed' ? 'danger' : s.status === 'done' ? 'success' : running ? 'accent' : 'muted'
  let label: string
  if (s.starting || s.status === 'queued') label = 'Getting the voice ready…'
  else if (running) label = `${doneCount} of ${plural(total, 'line')} done`
  else if (s.status === 'done') label = `Done · ${plural(doneCount, 'file')} in ${s.outputDir ?? 'the folder'}`
  // A failure's reason is in the note below: said once.
  else if (s.status === 'failed')
    label = `Failed · ${doneCount ? `${plural(doneCount, 'file')} kept` : 'no files were made'}`
  else
    label = `${jobFailureText(s.status ?? '', s.error)} ${doneCount ? `${plural(doneCount, 'file')} kept.` : 'No files were made.'}`
  return (
    <section className="batch-run" aria-label="Batch progress">
      <div className="batch-run-head">
        <ProgressBar value={total ? doneCount / total : null} label="Batch progress" tone={tone} />
        <div className="batch-run-text tabular" role="status" data-testid="batch-progress">
          <span>{label}</span>
          {running && doneCount > 0 && <span>{s.cancelling ? 'Cancelling…' : formatEta(s.etaSeconds)}</span>}
        </div>
        <div className="toolbar">
          {running ? (
            <button
              type="button"
              className="btn btn-sm"
              onClick={() => cancelBatch().catch(fail('cancel'))}
              disabled={s.cancelling || s.starting}
            >
              <Icon name="stop" size={11} /> Cancel
            </button>
          ) : (
            <>
              {doneCount > 0 && (
                <button
                  type="button"
                  className="btn btn-sm btn-primary"
                  onClick={() => showBatchFolder().catch(fail('open the folder'))}
                >
                  <Icon name="folder" size={13} /> Open folder
                </button>
              )}
              <button type="button" className="btn btn-sm" onClick={newBatch}>
                New batch
              </button>
            </>
          )}
        </div>
      </div>
      {s.status === 'failed' && s.error && <ErrorNote error={jobError(s.error)} compact />}
      {s.status === 'done' && <FlaggedLines />}
      <LineList />
    </section>
  )
}

export function BatchPage() {
  const s = useBatch()
  const { voices, loaded, loadError } = useVoices()
  const voice = pickVoice(voices, s.voiceId)
  const lines = linesOf(s.text)
  const running = isRunning(s)
  const hasRun = running || !!s.job
  const canStart = !!voice && lines.length > 0 && !!s.outputDir && !running

  const start = () => {
    if (canStart && voice && s.outputDir) void startBatch(voice.id, lines, s.outputDir)
  }
  useAction('generate', start, !hasRun)
  useAction('open', () => void pickLinesFile())

  if (loaded && !loadError && !voice) {
    return (
      <div className="page page-batch">
        <header className="page-header">
          <h1 className="page-title">Batch export</h1>
        </header>
        <EmptyState
          icon="voices"
          title="Download a voice to start"
          actions={
            <button type="button" className="btn btn-primary" onClick={() => navigate('voices')}>
              <Icon name="voices" /> Choose a voice
            </button>
          }
        >
          <p>Batch export reads many lines aloud, one WAV file each, for prompts, games or datasets.</p>
        </EmptyState>
      </div>
    )
  }

  return (
    <div className="page page-batch">
      <header className="page-header">
        <h1 className="page-title">Batch export</h1>
        <div className="options" role="group" aria-label="Batch options">
          <VoicePicker value={voice} onChange={setBatchVoice} disabled={running} />
          <SpeedField
            id="batch-speed"
            value={s.speed ?? voice?.settings.speed ?? 1}
            voiceSpeed={voice?.settings.speed ?? 1}
            disabled={running || !voice}
            onChange={setBatchSpeed}
          />
          <div className="field">
            <span className="field-label">Output folder</span>
            <button
              type="button"
              className="btn btn-sm folder-button"
              onClick={pickFolder}
              disabled={running}
              title={s.outputDir ?? undefined}
            >
              <Icon name="folder" size={13} />
              <span className="truncate">{s.outputDir ? basename(s.outputDir) : 'Choose folder…'}</span>
            </button>
          </div>
        </div>
        <div className="page-actions">
          {!hasRun && (
            <button
              type="button"
              className="btn btn-primary"
              onClick={start}
              disabled={!canStart}
              data-tooltip={
                !s.outputDir
                  ? 'Choose an output folder first'
                  : !lines.length
                    ? 'Add some lines first'
                    : `Start (${shortcutLabel('Enter')})`
              }
            >
              <Icon name="play" size={11} /> Start
            </button>
          )}
        </div>
      </header>
      {loadError != null && (
        <ErrorNote error={loadError} title="Could not list the voices" onRetry={() => loadVoices()} />
      )}
      {s.submitError != null && (
        <ErrorNote error={s.submitError} title="Could not start the batch" onDismiss={clearBatchError} />
      )}
      <div className="page-scroll batch-body">
        {hasRun ? (
          <Run />
        ) : (
          <div className="field batch-text-field">
            <span className="batch-text-head">
              <span className="field-label">Lines · one WAV file each</span>
              <button
                type="button"
                className="btn btn-sm"
                onClick={pickLinesFile}
                disabled={s.importing}
                data-tooltip={`Import a .txt (one line per file) or a .csv with a "text" column (${shortcutLabel('O')})`}
              >
                <Icon name={s.importing ? 'spinner' : 'file'} size={13} /> Import .txt or .csv
              </button>
            </span>
            <textarea
              className="textarea batch-text"
              value={s.text}
              onChange={(e) => setBatchText(e.target.value)}
              placeholder={'Paste or type lines here, one per file:\nWelcome to the museum.\nThe exit is on your left.'}
              aria-label="Lines to speak"
              rows={14}
            />
            <span className="muted small" data-testid="batch-count">
              {lines.length
                ? `${plural(lines.length, 'line')} → ${plural(lines.length, 'WAV file')} and manifest.csv${s.source ? ` · from ${basename(s.source)}` : ''}`
                : 'Blank lines are skipped.'}
            </span>
          </div>
        )}
      </div>
    </div>
  )
}

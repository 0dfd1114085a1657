// A batch in History: its folder, voice and settings, and every line with its file
// (play it), length and state.

import { useEffect, useRef, useState } from 'react'
import type { BatchDetail, BatchLine } from '../../bindings'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { api } from '../../lib/api'
import { describeError, jobFailureText } from '../../lib/errors'
import { basename, formatDate, formatDuration, plural } from '../../lib/format'
import { useMediaSrc } from '../../lib/mediaSrc'
import { toast } from '../../lib/toast'
import { useAudio } from '../transcribe/useAudio'
import { JobHeader } from './JobHeader'
import { VoiceFacts } from './VoiceFacts'

const LINE_STATE: Record<BatchLine['status'], string> = {
  made: '',
  missing: 'File missing',
  not_made: 'Not made',
}

export function BatchJobView({ detail, onClose }: { detail: BatchDetail; onClose?: () => void }) {
  const { job, lines } = detail
  const made = lines.filter((l) => l.status === 'made').length
  const seconds = lines.reduce((sum, l) => sum + (l.status === 'made' ? (l.seconds ?? 0) : 0), 0)
  const reason = jobFailureText(job.status, job.error)

  // One player for every line: choosing a line loads its file and plays it.
  const [chosen, setChosen] = useState<string | null>(null)
  const media = useMediaSrc(chosen)
  const audioRef = useRef<HTMLAudioElement>(null)
  const audio = useAudio(audioRef, media.src, 0)
  useEffect(() => {
    if (media.src) void audioRef.current?.play()?.catch(() => {})
  }, [media.src])
  const toggleLine = (file: string) => {
    if (file === chosen) audio.toggle()
    else setChosen(file)
  }

  const showFolder = async () => {
    try {
      await api.showBatchOutput(job.id)
    } catch (e) {
      const { title, detail: more } = describeError(e)
      toast({ kind: 'error', title: `Could not show the folder: ${title}`, detail: more })
    }
  }

  return (
    <section className="transcript job-view" aria-label={`Batch job ${job.id}`}>
      <JobHeader
        job={job}
        title={basename(detail.output_dir)}
        titleHint={detail.output_dir}
        onClose={onClose}
        meta={
          <>
            <span>{formatDate(job.created_at)}</span>
            <span>
              {made} of {plural(lines.length, 'line')} made
            </span>
            {seconds > 0 && <span>{formatDuration(seconds)}</span>}
          </>
        }
        actions={
          <button type="button" className="btn" onClick={showFolder}>
            <Icon name="folder" /> Show in folder
          </button>
        }
      />
      {reason && job.status !== 'cancelled' && (
        <ErrorNote error={{ kind: 'model', message: reason }} title="The batch failed" />
      )}
      <div className="job-body">
        <ol className="job-lines" aria-label="Lines">
          {lines.map((l) => {
            const file = l.file
            const isChosen = file != null && file === chosen
            return (
              <li key={l.line} className={`job-line job-line-${l.status}`} aria-label={`Line ${l.line}`}>
                <span className="job-line-n tabular">{l.line}</span>
                {l.status === 'made' && file ? (
                  <button
                    type="button"
                    className="btn btn-icon btn-ghost btn-sm"
                    aria-label={isChosen && audio.playing ? `Pause line ${l.line}` : `Play line ${l.line}`}
                    onClick={() => toggleLine(file)}
                  >
                    <Icon name={isChosen && audio.playing ? 'pause' : 'play'} size={13} />
                  </button>
                ) : (
                  <span className="job-line-gap" />
                )}
                <span className="job-line-text">{l.text ?? <span className="muted">(text not kept)</span>}</span>
                <span className="job-line-file" title={file ?? undefined}>
                  {file ? basename(file) : ''}
                </span>
                <span className="job-line-len tabular">{l.seconds != null ? formatDuration(l.seconds) : ''}</span>
                <span className="job-line-state">{LINE_STATE[l.status]}</span>
              </li>
            )
          })}
        </ol>
        <div>
          <dl className="job-facts" aria-label="Folder">
            <dt>Folder</dt>
            <dd className="path">{detail.output_dir}</dd>
            {detail.manifest_path && (
              <>
                <dt>Manifest</dt>
                <dd>{basename(detail.manifest_path)}</dd>
              </>
            )}
          </dl>
          <VoiceFacts voice={detail.voice} />
        </div>
      </div>
      {media.src && <audio ref={audioRef} src={media.src} preload="auto" data-testid="line-audio" />}
      {media.failed && <p className="hint">That file could not be played.</p>}
    </section>
  )
}

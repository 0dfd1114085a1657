// A speak job in History: its recording (play, save again), text, voice and settings.

import { useRef } from 'react'
import type { SpeechDetail } from '../../bindings'
import { CopyButton } from '../../components/CopyButton'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { api } from '../../lib/api'
import { chooseSavePath } from '../../lib/choose'
import { describeError, jobFailureText } from '../../lib/errors'
import { basename, formatDate, formatDuration } from '../../lib/format'
import { useMediaSrc } from '../../lib/mediaSrc'
import { toast } from '../../lib/toast'
import { Player } from '../transcribe/Player'
import { useAudio } from '../transcribe/useAudio'
import { usePeaks } from '../transcribe/usePeaks'
import { useSpaceToPlay } from '../transcribe/useSpaceToPlay'
import { JobHeader } from './JobHeader'
import { VoiceFacts } from './VoiceFacts'

/** A file name from the first words of the text. */
function suggestedName(text: string, jobId: number): string {
  const words = text
    .replace(/[^\p{L}\p{N}\s-]/gu, ' ')
    .trim()
    .split(/\s+/)
    .slice(0, 6)
    .join('-')
    .toLowerCase()
  return `${words || `speech-${jobId}`}.wav`
}

async function saveAgain(detail: SpeechDetail): Promise<void> {
  const path = await chooseSavePath('Save the speech as WAV', suggestedName(detail.text, detail.job.id))
  if (!path) return
  try {
    const saved = await api.saveSpeech(detail.job.id, path)
    toast({ kind: 'success', title: 'Saved WAV', detail: saved })
  } catch (e) {
    const { title, detail: more } = describeError(e)
    toast({ kind: 'error', title: `Could not save the WAV: ${title}`, detail: more })
  }
}

export function SpeechJobView({ detail, onClose }: { detail: SpeechDetail; onClose?: () => void }) {
  const { job } = detail
  const audioPath = detail.audio_exists ? detail.audio_path : null
  const media = useMediaSrc(audioPath)
  const audioRef = useRef<HTMLAudioElement>(null)
  const audio = useAudio(audioRef, media.src, job.metrics.audio_seconds ?? 0)
  const peaks = usePeaks(audioPath)
  useSpaceToPlay(audio.toggle)
  const done = job.status === 'done'
  const title = detail.text_file ? basename(detail.text_file) : detail.text.split(/\s+/).slice(0, 8).join(' ')
  const reason = jobFailureText(job.status, job.error)

  return (
    <section className="transcript job-view" aria-label={`Speech job ${job.id}`}>
      <JobHeader
        job={job}
        title={title || `Speech ${job.id}`}
        titleHint={detail.text_file ?? undefined}
        onClose={onClose}
        meta={
          <>
            <span>{formatDate(job.created_at)}</span>
            {job.metrics.audio_seconds != null && <span>{formatDuration(job.metrics.audio_seconds)}</span>}
          </>
        }
        actions={
          <button
            type="button"
            className="btn"
            disabled={!done || !detail.audio_exists}
            data-tooltip={done && detail.audio_exists ? 'Save a copy of the WAV' : 'There is no recording to save'}
            onClick={() => void saveAgain(detail)}
          >
            <Icon name="download" /> Save as…
          </button>
        }
      />
      {reason && job.status !== 'cancelled' && (
        <ErrorNote error={{ kind: 'model', message: reason }} title="Speaking failed" />
      )}
      <Player audio={audio} audioRef={audioRef} src={media.src} peaks={peaks} />
      {detail.audio_path && !detail.audio_exists ? (
        <p className="hint">The recording is no longer at {detail.audio_path}.</p>
      ) : (audio.error || media.failed) && audioPath ? (
        <p className="hint">The recording could not be played.</p>
      ) : null}
      <div className="job-body">
        <section className="job-text" aria-label="Text">
          <div className="job-section-head">
            <h3>Text</h3>
            {!detail.text_file && <CopyButton text={detail.text} label="Copy text" />}
          </div>
          {detail.text_file ? (
            <p>
              Read from <span className="path">{detail.text_file}</span>
            </p>
          ) : (
            <p className="job-text-body">
              {detail.text}
              {!detail.text_complete && <span className="muted"> … (only the start is kept)</span>}
            </p>
          )}
        </section>
        <VoiceFacts voice={detail.voice} />
      </div>
    </section>
  )
}

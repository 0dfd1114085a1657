// History: past jobs of every kind with their outcome and metrics, each opening in its own
// view; full-text search across transcripts.

import { useRef, useState } from 'react'
import type { ExportFormat, Job } from '../../bindings'
import { confirm } from '../../lib/confirm'
import { EmptyState } from '../../components/EmptyState'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { Menu } from '../../components/Menu'
import { SearchBox } from '../../components/SearchBox'
import { toast } from '../../lib/toast'
import { api } from '../../lib/api'
import { describeError, jobFailureText } from '../../lib/errors'
import { basename, formatDate, formatDuration, formatRtf } from '../../lib/format'
import { closeTranscript, navigate, openTranscript, useNav } from '../../lib/nav'
import { useAction } from '../../lib/shortcuts'
import { removeFromQueue } from '../transcribe/jobsStore'
import { StatusBadge } from '../transcribe/QueueRow'
import { EXPORT_FORMATS, exportTranscriptAs } from '../transcribe/exportTranscript'
import { JobDetailPane } from './JobDetailPane'
import { JOB_KINDS } from './jobKind'
import { SearchResults } from './SearchResults'
import { useJobHistory, useTranscriptSearch } from './useHistory'

/** What a row is called: the file transcribed, the start of the text said or asked, the batch's folder. */
function rowName(job: Job): string {
  if (job.kind === 'speak' || job.kind === 'chat') return job.input.slice(0, 80)
  return basename(job.input)
}

const DELETE_BODY: Record<Job['kind'], string> = {
  transcribe:
    'The job and its transcript are deleted from Izwi. Your audio file is not touched; a dictation’s recording, which Izwi keeps, is deleted with it.',
  speak: 'The job is deleted from Izwi’s history. WAV copies you saved are not touched.',
  speak_batch: 'The job is deleted from Izwi’s history. The WAV files in its folder are not touched.',
  chat: 'The job, with the question and its reply, is deleted from Izwi’s history.',
}

function JobRow({ job, selected, onDeleted }: { job: Job; selected: boolean; onDeleted: (id: number) => void }) {
  const name = rowName(job)
  const done = job.status === 'done'
  const kind = JOB_KINDS[job.kind]
  // A transcript opens once it exists, or stopped, to say why and transcribe it again (a
  // dictation a crash interrupted: its recording); speech and batches show what they have
  // at any time.
  const openable = job.kind === 'transcribe' ? done || job.status === 'failed' || job.status === 'interrupted' : true
  const reason = jobFailureText(job.status, job.error)
  const del = async () => {
    const ok = await confirm({
      title: `Delete ${name}?`,
      body: DELETE_BODY[job.kind],
      confirmLabel: 'Delete',
      danger: true,
    })
    if (!ok) return
    try {
      await api.deleteJob(job.id)
      onDeleted(job.id)
      removeFromQueue(job.id)
      if (selected) closeTranscript('history')
      toast({ kind: 'success', title: `Deleted ${name}` })
    } catch (e) {
      const { title, detail } = describeError(e)
      toast({ kind: 'error', title: `Could not delete ${name}: ${title}`, detail })
    }
  }
  return (
    <li className={`job-row${selected ? ' job-row-selected' : ''}`} data-job={job.id} aria-label={name}>
      <button
        type="button"
        className="job-row-main"
        disabled={!openable}
        onClick={() => openTranscript(job.id, { on: 'history' })}
        aria-current={selected ? 'true' : undefined}
        title={job.input}
      >
        <span className="job-row-top">
          <span className={`job-kind job-kind-${job.kind}`} title={kind.label} aria-label={kind.label} role="img">
            <Icon name={kind.icon} size={13} aria-hidden="true" />
          </span>
          <span className="job-row-name">{name}</span>
          <StatusBadge status={job.status} />
        </span>
        <span className="job-row-meta tabular">
          <span>{formatDate(job.created_at)}</span>
          {job.metrics.audio_seconds != null && <span>{formatDuration(job.metrics.audio_seconds)}</span>}
          {job.metrics.rtf != null && (
            <span title="Real-time factor: processing time per second of audio">RTF {formatRtf(job.metrics.rtf)}</span>
          )}
          {job.model_id && <span>{job.model_id}</span>}
        </span>
        {reason && job.status !== 'cancelled' && <span className="job-row-error">{reason}</span>}
      </button>
      <div className="job-row-actions">
        {done && job.kind === 'transcribe' && (
          <Menu
            label={`Export ${name}`}
            items={EXPORT_FORMATS.map((f) => ({ id: f.id, label: f.label, hint: f.hint }))}
            onSelect={(fmt) => exportTranscriptAs(job.id, fmt as ExportFormat, name, job.input)}
            button={(p) => (
              <button
                type="button"
                className="btn btn-icon btn-ghost btn-sm"
                aria-label={`Export ${name}`}
                data-tooltip="Export"
                {...p}
              >
                <Icon name="export" size={14} />
              </button>
            )}
          />
        )}
        <button
          type="button"
          className="btn btn-icon btn-ghost btn-sm"
          aria-label={`Delete ${name}`}
          data-tooltip="Delete"
          onClick={del}
        >
          <Icon name="trash" size={14} />
        </button>
      </div>
    </li>
  )
}

export function HistoryPage() {
  const { jobs, loading, error, reload, remove } = useJobHistory()
  const [query, setQuery] = useState('')
  const search = useTranscriptSearch(query)
  const nav = useNav()
  const focus = nav.history
  const inputRef = useRef<HTMLInputElement>(null)
  useAction('find', () => {
    inputRef.current?.focus()
    inputRef.current?.select()
  })
  const searching = query.trim().length > 0

  return (
    <div className="page page-history">
      <header className="page-header">
        <h1 className="page-title">History</h1>
        <SearchBox
          ref={inputRef}
          label="Search all transcripts"
          value={query}
          onChange={setQuery}
          searching={search.searching}
        />
      </header>
      <div className={`split${focus ? '' : ' split-single'}`}>
        <div className="history-list">
          {searching ? (
            <>
              {search.error != null && <ErrorNote error={search.error} title="Search failed" compact />}
              <SearchResults
                hits={search.hits}
                searched={search.searched}
                selected={focus}
                onOpen={(h) =>
                  h.job_id != null && openTranscript(h.job_id, { on: 'history', segmentIdx: h.segment_idx })
                }
              />
            </>
          ) : error != null ? (
            <ErrorNote error={error} title="Could not load the history" onRetry={reload} />
          ) : !loading && jobs.length === 0 ? (
            <EmptyState
              icon="history"
              title="Nothing here yet"
              actions={
                <button type="button" className="btn btn-primary" onClick={() => navigate('transcribe')}>
                  Transcribe a file
                </button>
              }
            >
              <p>Every transcription, speech and batch lands here; transcripts are searchable word for word.</p>
            </EmptyState>
          ) : (
            <ul className="job-list" aria-label="Past jobs">
              {jobs.map((j) => (
                <JobRow key={j.id} job={j} selected={focus?.jobId === j.id} onDeleted={remove} />
              ))}
            </ul>
          )}
        </div>
        {focus && (
          <div className="split-main">
            <JobDetailPane
              key={focus.jobId}
              listed={jobs.find((j) => j.id === focus.jobId) ?? null}
              jobId={focus.jobId}
              focusSegment={focus.segmentIdx}
              focusNonce={focus.nonce}
              onClose={() => closeTranscript('history')}
            />
          </div>
        )}
      </div>
    </div>
  )
}

import { render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, job, ok, queued, transcript } from './bindingsMock'
import { resetApp } from './helpers'
import { ConfirmHost } from '../../src/components/Dialog'
import { HistoryPage } from '../../src/features/history/HistoryPage'
import { navStore } from '../../src/lib/nav'
import type { SearchHit } from '../../src/bindings'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

const hits: SearchHit[] = [
  {
    transcript_id: 3,
    job_id: 7,
    title: 'jfk.wav',
    segment_idx: 1,
    start: 3.5,
    end: 7.6,
    snippet: '…ask not what your [country] can do for you',
  },
  {
    transcript_id: 3,
    job_id: 7,
    title: 'jfk.wav',
    segment_idx: 2,
    start: 7.6,
    end: 11,
    snippet: 'ask what you can do for your [country].',
  },
]

const jobs = [
  job({
    id: 7,
    status: 'done',
    created_at: 2_000,
    metrics: { audio_seconds: 11, processing_seconds: 1.1, rtf: 0.1, tokens: 40 },
  }),
  job({
    id: 8,
    status: 'failed',
    input: '/home/ada/Audio/broken.mp3',
    error: 'could not decode the audio: unsupported codec',
    created_at: 3_000,
  }),
  job({ id: 9, status: 'interrupted', input: '/home/ada/Audio/long.wav', error: null, created_at: 1_000 }),
]

describe('history', () => {
  beforeEach(resetApp)

  it('lists past jobs newest first, with metrics and the reason a job stopped', async () => {
    commands.listJobs.mockResolvedValue(ok(jobs))
    render(<HistoryPage />)
    const list = await screen.findByRole('list', { name: 'Past jobs' })
    // The list is there, empty, while the jobs load: wait for its rows.
    const rows = await within(list).findAllByRole('listitem')
    expect(rows.map((r) => r.getAttribute('aria-label'))).toEqual(['broken.mp3', 'jfk.wav', 'long.wav'])
    expect(rows[0]).toHaveTextContent('Could not decode the audio: unsupported codec')
    expect(rows[1]).toHaveTextContent('11 s')
    expect(rows[1]).toHaveTextContent('RTF 0.10')
    expect(rows[1]).toHaveTextContent('whisper-base')
    expect(rows[2]).toHaveTextContent('Interrupted')
    expect(rows[2]).toHaveTextContent('Izwi was closed while this was running.')
  })

  it('searches as you type, highlights the snippet and opens the hit at its segment', async () => {
    commands.listJobs.mockResolvedValue(ok(jobs))
    commands.searchTranscripts.mockResolvedValue(ok(hits))
    commands.getTranscript.mockResolvedValue(ok(transcript(7)))
    render(<HistoryPage />)
    await screen.findByRole('list', { name: 'Past jobs' })

    await userEvent.type(screen.getByRole('searchbox', { name: 'Search all transcripts' }), 'country')
    const results = await screen.findByRole('list', { name: 'Search results' })
    // Debounced: one search for the whole word, not one per key.
    expect(commands.searchTranscripts).toHaveBeenCalledTimes(1)
    expect(commands.searchTranscripts).toHaveBeenCalledWith('country', expect.any(Number))
    const marks = [...results.querySelectorAll('mark')]
    expect(marks.map((m) => m.textContent)).toEqual(['country', 'country'])
    expect(results).toHaveTextContent('…ask not what your country can do for you')

    await userEvent.click(within(results).getAllByRole('button')[1])
    expect(navStore.get().history).toMatchObject({ jobId: 7, segmentIdx: 2 })
    expect(commands.getTranscript).toHaveBeenCalledWith(7)
    const segments = await screen.findByRole('list', { name: 'Segments' })
    // The flash is set by an effect after the segments render: wait for it.
    await waitFor(() => expect(within(segments).getAllByRole('listitem')[2]).toHaveClass('segment-flash'))
  })

  it('says when nothing matches', async () => {
    commands.searchTranscripts.mockResolvedValue(ok([]))
    render(<HistoryPage />)
    await userEvent.type(screen.getByRole('searchbox', { name: 'Search all transcripts' }), 'zebra')
    expect(await screen.findByText('Nothing found for “zebra”.')).toBeInTheDocument()
  })

  it('deletes a job after confirming', async () => {
    commands.listJobs.mockResolvedValue(ok(jobs))
    render(
      <>
        <HistoryPage />
        <ConfirmHost />
      </>,
    )
    const list = await screen.findByRole('list', { name: 'Past jobs' })
    // The list is there, empty, while the jobs load: wait for the row.
    await userEvent.click(await within(list).findByRole('button', { name: 'Delete broken.mp3' }))
    const dialog = screen.getByRole('dialog', { name: 'Delete broken.mp3?' })
    await userEvent.click(within(dialog).getByRole('button', { name: 'Delete' }))
    expect(commands.deleteJob).toHaveBeenCalledWith(8)
    // The row goes once the command answers (a state update outside act): wait for it.
    await waitFor(() => expect(within(list).queryByRole('listitem', { name: 'broken.mp3' })).not.toBeInTheDocument())
  })

  it('transcribes an interrupted dictation’s recording again, with its options', async () => {
    const recording = '/home/ada/.local/share/izwi/recordings/dictation-1764144000000.wav'
    const interrupted = job({
      id: 12,
      status: 'interrupted',
      input: recording,
      params: { path: recording, model_id: 'local/tiny', language: 'en', word_timestamps: true },
      model_id: 'local/tiny',
      error: 'Izwi stopped while this job was running',
    })
    commands.listJobs.mockResolvedValue(ok([interrupted]))
    commands.transcribeFiles.mockResolvedValue(ok(queued([job({ id: 13, input: recording, model_id: 'local/tiny' })])))
    render(<HistoryPage />)
    const list = await screen.findByRole('list', { name: 'Past jobs' })
    const row = await within(list).findByRole('listitem', { name: 'dictation-1764144000000.wav' })
    await userEvent.click(within(row).getAllByRole('button')[0])
    const note = await screen.findByRole('alert')
    expect(note).toHaveTextContent('Interrupted')
    await userEvent.click(within(note).getByRole('button', { name: 'Try again' }))
    expect(commands.transcribeFiles).toHaveBeenCalledWith([recording], {
      model_id: 'local/tiny',
      language: 'en',
      task: 'transcribe',
      timestamps: true,
      beam_size: 1,
      initial_prompt: null,
      word_timestamps: true,
      delay_ms: null,
    })
    await waitFor(() => expect(navStore.get()).toMatchObject({ view: 'transcribe', transcribe: { jobId: 13 } }))
  })
})

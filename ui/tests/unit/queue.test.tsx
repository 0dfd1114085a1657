import { act, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitRuntime, fail, job, ok, queued } from './bindingsMock'
import { resetApp } from './helpers'
import { Queue } from '../../src/features/transcribe/Queue'
import { addJobs, handleJobEvent } from '../../src/features/transcribe/jobsStore'
import { subscribeRuntime } from '../../src/lib/events'
import { Toaster } from '../../src/components/Toaster'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

async function setup() {
  const sub = subscribeRuntime(handleJobEvent)
  await sub.ready
  addJobs([job({ id: 7 }), job({ id: 8, input: '/home/ada/Audio/interview.mp3' })])
  render(
    <>
      <Queue selected={null} onOpen={() => {}} />
      <Toaster />
    </>,
  )
}

describe('queue rows', () => {
  beforeEach(resetApp)

  it('shows progress and the time left from job_progress events', async () => {
    await setup()
    const row = screen.getByRole('listitem', { name: 'jfk.wav' })
    expect(within(row).getByText('Queued')).toBeInTheDocument()
    expect(within(row).getByTestId('queue-detail')).toHaveTextContent('Queued · waiting for a free slot')

    expect(screen.getByTestId('queue-summary')).toHaveTextContent('2 queued')
    act(() => emitRuntime({ type: 'job_started', job_id: 7 }))
    expect(within(row).getByText('Running')).toBeInTheDocument()
    expect(screen.getByTestId('queue-summary')).toHaveTextContent('1 running · 1 queued')
    // The stages the runtime reports, instead of "Starting…" all along.
    act(() => emitRuntime({ type: 'job_stage', job_id: 7, stage: 'loading_model' }))
    expect(within(row).getByTestId('queue-detail')).toHaveTextContent('Loading the model…')
    expect(within(row).getByRole('progressbar')).not.toHaveAttribute('aria-valuenow')
    act(() => emitRuntime({ type: 'job_stage', job_id: 7, stage: 'decoding' }))
    expect(within(row).getByTestId('queue-detail')).toHaveTextContent('Reading the file…')
    act(() => emitRuntime({ type: 'job_stage', job_id: 7, stage: 'transcribing' }))
    // The runtime says how many windows there are before the first is done: the bar is determinate at 0.
    act(() =>
      emitRuntime({
        type: 'job_progress',
        job_id: 7,
        progress: 0,
        windows_done: 0,
        windows_total: 5,
        eta_seconds: null,
      }),
    )
    expect(within(row).getByRole('progressbar')).toHaveAttribute('aria-valuenow', '0')
    expect(within(row).getByTestId('queue-detail')).toHaveTextContent('Transcribing · 0% · Estimating…')

    act(() =>
      emitRuntime({
        type: 'job_progress',
        job_id: 7,
        progress: 0.4,
        windows_done: 2,
        windows_total: 5,
        eta_seconds: 12,
      }),
    )
    expect(within(row).getByRole('progressbar', { name: 'Progress of jfk.wav' })).toHaveAttribute('aria-valuenow', '40')
    expect(within(row).getByTestId('queue-detail')).toHaveTextContent('Transcribing · 40% · 12 s left')

    act(() =>
      emitRuntime({
        type: 'job_progress',
        job_id: 7,
        progress: 0.8,
        windows_done: 4,
        windows_total: 5,
        eta_seconds: 75,
      }),
    )
    expect(within(row).getByRole('progressbar')).toHaveAttribute('aria-valuenow', '80')
    expect(within(row).getByTestId('queue-detail')).toHaveTextContent('80% · 1 min 15 s left')

    // Events of another job leave this row alone.
    const other = screen.getByRole('listitem', { name: 'interview.mp3' })
    expect(within(other).getByText('Queued')).toBeInTheDocument()
  })

  it('cancels a job', async () => {
    await setup()
    act(() => emitRuntime({ type: 'job_started', job_id: 7 }))
    const row = screen.getByRole('listitem', { name: 'jfk.wav' })
    await userEvent.click(within(row).getByRole('button', { name: 'Cancel jfk.wav' }))
    expect(commands.cancelJob).toHaveBeenCalledWith(7)
    act(() => emitRuntime({ type: 'job_finished', job_id: 7, status: 'cancelled', error: null }))
    expect(within(row).getByText('Cancelled')).toBeInTheDocument()
    expect(within(row).queryByRole('button', { name: 'Cancel jfk.wav' })).not.toBeInTheDocument()
    expect(within(row).queryByRole('progressbar')).not.toBeInTheDocument()
  })

  it('says why a job failed, and when cancelling fails', async () => {
    await setup()
    commands.cancelJob.mockResolvedValueOnce(fail('not_found', 'job 8 is already finished') as never)
    await userEvent.click(screen.getByRole('button', { name: 'Cancel interview.mp3' }))
    expect(await screen.findByRole('alert')).toHaveTextContent('Could not cancel interview.mp3')

    act(() => emitRuntime({ type: 'job_finished', job_id: 7, status: 'failed', error: 'the file has no audio track' }))
    const row = screen.getByRole('listitem', { name: 'jfk.wav' })
    expect(within(row).getByText('Failed')).toBeInTheDocument()
    expect(within(row).getByText('The file has no audio track')).toBeInTheDocument()
  })

  it('queues a failed file again with the same options', async () => {
    const sub = subscribeRuntime(handleJobEvent)
    await sub.ready
    const params = {
      path: '/home/ada/Audio/rede.mp3',
      model_id: 'whisper-base',
      language: 'de',
      task: 'translate',
      timestamps: true,
      initial_prompt: 'Bundestag',
      beam_size: 3,
    }
    addJobs([
      job({ id: 7 }),
      job({
        id: 8,
        input: '/home/ada/Audio/rede.mp3',
        params,
        status: 'failed',
        error: 'loading model x: out of memory',
      }),
    ])
    render(<Queue selected={null} onOpen={() => {}} />)
    const failed = screen.getByRole('listitem', { name: 'rede.mp3' })
    commands.transcribeFiles.mockResolvedValue(ok(queued([job({ id: 9, input: '/home/ada/Audio/rede.mp3', params })])))
    await userEvent.click(within(failed).getByRole('button', { name: 'Retry rede.mp3' }))
    expect(commands.transcribeFiles).toHaveBeenCalledWith(['/home/ada/Audio/rede.mp3'], {
      model_id: 'whisper-base',
      language: 'de',
      task: 'translate',
      timestamps: true,
      beam_size: 3,
      initial_prompt: 'Bundestag',
      word_timestamps: false,
      delay_ms: null,
    })
    // The new job takes the failed row's place (the failed one stays in History).
    const rows = await screen.findAllByRole('listitem')
    expect(rows.map((r) => r.getAttribute('data-job'))).toEqual(['7', '9'])
    expect(rows[1]).toHaveAttribute('data-status', 'queued')
    // Running jobs offer no Retry.
    expect(within(rows[0]).queryByRole('button', { name: /Retry/ })).not.toBeInTheDocument()
  })
})

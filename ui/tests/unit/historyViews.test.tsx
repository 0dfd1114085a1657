import { render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { batchDetail, commands, job, ok, speechDetail, transcript } from './bindingsMock'
import { resetApp } from './helpers'
import { Toaster } from '../../src/components/Toaster'
import { HistoryPage } from '../../src/features/history/HistoryPage'
import { openTranscript } from '../../src/lib/nav'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

const speech = speechDetail()
const batch = batchDetail()
const jobs = [
  job({ id: 7, status: 'done', created_at: 1_000 }),
  { ...speech.job, created_at: 2_000 },
  { ...batch.job, created_at: 3_000 },
]

async function openRow(name: string | RegExp) {
  const list = await screen.findByRole('list', { name: 'Past jobs' })
  const row = await within(list).findByRole('listitem', { name })
  await userEvent.click(within(row).getAllByRole('button')[0])
}

describe('history views by kind', () => {
  beforeEach(resetApp)

  it('badges each row with its kind and offers export only for transcripts', async () => {
    commands.listJobs.mockResolvedValue(ok(jobs))
    render(<HistoryPage />)
    const list = await screen.findByRole('list', { name: 'Past jobs' })
    const rows = await within(list).findAllByRole('listitem')
    expect(rows.map((r) => within(r).getByRole('img').getAttribute('aria-label'))).toEqual([
      'Batch',
      'Speech',
      'Transcript',
    ])
    expect(rows[0]).toHaveAttribute('aria-label', 'prompts')
    expect(rows[1]).toHaveAttribute('aria-label', 'Good morning. The kettle is on.')
    expect(within(rows[2]).getByRole('button', { name: 'Export jfk.wav' })).toBeInTheDocument()
    expect(within(rows[1]).queryByRole('button', { name: /^Export/ })).not.toBeInTheDocument()
    // A cancelled batch still opens: it shows the lines it made.
    expect(within(rows[0]).getAllByRole('button')[0]).toBeEnabled()
  })

  it('opens a speak job with its text, voice, settings and recording, and saves it again', async () => {
    commands.listJobs.mockResolvedValue(ok(jobs))
    commands.getJobDetail.mockResolvedValue(ok({ kind: 'speech', ...speech }))
    commands.chooseSavePath.mockResolvedValueOnce(ok('/home/ada/Desktop/kettle.wav'))
    render(
      <>
        <HistoryPage />
        <Toaster />
      </>,
    )
    await openRow('Good morning. The kettle is on.')
    const view = await screen.findByRole('region', { name: 'Speech job 12' })
    expect(commands.getJobDetail).toHaveBeenCalledWith(12)
    expect(commands.getTranscript).not.toHaveBeenCalled()
    expect(within(view).queryByText('No speech was found in this file.')).not.toBeInTheDocument()
    expect(within(view).getByRole('region', { name: 'Text' })).toHaveTextContent('Good morning. The kettle is on.')
    const facts = view.querySelector('dl[aria-label="Voice and settings"]')!
    expect(facts).toHaveTextContent('VoiceJoe slow')
    expect(facts).toHaveTextContent('Modelpiper-en_US-joe-medium')
    expect(facts).toHaveTextContent('Speed1.1× (set for this job)')
    expect(facts).toHaveTextContent('Pitch-1 semitones')

    const audio = (await within(view).findByTestId('player-audio')) as HTMLAudioElement
    expect(audio.getAttribute('src')).toBe(`asset://localhost/${encodeURIComponent(speech.audio_path!)}`)
    expect(commands.audioPeaks).toHaveBeenCalledWith(speech.audio_path, expect.any(Number))
    await userEvent.click(within(view).getByRole('button', { name: 'Play' }))
    expect(within(view).getByRole('button', { name: 'Pause' })).toBeInTheDocument()

    await userEvent.click(within(view).getByRole('button', { name: /Save as/ }))
    expect(commands.chooseSavePath).toHaveBeenCalledWith(
      'Save the speech as WAV',
      'good-morning-the-kettle-is-on.wav',
      null,
    )
    expect(commands.saveSpeech).toHaveBeenCalledWith(12, '/home/ada/Desktop/kettle.wav')
    expect(await screen.findByRole('status')).toHaveTextContent('Saved WAV')
  })

  it('says when a recording is gone and cannot be saved', async () => {
    commands.getJobDetail.mockResolvedValue(ok({ kind: 'speech', ...speechDetail({ audio_exists: false }) }))
    render(<HistoryPage />)
    openTranscript(12, { on: 'history' })
    const view = await screen.findByRole('region', { name: 'Speech job 12' })
    expect(within(view).getByText(/The recording is no longer at/)).toBeInTheDocument()
    expect(within(view).getByRole('button', { name: /Save as/ })).toBeDisabled()
    expect(within(view).queryByTestId('player-audio')).not.toBeInTheDocument()
  })

  it('opens a batch with every line, its file and state, and plays a line', async () => {
    commands.listJobs.mockResolvedValue(ok(jobs))
    commands.getJobDetail.mockResolvedValue(ok({ kind: 'batch', ...batch }))
    render(<HistoryPage />)
    await openRow('prompts')
    const view = await screen.findByRole('region', { name: 'Batch job 13' })
    expect(within(view).getByText('Cancelled')).toBeInTheDocument()
    expect(view).toHaveTextContent('1 of 3 lines made')
    const lines = within(within(view).getByRole('list', { name: 'Lines' })).getAllByRole('listitem')
    expect(lines.map((l) => l.textContent)).toEqual([
      '1Welcome aboard.001.wav1.2 s',
      '2Please take a seat.002.wav1.6 sFile missing',
      '3(text not kept)Not made',
    ])
    expect(within(lines[1]).queryByRole('button')).not.toBeInTheDocument()

    await userEvent.click(within(lines[0]).getByRole('button', { name: 'Play line 1' }))
    const audio = (await within(view).findByTestId('line-audio')) as HTMLAudioElement
    expect(audio.getAttribute('src')).toBe(`asset://localhost/${encodeURIComponent('/home/ada/Audio/prompts/001.wav')}`)
    expect(await within(lines[0]).findByRole('button', { name: 'Pause line 1' })).toBeInTheDocument()

    await userEvent.click(within(view).getByRole('button', { name: /Show in folder/ }))
    expect(commands.showBatchOutput).toHaveBeenCalledWith(13)
  })

  it('opens a transcription job as its transcript', async () => {
    commands.listJobs.mockResolvedValue(ok(jobs))
    commands.getTranscript.mockResolvedValue(ok(transcript(7)))
    render(<HistoryPage />)
    await openRow('jfk.wav')
    expect(await screen.findByRole('region', { name: 'Transcript of jfk.wav' })).toBeInTheDocument()
    expect(commands.getJobDetail).not.toHaveBeenCalled()
  })
})

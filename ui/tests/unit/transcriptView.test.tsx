import { act, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitRuntime, job, ok, transcript } from './bindingsMock'
import { resetApp } from './helpers'
import { Toaster } from '../../src/components/Toaster'
import { addJobs, handleJobEvent } from '../../src/features/transcribe/jobsStore'
import { TranscriptView } from '../../src/features/transcribe/TranscriptView'
import { subscribeRuntime } from '../../src/lib/events'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

function segmentTexts() {
  return within(screen.getByRole('list', { name: 'Segments' }))
    .getAllByRole('listitem')
    .map((li) => li.querySelector('.segment-text')?.textContent)
}

describe('transcript view', () => {
  beforeEach(resetApp)

  it('searches the transcript, highlights matches and steps through them', async () => {
    commands.getTranscript.mockResolvedValue(ok(transcript(7)))
    render(<TranscriptView jobId={7} />)
    expect(await screen.findByText('And so my fellow Americans,')).toBeInTheDocument()
    expect(commands.getTranscript).toHaveBeenCalledWith(7)

    await userEvent.click(screen.getByRole('button', { name: 'Search in transcript' }))
    const input = screen.getByRole('searchbox', { name: 'Find in transcript' })
    expect(input).toHaveFocus()
    await userEvent.type(input, 'country')
    const marks = () => [...document.querySelectorAll('.segments mark')]
    expect(marks()).toHaveLength(2)
    expect(marks().map((m) => m.textContent)).toEqual(['country', 'country'])
    expect(screen.getByText('1 of 2')).toBeInTheDocument()
    expect(marks()[0]).toHaveClass('match-current')

    await userEvent.keyboard('{Enter}')
    expect(screen.getByText('2 of 2')).toBeInTheDocument()
    expect(marks()[1]).toHaveClass('match-current')
    expect(marks()[0]).not.toHaveClass('match-current')

    await userEvent.keyboard('{Shift>}{Enter}{/Shift}')
    expect(screen.getByText('1 of 2')).toBeInTheDocument()

    await userEvent.clear(input)
    await userEvent.type(input, 'zebra')
    expect(screen.getByText('No matches')).toBeInTheDocument()
    expect(marks()).toHaveLength(0)

    await userEvent.keyboard('{Escape}')
    expect(screen.queryByRole('searchbox')).not.toBeInTheDocument()
  })

  it('seeks to a segment on click and highlights the one playing', async () => {
    commands.getTranscript.mockResolvedValue(ok(transcript(7)))
    render(<TranscriptView jobId={7} />)
    await screen.findByText('And so my fellow Americans,')
    // The source is set by an effect after the transcript renders: wait for it.
    const audio = (await screen.findByTestId('player-audio')) as HTMLAudioElement
    expect(audio.getAttribute('src')).toBe(`asset://localhost/${encodeURIComponent('/home/ada/Audio/jfk.wav')}`)
    expect(commands.audioPeaks).toHaveBeenCalledWith('/home/ada/Audio/jfk.wav', expect.any(Number))

    const items = within(screen.getByRole('list', { name: 'Segments' })).getAllByRole('listitem')
    await userEvent.click(within(items[2]).getByText('ask what you can do for your country.'))
    expect(audio.currentTime).toBe(7.6)
    expect(screen.getByRole('slider', { name: 'Playback position' })).toHaveAttribute('aria-valuenow', '8')

    await userEvent.click(within(items[1]).getByRole('button', { name: 'Jump to 0:03' }))
    expect(audio.currentTime).toBe(3.5)

    // Playing at 4 s: the second segment is the current one.
    await userEvent.click(screen.getByRole('button', { name: 'Play' }))
    act(() => {
      audio.currentTime = 4
      audio.dispatchEvent(new Event('timeupdate'))
    })
    expect(items[1]).toHaveAttribute('aria-current', 'true')
    expect(items[1]).toHaveClass('segment-current')
    expect(items[0]).not.toHaveAttribute('aria-current')
    act(() => {
      audio.currentTime = 9
      audio.dispatchEvent(new Event('timeupdate'))
    })
    expect(items[2]).toHaveAttribute('aria-current', 'true')
    expect(items[1]).not.toHaveAttribute('aria-current')
  })

  it('shows live segments in time order while the job runs, then the stored transcript', async () => {
    const sub = subscribeRuntime(handleJobEvent)
    await sub.ready
    addJobs([job({ id: 9 })])
    render(<TranscriptView jobId={9} />)
    await act(async () => {})
    expect(commands.getTranscript).toHaveBeenCalledWith(9)

    act(() => emitRuntime({ type: 'job_started', job_id: 9 }))
    act(() =>
      emitRuntime({ type: 'job_segments', job_id: 9, segments: [{ start: 30, end: 34, text: ' second window' }] }),
    )
    act(() => emitRuntime({ type: 'job_segments', job_id: 9, segments: [{ start: 0, end: 4, text: ' first window' }] }))
    expect(segmentTexts()).toEqual(['first window', 'second window'])
    expect(screen.getByRole('button', { name: /Export/ })).toBeDisabled()

    commands.getTranscript.mockResolvedValue(ok(transcript(9)))
    await act(async () => emitRuntime({ type: 'job_finished', job_id: 9, status: 'done', error: null }))
    expect(await screen.findByText('And so my fellow Americans,')).toBeInTheDocument()
    expect(segmentTexts()).toHaveLength(3)
  })

  it('exports through the save dialog and confirms where it went', async () => {
    commands.getTranscript.mockResolvedValue(ok(transcript(7)))
    commands.chooseSavePath.mockResolvedValueOnce(ok('/home/ada/Documents/jfk.srt'))
    render(
      <>
        <TranscriptView jobId={7} />
        <Toaster />
      </>,
    )
    await screen.findByText('And so my fellow Americans,')
    await userEvent.click(screen.getByRole('button', { name: /Export/ }))
    await userEvent.click(screen.getByRole('menuitem', { name: /SubRip/ }))
    expect(commands.chooseSavePath).toHaveBeenCalledWith(expect.any(String), 'jfk.srt', null)
    expect(commands.exportTranscript).toHaveBeenCalledWith(7, 'srt', '/home/ada/Documents/jfk.srt')
    const status = await screen.findByRole('status')
    expect(status).toHaveTextContent('Saved SRT')
    expect(status).toHaveTextContent('/home/ada/Documents/jfk.srt')
  })
})

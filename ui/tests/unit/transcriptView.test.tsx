import { act, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitRuntime, fail, job, ok, transcript } from './bindingsMock'
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

  it('highlights the word being said in the segment playing, when it has word times', async () => {
    const t = transcript(7)
    t.segments[2] = {
      ...t.segments[2],
      words: [
        { word: ' ask', start: 7.7, end: 8.4, probability: 0.9 },
        { word: ' what', start: 8.4, end: 8.7, probability: 0.9 },
        { word: ' you', start: 8.7, end: 9.0, probability: 0.9 },
        { word: ' can', start: 9.0, end: 9.3, probability: 0.9 },
        { word: ' do', start: 9.3, end: 9.5, probability: 0.9 },
        { word: ' for', start: 9.5, end: 9.7, probability: 0.9 },
        { word: ' your', start: 9.7, end: 9.9, probability: 0.9 },
        { word: ' country.', start: 9.9, end: 10.4, probability: 0.9 },
      ],
    }
    commands.getTranscript.mockResolvedValue(ok(t))
    render(<TranscriptView jobId={7} />)
    await screen.findByText('And so my fellow Americans,')
    const audio = (await screen.findByTestId('player-audio')) as HTMLAudioElement
    await userEvent.click(screen.getByRole('button', { name: 'Play' }))
    const items = within(screen.getByRole('list', { name: 'Segments' })).getAllByRole('listitem')
    const spoken = () => items[2].querySelector('.word-current')?.textContent
    act(() => {
      audio.currentTime = 8.5
      audio.dispatchEvent(new Event('timeupdate'))
    })
    expect(spoken()).toBe('what')
    // The text reads the same with the marks in it.
    expect(items[2].querySelector('.segment-text')?.textContent).toBe('ask what you can do for your country.')
    act(() => {
      audio.currentTime = 10
      audio.dispatchEvent(new Event('timeupdate'))
    })
    expect(spoken()).toBe('country.')
    // A segment without word times, playing, shows its text as before.
    act(() => {
      audio.currentTime = 4
      audio.dispatchEvent(new Event('timeupdate'))
    })
    expect(items[1]).toHaveClass('segment-current')
    expect(document.querySelector('.word-current')).toBeNull()
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
      emitRuntime({
        type: 'job_segments',
        job_id: 9,
        window: 1,
        segments: [{ start: 30, end: 34, text: ' second window' }],
      }),
    )
    act(() =>
      emitRuntime({
        type: 'job_segments',
        job_id: 9,
        window: 0,
        segments: [{ start: 0, end: 4, text: ' first window' }],
      }),
    )
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
    // The dialog starts beside the source file, not in the working directory.
    expect(commands.chooseSavePath).toHaveBeenCalledWith(expect.any(String), 'jfk.srt', '/home/ada/Audio/jfk.wav')
    expect(commands.exportTranscript).toHaveBeenCalledWith(7, 'srt', '/home/ada/Documents/jfk.srt')
    const status = await screen.findByRole('status')
    expect(status).toHaveTextContent('Saved SRT')
    expect(status).toHaveTextContent('/home/ada/Documents/jfk.srt')
  })

  describe('correcting segments', () => {
    const rows = () => within(screen.getByRole('list', { name: 'Segments' })).getAllByRole('listitem')

    it('edits a segment in place: Enter saves, the original is kept and shown, revert puts it back', async () => {
      commands.getTranscript.mockResolvedValue(ok(transcript(7)))
      render(<TranscriptView jobId={7} />)
      await screen.findByText('And so my fellow Americans,')

      await userEvent.click(within(rows()[1]).getByRole('button', { name: 'Edit text at 0:03' }))
      const field = screen.getByRole('textbox', { name: 'Text at 0:03' })
      expect(field).toHaveFocus()
      expect(field).toHaveValue('ask not what your country can do for you,')
      await userEvent.clear(field)
      await userEvent.type(field, 'ask not what your country can do for you —{Enter}')
      expect(commands.editSegment).toHaveBeenCalledWith(3, 1, 'ask not what your country can do for you —')
      expect(screen.queryByRole('textbox')).not.toBeInTheDocument()
      expect(segmentTexts()[1]).toBe('ask not what your country can do for you —')
      const mark = within(rows()[1]).getByText('edited')
      expect(mark).toHaveAttribute('title', 'Heard: ask not what your country can do for you,')
      expect(screen.getByText('1 corrected')).toBeInTheDocument()

      await userEvent.click(within(rows()[1]).getByRole('button', { name: /^Revert to what was heard/ }))
      expect(commands.revertSegment).toHaveBeenCalledWith(3, 1)
      expect(segmentTexts()[1]).toBe('ask not what your country can do for you,')
      expect(within(rows()[1]).queryByText('edited')).not.toBeInTheDocument()
    })

    it('Esc cancels, leaving the field saves, a double-click starts editing', async () => {
      commands.getTranscript.mockResolvedValue(ok(transcript(7)))
      render(<TranscriptView jobId={7} />)
      await screen.findByText('And so my fellow Americans,')

      await userEvent.dblClick(screen.getByText('And so my fellow Americans,'))
      await userEvent.type(screen.getByRole('textbox', { name: 'Text at 0:00' }), ' all{Escape}')
      expect(screen.queryByRole('textbox')).not.toBeInTheDocument()
      expect(commands.editSegment).not.toHaveBeenCalled()
      expect(segmentTexts()[0]).toBe('And so my fellow Americans,')

      await userEvent.click(within(rows()[0]).getByRole('button', { name: 'Edit text at 0:00' }))
      await userEvent.type(screen.getByRole('textbox', { name: 'Text at 0:00' }), ' all')
      await userEvent.click(within(rows()[2]).getByRole('button', { name: 'Jump to 0:07' }))
      expect(commands.editSegment).toHaveBeenCalledWith(3, 0, 'And so my fellow Americans, all')
      expect(segmentTexts()[0]).toBe('And so my fellow Americans, all')
    })

    it('keeps the draft and says why when the correction cannot be saved', async () => {
      commands.getTranscript.mockResolvedValue(ok(transcript(7)))
      commands.editSegment.mockResolvedValueOnce(
        fail('invalid', 'a segment cannot be empty: type its words, or revert it to what was heard') as never,
      )
      render(
        <>
          <TranscriptView jobId={7} />
          <Toaster />
        </>,
      )
      await screen.findByText('And so my fellow Americans,')
      await userEvent.click(within(rows()[0]).getByRole('button', { name: 'Edit text at 0:00' }))
      const field = screen.getByRole('textbox', { name: 'Text at 0:00' })
      await userEvent.clear(field)
      await userEvent.type(field, '{Enter}')
      expect(await screen.findByRole('alert')).toHaveTextContent('Could not save the correction')
      expect(screen.getByRole('textbox', { name: 'Text at 0:00' })).toBeInTheDocument()
    })

    it('offers no editing while the job still adds segments', async () => {
      const sub = subscribeRuntime(handleJobEvent)
      await sub.ready
      addJobs([job({ id: 9 })])
      render(<TranscriptView jobId={9} />)
      act(() => emitRuntime({ type: 'job_started', job_id: 9 }))
      act(() =>
        emitRuntime({ type: 'job_segments', job_id: 9, window: 0, segments: [{ start: 0, end: 4, text: ' live' }] }),
      )
      expect(segmentTexts()).toEqual(['live'])
      expect(screen.queryByRole('button', { name: /^Edit text/ })).not.toBeInTheDocument()
    })
  })
})

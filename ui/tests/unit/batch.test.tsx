import { act, fireEvent, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitRuntime, fail, job, ok, voice } from './bindingsMock'
import { resetApp } from './helpers'
import { Toaster } from '../../src/components/Toaster'
import { handleBatchEvent } from '../../src/features/batch/batchStore'
import { BatchPage } from '../../src/features/batch/BatchPage'
import { loadVoices } from '../../src/features/voices/voicesStore'
import { subscribeRuntime } from '../../src/lib/events'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

const lineDone = (line: number, seconds = 1.5) =>
  ({
    type: 'batch_line_done',
    job_id: 30,
    line,
    file: `/home/ada/Exports/${String(line + 1).padStart(3, '0')}.wav`,
    seconds,
  }) as const

async function setup() {
  commands.listVoices.mockResolvedValue(ok([voice(), voice({ id: 4, name: 'Joe, slowly' })]))
  const sub = subscribeRuntime(handleBatchEvent)
  await sub.ready
  await loadVoices()
  render(
    <>
      <BatchPage />
      <Toaster />
    </>,
  )
}

async function chooseFolder(dir = '/home/ada/Exports') {
  commands.choosePaths.mockResolvedValueOnce(ok([dir]))
  await userEvent.click(screen.getByRole('button', { name: /Choose folder/ }))
  expect(commands.choosePaths).toHaveBeenCalledWith('output_folder')
}

describe('Batch export', () => {
  beforeEach(resetApp)

  it('makes one WAV per line with per-line progress, then opens the folder', async () => {
    commands.speakBatch.mockResolvedValue(ok(job({ id: 30, kind: 'speak_batch', input: '/home/ada/Exports' })))
    await setup()
    const start = screen.getByRole('button', { name: /Start/ })
    expect(start).toBeDisabled()
    await userEvent.type(
      screen.getByRole('textbox', { name: 'Lines to speak' }),
      'One.{Enter}{Enter}  Two. {Enter}Three.',
    )
    expect(screen.getByTestId('batch-count')).toHaveTextContent('3 lines → 3 WAV files and manifest.csv')
    expect(start).toBeDisabled()
    await chooseFolder()
    expect(screen.getByRole('button', { name: /Exports/ })).toBeInTheDocument()
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Voice' }), '4')
    // A batch has its own speed, like Speak.
    fireEvent.change(screen.getByRole('slider', { name: 'Speed' }), { target: { value: '1.25' } })
    await userEvent.click(start)
    expect(commands.speakBatch).toHaveBeenCalledWith('4', ['One.', 'Two.', 'Three.'], '/home/ada/Exports', 1.25)

    const lines = screen.getByRole('list', { name: 'Lines' })
    const line = (n: number) => within(lines).getByRole('listitem', { name: `Line ${n}` })
    expect(within(lines).getAllByRole('listitem')).toHaveLength(3)
    act(() => emitRuntime({ type: 'job_started', job_id: 30 }))
    expect(line(1)).toHaveAttribute('data-state', 'working')
    expect(line(2)).toHaveAttribute('data-state', 'waiting')

    act(() => emitRuntime(lineDone(0, 1.25)))
    expect(line(1)).toHaveAttribute('data-state', 'done')
    expect(line(1)).toHaveTextContent('001.wav · 1.3 s')
    expect(line(2)).toHaveAttribute('data-state', 'working')
    expect(screen.getByTestId('batch-progress')).toHaveTextContent('1 of 3 lines done')
    expect(screen.getByRole('progressbar', { name: 'Batch progress' })).toHaveAttribute('aria-valuenow', '33')

    // A finished line plays on its own, while the rest are made.
    expect(within(line(2)).queryByRole('button', { name: /Play/ })).not.toBeInTheDocument()
    await userEvent.click(within(line(1)).getByRole('button', { name: 'Play line 1' }))
    const audio = screen.getByTestId('line-audio') as HTMLAudioElement
    expect(decodeURIComponent(audio.src)).toContain('/home/ada/Exports/001.wav')
    expect(HTMLMediaElement.prototype.play).toHaveBeenCalled()
    await userEvent.click(within(line(1)).getByRole('button', { name: 'Stop line 1' }))
    expect(screen.queryByTestId('line-audio')).not.toBeInTheDocument()

    act(() => emitRuntime(lineDone(1)))
    act(() => emitRuntime(lineDone(2)))
    act(() => emitRuntime({ type: 'job_finished', job_id: 30, status: 'done', error: null }))
    expect(screen.getByTestId('batch-progress')).toHaveTextContent('Done · 3 files in /home/ada/Exports')
    expect(screen.getByRole('progressbar', { name: 'Batch progress' })).toHaveAttribute('aria-valuenow', '100')
    await userEvent.click(screen.getByRole('button', { name: /Open folder/ }))
    expect(commands.showBatchOutput).toHaveBeenCalledWith(30)

    // A new batch keeps the lines but asks for another folder (this one holds a batch now).
    await userEvent.click(screen.getByRole('button', { name: 'New batch' }))
    expect(screen.getByRole('textbox', { name: 'Lines to speak' })).toHaveValue('One.\n\n  Two. \nThree.')
    expect(screen.getByRole('button', { name: /Choose folder/ })).toBeInTheDocument()
  })

  it('imports the lines of a .csv file', async () => {
    commands.readLines.mockResolvedValue(ok(['Welcome.', 'Tickets, please.']))
    await setup()
    commands.choosePaths.mockResolvedValueOnce(ok(['/home/ada/script.csv']))
    await userEvent.click(screen.getByRole('button', { name: /Import .txt or .csv/ }))
    expect(commands.readLines).toHaveBeenCalledWith('/home/ada/script.csv')
    expect(screen.getByRole('textbox', { name: 'Lines to speak' })).toHaveValue('Welcome.\nTickets, please.')
    expect(screen.getByTestId('batch-count')).toHaveTextContent(
      '2 lines → 2 WAV files and manifest.csv · from script.csv',
    )
    expect(await screen.findByText('Read 2 lines')).toBeInTheDocument()
  })

  it('says why a file could not be read', async () => {
    commands.readLines.mockResolvedValue(fail('invalid', '/home/ada/empty.txt has no lines to say') as never)
    await setup()
    commands.choosePaths.mockResolvedValueOnce(ok(['/home/ada/empty.txt']))
    await userEvent.click(screen.getByRole('button', { name: /Import .txt or .csv/ }))
    expect(await screen.findByText('Could not read empty.txt: That did not work.')).toBeInTheDocument()
    expect(screen.getByText('/home/ada/empty.txt has no lines to say')).toBeInTheDocument()
  })

  it('cancels, keeping the files already written', async () => {
    commands.speakBatch.mockResolvedValue(ok(job({ id: 30, kind: 'speak_batch' })))
    await setup()
    await userEvent.type(screen.getByRole('textbox', { name: 'Lines to speak' }), 'A.{Enter}B.{Enter}C.')
    await chooseFolder()
    await userEvent.click(screen.getByRole('button', { name: /Start/ }))
    act(() => emitRuntime(lineDone(0)))
    await userEvent.click(screen.getByRole('button', { name: /Cancel/ }))
    expect(commands.cancelJob).toHaveBeenCalledWith(30)
    act(() => emitRuntime({ type: 'job_finished', job_id: 30, status: 'cancelled', error: null }))
    expect(screen.getByTestId('batch-progress')).toHaveTextContent('Cancelled. 1 file kept.')
    expect(screen.getByRole('listitem', { name: 'Line 2' })).toHaveAttribute('data-state', 'skipped')
    expect(screen.getByRole('button', { name: /Open folder/ })).toBeInTheDocument()
  })

  it('shows a refused batch where it happened', async () => {
    commands.speakBatch.mockResolvedValue(
      fail('invalid', '/home/ada/Exports already holds a batch (manifest.csv); choose an empty folder') as never,
    )
    await setup()
    await userEvent.type(screen.getByRole('textbox', { name: 'Lines to speak' }), 'A.')
    await chooseFolder()
    await userEvent.click(screen.getByRole('button', { name: /Start/ }))
    const alert = await screen.findByRole('alert')
    expect(alert).toHaveTextContent('Could not start the batch')
    expect(alert).toHaveTextContent('already holds a batch (manifest.csv); choose an empty folder')
    expect(screen.getByRole('textbox', { name: 'Lines to speak' })).toHaveValue('A.')
  })

  describe("Whisper's check", () => {
    const row = (line: number, text: string, transcript: string | null, wer: number | null, flagged = false) => ({
      line,
      file: `00${line}.wav`,
      seconds: 1,
      text,
      seed: 0,
      transcript,
      wer,
      flagged,
    })

    async function runBatch() {
      commands.speakBatch.mockResolvedValue(ok(job({ id: 30, kind: 'speak_batch', input: '/home/ada/Exports' })))
      await setup()
      await userEvent.type(screen.getByRole('textbox', { name: 'Lines to speak' }), 'One two.{Enter}Three four.')
      await chooseFolder()
      await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Voice' }), '4')
      await userEvent.click(screen.getByRole('button', { name: /Start/ }))
      act(() => emitRuntime({ type: 'job_finished', job_id: 30, status: 'done', error: null }))
    }

    it('shows the flagged lines with what was heard and re-takes them with the batch voice', async () => {
      commands.batchChecks.mockResolvedValueOnce(
        ok([row(1, 'One two.', 'One two.', 0), row(2, 'Three four.', 'Three.', 0.5, true)]),
      )
      await runBatch()
      const checks = await screen.findByRole('region', { name: 'Flagged lines' })
      expect(commands.batchChecks).toHaveBeenCalledWith(30)
      expect(checks).toHaveTextContent('Whisper heard 2 lines back: 1 flagged')
      const flagged = within(checks).getByRole('listitem', { name: 'Flagged line 2' })
      expect(flagged).toHaveTextContent('Heard: “Three.” · WER 50%')

      commands.retakeFlagged.mockResolvedValue(ok(job({ id: 31, kind: 'speak_batch', status: 'queued' })))
      commands.batchChecks.mockResolvedValueOnce(
        ok([row(1, 'One two.', 'One two.', 0), row(2, 'Three four.', 'Three four.', 0)]),
      )
      await userEvent.click(within(checks).getByRole('button', { name: 'Re-take 1 flagged line' }))
      expect(commands.retakeFlagged).toHaveBeenCalledWith(30, '4', null)
      expect(within(checks).getByRole('button', { name: /Re-taking/ })).toBeDisabled()
      act(() => emitRuntime({ type: 'job_finished', job_id: 31, status: 'done', error: null }))
      expect(await within(checks).findByText(/none flagged/)).toBeInTheDocument()
      expect(within(checks).queryByRole('listitem')).not.toBeInTheDocument()
      expect(within(checks).getByRole('status')).toHaveTextContent('Re-take done')
    })

    it('says a batch was not checked when no Whisper model heard it', async () => {
      commands.batchChecks.mockResolvedValueOnce(
        ok([row(1, 'One two.', null, null), row(2, 'Three four.', null, null)]),
      )
      await runBatch()
      expect(await screen.findByTestId('batch-checks')).toHaveTextContent('install a Whisper model')
    })

    it('shows a refused re-take', async () => {
      commands.batchChecks.mockResolvedValue(ok([row(2, 'Three four.', 'Three.', 0.5, true)]))
      commands.retakeFlagged.mockResolvedValue(
        fail('invalid', 'a re-take is checked again by Whisper, and no Whisper model is installed'),
      )
      await runBatch()
      const checks = await screen.findByRole('region', { name: 'Flagged lines' })
      await userEvent.click(within(checks).getByRole('button', { name: 'Re-take 1 flagged line' }))
      expect(await within(checks).findByText(/no Whisper model is installed/)).toBeInTheDocument()
    })
  })
})

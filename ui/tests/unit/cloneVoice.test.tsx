import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitVoiceSample, fail, model, ok, sample, voice } from './bindingsMock'
import { resetApp } from './helpers'
import { Toaster } from '../../src/components/Toaster'
import { handleModelEvent, loadModels } from '../../src/features/models/modelsStore'
import { VoicesPage } from '../../src/features/voices/VoicesPage'
import { loadVoices } from '../../src/features/voices/voicesStore'
import { currentDropClaim } from '../../src/lib/dropClaim'
import { subscribeRuntime } from '../../src/lib/events'
import type { ModelInfo } from '../../src/bindings'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

const base = (patch: Partial<ModelInfo> = {}) =>
  model({
    id: 'local/qwen-base',
    name: 'Qwen3 Base',
    family: 'qwen3_tts',
    task: 'speak',
    source: { kind: 'local', imported_from: '/models/qwen-base' },
    status: 'installed',
    ...patch,
  })

/** `models` are installed; the runtime says the ones in `baseIds` are Base models. */
async function setup(models: ModelInfo[], baseIds = ['local/qwen-base']) {
  commands.qwen3Models.mockImplementation(async (variant) => ok(variant === 'base' ? baseIds : []))
  commands.listVoices.mockResolvedValue(ok([]))
  commands.listModels.mockResolvedValue(ok(models))
  const sub = subscribeRuntime(handleModelEvent)
  await sub.ready
  await Promise.all([loadVoices(), loadModels()])
  render(
    <>
      <VoicesPage />
      <Toaster />
    </>,
  )
  await userEvent.click(screen.getByRole('button', { name: /Clone a voice/ }))
  const dialog = screen.getByRole('dialog', { name: 'Clone a voice' })
  await waitFor(() => expect(within(dialog).queryByText(/Finding the Qwen3-TTS/)).toBeNull())
  return dialog
}

async function fill(dialog: HTMLElement, transcript: string) {
  commands.choosePaths.mockResolvedValue(ok(['/home/me/me.wav']))
  await userEvent.click(within(dialog).getByRole('button', { name: /Choose a file/ }))
  expect(commands.choosePaths).toHaveBeenCalledWith('media_files')
  expect(await within(dialog).findByText('me.wav')).toBeInTheDocument()
  expect(commands.openVoiceSample).toHaveBeenCalledWith('/home/me/me.wav')
  await userEvent.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Me')
  if (transcript) await userEvent.type(within(dialog).getByRole('textbox', { name: 'Transcript' }), transcript)
}

describe('Clone a voice', () => {
  beforeEach(resetApp)

  it('says a Base model is needed when none is installed', async () => {
    const dialog = await setup([base({ status: 'not_installed' })], [])
    expect(await within(dialog).findByTestId('no-clone-model')).toHaveTextContent(/none is installed/)
    expect(within(dialog).getByRole('button', { name: /Models page/ })).toBeInTheDocument()
  })

  it("clones with Whisper's transcript when none is typed, and shows where it came from", async () => {
    commands.cloneVoice.mockResolvedValue(
      ok({
        voice: voice({ id: 5, name: 'Me', model_id: 'local/qwen-base', source: 'cloned', reference_text: 'Hello.' }),
        transcript: { kind: 'whisper' as const, model_id: 'whisper-tiny.en' },
      }),
    )
    const dialog = await setup([base()])
    const clone = await within(dialog).findByRole('button', { name: 'Clone' })
    expect(clone).toBeDisabled()
    await fill(dialog, '')
    await userEvent.click(clone)
    expect(commands.cloneVoice).toHaveBeenCalledWith('Me', 'local/qwen-base', '/home/me/me.wav', null)
    expect(await within(dialog).findByTestId('transcript-source')).toHaveTextContent('heard by whisper-tiny.en')
    expect(within(dialog).getByText('Hello.')).toBeInTheDocument()
    expect(await screen.findByRole('listitem', { name: 'Me' })).toBeInTheDocument()
  })

  it('sends a typed transcript and shows a refusal in the dialog', async () => {
    commands.cloneVoice.mockResolvedValue(fail('invalid', 'the recording is longer than 60 s'))
    const dialog = await setup([base()])
    await fill(dialog, 'Hello there.')
    await userEvent.click(within(dialog).getByRole('button', { name: 'Clone' }))
    expect(commands.cloneVoice).toHaveBeenCalledWith('Me', 'local/qwen-base', '/home/me/me.wav', 'Hello there.')
    expect(await within(dialog).findByText(/longer than 60 s/)).toBeInTheDocument()
    expect(screen.queryByRole('listitem', { name: 'Me' })).not.toBeInTheDocument()
  })

  it('offers only the Base models the runtime names', async () => {
    const dialog = await setup([base(), base({ id: 'local/qwen-design', name: 'Qwen3 VoiceDesign' })])
    await within(dialog).findByRole('textbox', { name: 'Name' })
    expect(commands.qwen3Models).toHaveBeenCalledWith('base')
    expect(
      within(dialog)
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Qwen3 Base'])
  })

  it('records with a script and a level meter, then Whisper fills the transcript', async () => {
    commands.transcribeVoiceSample.mockResolvedValue(
      ok({ text: 'The quick brown fox.', source: { kind: 'whisper' as const, model_id: 'local/tiny' } }),
    )
    const dialog = await setup([base()])
    await userEvent.click(await within(dialog).findByRole('button', { name: 'Record…' }))
    expect(commands.startVoiceSample).toHaveBeenCalled()
    const recording = within(dialog).getByTestId('recording')
    expect(recording).toHaveTextContent(/quick brown fox/)
    act(() => emitVoiceSample({ type: 'level', level: 0.25 }))
    expect(within(dialog).getByRole('meter', { name: 'Microphone level' })).toHaveAttribute('aria-valuenow', '0.8')
    expect(within(dialog).getByRole('button', { name: 'Clone' })).toBeDisabled()
    await userEvent.click(within(dialog).getByRole('button', { name: 'Stop' }))
    expect(commands.stopVoiceSample).toHaveBeenCalled()
    act(() =>
      emitVoiceSample({ type: 'stopped', sample: sample({ path: '/data/voice-samples/rec.wav' }), error: null }),
    )
    expect(await within(dialog).findByTestId('trim-range')).toBeInTheDocument()
    expect(commands.transcribeVoiceSample).toHaveBeenCalledWith('/data/voice-samples/rec.wav')
    const transcript = within(dialog).getByRole('textbox', { name: 'Transcript' })
    await vi.waitFor(() => expect(transcript).toHaveValue('The quick brown fox.'))
    expect(within(dialog).getByTestId('heard-by')).toHaveTextContent('heard by local/tiny')
    // Whisper's words are only a start: the user corrects them.
    await userEvent.clear(transcript)
    await userEvent.type(transcript, 'The quick brown fox jumps.')
    await userEvent.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Me')
    await userEvent.click(within(dialog).getByRole('button', { name: 'Clone' }))
    expect(commands.trimVoiceSample).not.toHaveBeenCalled()
    expect(commands.cloneVoice).toHaveBeenCalledWith(
      'Me',
      'local/qwen-base',
      '/data/voice-samples/rec.wav',
      'The quick brown fox jumps.',
    )
  })

  it('says why a recording failed', async () => {
    const dialog = await setup([base()])
    await userEvent.click(await within(dialog).findByRole('button', { name: 'Record…' }))
    act(() => emitVoiceSample({ type: 'stopped', sample: null, error: 'the microphone was unplugged' }))
    expect(await within(dialog).findByText(/microphone was unplugged/)).toBeInTheDocument()
    expect(within(dialog).getByRole('button', { name: 'Record…' })).toBeEnabled()
  })

  it('clones the trimmed part of a dropped file', async () => {
    const dialog = await setup([base()])
    await within(dialog).findByRole('button', { name: 'Record…' })
    await act(async () => currentDropClaim()!.onDrop(['/home/me/dropped.wav']))
    expect(commands.openVoiceSample).toHaveBeenCalledWith('/home/me/dropped.wav')
    expect(await within(dialog).findByText('dropped.wav')).toBeInTheDocument()
    fireEvent.change(within(dialog).getByRole('slider', { name: 'Start' }), { target: { value: '2' } })
    fireEvent.change(within(dialog).getByRole('slider', { name: 'End' }), { target: { value: '8.5' } })
    expect(within(dialog).getByTestId('trim-kept')).toHaveTextContent('Keeps 0:02.0 to 0:08.5 of 0:10.0')
    await userEvent.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Me')
    await userEvent.click(within(dialog).getByRole('button', { name: 'Clone' }))
    expect(commands.trimVoiceSample).toHaveBeenCalledWith('/home/me/dropped.wav', 2, 8.5)
    expect(commands.cloneVoice).toHaveBeenCalledWith('Me', 'local/qwen-base', '/data/voice-samples/trimmed.wav', null)
  })

  it('gives drops back to the app when it closes', async () => {
    const dialog = await setup([base()])
    expect(currentDropClaim()?.title).toBe('Drop to use as the recording')
    await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }))
    expect(currentDropClaim()).toBeNull()
  })
  it("keeps the latest sample's transcript, and what was typed while Whisper listened", async () => {
    const answers: Array<(text: string) => void> = []
    commands.transcribeVoiceSample.mockImplementation(
      () =>
        new Promise((resolve) =>
          answers.push((text) => resolve(ok({ text, source: { kind: 'whisper' as const, model_id: 'local/tiny' } }))),
        ),
    )
    const dialog = await setup([base()])
    const transcript = () => within(dialog).getByRole('textbox', { name: 'Transcript' })
    for (const path of ['/home/me/a.wav', '/home/me/b.wav']) {
      commands.choosePaths.mockResolvedValue(ok([path]))
      await userEvent.click(within(dialog).getByRole('button', { name: /Choose a file/ }))
      await waitFor(() => expect(commands.openVoiceSample).toHaveBeenCalledWith(path))
    }
    await waitFor(() => expect(answers).toHaveLength(2))
    // b's answer first, then a's (slower) one: a's is stale.
    await act(async () => answers[1]('Words of b.'))
    await act(async () => answers[0]('Words of a.'))
    expect(transcript()).toHaveValue('Words of b.')

    // Asked again, the user corrects the text while Whisper listens: the correction stays.
    await userEvent.click(within(dialog).getByRole('button', { name: /Transcribe the kept part/ }))
    await waitFor(() => expect(answers).toHaveLength(3))
    await userEvent.clear(transcript())
    await userEvent.type(transcript(), 'My own words.')
    await act(async () => answers[2]('Words heard again.'))
    expect(transcript()).toHaveValue('My own words.')
  })
})

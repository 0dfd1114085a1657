import { render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, fail, model, ok, voice } from './bindingsMock'
import { resetApp } from './helpers'
import { Toaster } from '../../src/components/Toaster'
import { handleModelEvent, loadModels } from '../../src/features/models/modelsStore'
import { VoicesPage } from '../../src/features/voices/VoicesPage'
import { loadVoices } from '../../src/features/voices/voicesStore'
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

async function setup(models: ModelInfo[]) {
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
  return screen.getByRole('dialog', { name: 'Clone a voice' })
}

async function fill(dialog: HTMLElement, transcript: string) {
  commands.choosePaths.mockResolvedValue(ok(['/home/me/me.wav']))
  await userEvent.click(within(dialog).getByRole('button', { name: /Choose a file/ }))
  expect(commands.choosePaths).toHaveBeenCalledWith('media_files')
  expect(await within(dialog).findByText('/home/me/me.wav')).toBeInTheDocument()
  await userEvent.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Me')
  if (transcript) await userEvent.type(within(dialog).getByRole('textbox', { name: 'Transcript' }), transcript)
}

describe('Clone a voice', () => {
  beforeEach(resetApp)

  it('says a Base model is needed when none is installed', async () => {
    const dialog = await setup([base({ status: 'not_installed' })])
    expect(within(dialog).getByTestId('no-clone-model')).toHaveTextContent(/none is installed/)
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
    const clone = within(dialog).getByRole('button', { name: 'Clone' })
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
})

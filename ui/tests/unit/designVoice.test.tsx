import { render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, fail, model, ok, voice } from './bindingsMock'
import { resetApp } from './helpers'
import { Toaster } from '../../src/components/Toaster'
import { handleModelEvent, loadModels } from '../../src/features/models/modelsStore'
import { VoicesPage } from '../../src/features/voices/VoicesPage'
import { loadVoices } from '../../src/features/voices/voicesStore'
import { subscribeRuntime } from '../../src/lib/events'
import type { ModelInfo, VoiceInfo } from '../../src/bindings'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

const qwen = (patch: Partial<ModelInfo> = {}) =>
  model({
    id: 'local/qwen-design',
    name: 'Qwen3 VoiceDesign',
    family: 'qwen3_tts',
    task: 'speak',
    source: { kind: 'local', imported_from: '/models/qwen-design' },
    status: 'installed',
    ...patch,
  })

/** The runtime says the ones in `designIds` are VoiceDesign models. */
async function setup(voices: VoiceInfo[], models: ModelInfo[], designIds = ['local/qwen-design']) {
  commands.qwen3Models.mockImplementation(async (variant) => ok(variant === 'voice_design' ? designIds : []))
  commands.listVoices.mockResolvedValue(ok(voices))
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
}

async function openDialog() {
  await userEvent.click(screen.getByRole('button', { name: /Design a voice/ }))
  const dialog = screen.getByRole('dialog', { name: 'Design a voice' })
  await waitFor(() => expect(within(dialog).queryByText(/Finding the Qwen3-TTS/)).toBeNull())
  return dialog
}

describe('Design a voice', () => {
  beforeEach(resetApp)

  it('says a VoiceDesign model is needed when none is installed', async () => {
    await setup([], [qwen({ status: 'not_installed' })], [])
    const dialog = await openDialog()
    expect(within(dialog).getByTestId('no-design-model')).toHaveTextContent(/none is installed/)
    expect(within(dialog).getByRole('button', { name: /Models page/ })).toBeInTheDocument()
    expect(within(dialog).getByRole('button', { name: 'Keep' })).toBeDisabled()
  })

  it('keeps a designed voice, which joins the library with a preview', async () => {
    const calm = voice({ id: 7, name: 'Calm', model_id: 'local/qwen-design', source: 'designed' })
    commands.designVoice.mockResolvedValue(ok(calm))
    await setup([], [qwen(), qwen({ id: 'local/other', name: 'Other', status: 'not_installed' })])
    const dialog = await openDialog()
    // Only installed Qwen3-TTS models are offered.
    expect(
      within(dialog)
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Qwen3 VoiceDesign'])
    const keep = within(dialog).getByRole('button', { name: 'Keep' })
    await userEvent.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Calm')
    expect(keep).toBeDisabled()
    await userEvent.type(within(dialog).getByRole('textbox', { name: 'Description' }), 'A calm, low voice')
    await userEvent.click(keep)
    expect(commands.designVoice).toHaveBeenCalledWith('Calm', 'local/qwen-design', 'A calm, low voice')
    const card = await screen.findByRole('listitem', { name: 'Calm' })
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument()
    expect(within(card).getByRole('button', { name: /Preview/ })).toBeInTheDocument()
  })

  it('shows the runtime refusal in the dialog', async () => {
    commands.designVoice.mockResolvedValue(
      fail('invalid', 'local/qwen-design is a Qwen3-TTS base model, not a VoiceDesign one'),
    )
    await setup([], [qwen()])
    const dialog = await openDialog()
    await userEvent.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Calm')
    await userEvent.type(within(dialog).getByRole('textbox', { name: 'Description' }), 'A calm voice')
    await userEvent.click(within(dialog).getByRole('button', { name: 'Keep' }))
    expect(await within(dialog).findByText(/not a VoiceDesign one/)).toBeInTheDocument()
    expect(screen.queryByRole('listitem', { name: 'Calm' })).not.toBeInTheDocument()
  })
})

import { act, fireEvent, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitRuntime, fail, model, ok, voice } from './bindingsMock'
import { resetApp } from './helpers'
import { ConfirmHost } from '../../src/components/Dialog'
import { Toaster } from '../../src/components/Toaster'
import { handleModelEvent, loadModels } from '../../src/features/models/modelsStore'
import { VoicesPage } from '../../src/features/voices/VoicesPage'
import { loadVoices } from '../../src/features/voices/voicesStore'
import { subscribeRuntime } from '../../src/lib/events'
import type { ModelInfo, VoiceInfo } from '../../src/bindings'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

const piper = (patch: Partial<ModelInfo> = {}) =>
  model({
    id: 'piper-en_US-joe-medium',
    name: 'Joe (US English)',
    family: 'piper',
    task: 'speak',
    source: { kind: 'catalog', repo: 'rhasspy/piper-voices', revision: 'main' },
    size_bytes: 63_200_000,
    languages: ['en_US'],
    license: 'CC0',
    ...patch,
  })

async function setup(voices: VoiceInfo[], models: ModelInfo[]) {
  commands.listVoices.mockResolvedValue(ok(voices))
  commands.listModels.mockResolvedValue(ok(models))
  const sub = subscribeRuntime(handleModelEvent)
  await sub.ready
  await Promise.all([loadVoices(), loadModels()])
  render(
    <>
      <VoicesPage />
      <ConfirmHost />
      <Toaster />
    </>,
  )
}

const joe = voice({ id: 1, name: 'Joe', model_id: 'piper-en_US-joe-medium' })
const slow = voice({
  id: 2,
  name: 'Joe, slowly',
  model_id: 'piper-en_US-joe-medium',
  settings: { speed: 0.8, noise_scale: 0.5, noise_w: null, pitch: -2, speaker: null },
})

describe('Voices', () => {
  beforeEach(resetApp)

  it('lists the library with language, model and whether it is installed', async () => {
    await setup(
      [joe, slow, voice({ id: 3, name: 'Amy', model_id: 'piper-en_US-amy-medium', installed: false })],
      [piper({ status: 'installed' })],
    )
    const card = screen.getByRole('listitem', { name: 'Joe, slowly' })
    expect(within(card).getByText('piper-en_US-joe-medium')).toBeInTheDocument()
    expect(card).toHaveTextContent(/(American English|English \(United States\)) · piper-en_US-joe-medium/)
    expect(within(card).getByText('Installed')).toBeInTheDocument()
    expect(within(card).getByTestId('voice-settings-summary')).toHaveTextContent(
      '0.80× speed · -2 st pitch · expressiveness 0.5',
    )
    const amy = screen.getByRole('listitem', { name: 'Amy' })
    expect(within(amy).getByText('Not installed')).toBeInTheDocument()
    expect(within(amy).getByRole('button', { name: 'Preview Amy' })).toBeDisabled()
    expect(screen.getByTestId('voices-summary')).toHaveTextContent('3 voices in the library')
  })

  it("lists an LFM2-Audio model's built-in voices as its presets, without preview or settings", async () => {
    const lfm2 = model({ id: 'local/lfm2-audio', name: 'lfm2-audio', family: 'lfm2_audio', status: 'installed' })
    const builtIn = (id: number, name: string, speaker: string) =>
      voice({
        id,
        name,
        model_id: 'local/lfm2-audio',
        language: null,
        settings: { speed: 1, noise_scale: null, noise_w: null, pitch: 0, speaker: null, speaker_name: speaker },
      })
    await setup(
      [builtIn(5, 'US male', 'us-male'), builtIn(6, 'UK female', 'uk-female'), joe],
      [lfm2, piper({ status: 'installed' })],
    )
    const card = screen.getByRole('listitem', { name: 'UK female' })
    expect(card).toHaveTextContent('LFM2-Audio · Unknown language · local/lfm2-audio')
    // Every built-in voice is a preset, not only the model's first.
    expect(within(card).getByText('Preset')).toBeInTheDocument()
    expect(within(card).getByTestId('voice-settings-summary')).toHaveTextContent('Built-in voice uk-female')
    expect(within(card).queryByRole('button', { name: 'Preview UK female' })).not.toBeInTheDocument()
    expect(within(card).queryByRole('button', { name: 'Settings of UK female' })).not.toBeInTheDocument()
    expect(within(card).getByRole('button', { name: 'Rename UK female' })).toBeInTheDocument()
    const piperCard = screen.getByRole('listitem', { name: 'Joe' })
    expect(piperCard).toHaveTextContent('Piper · ')
    expect(within(piperCard).getByRole('button', { name: 'Preview Joe' })).toBeInTheDocument()
  })

  it('tells a new user where voices come from', async () => {
    await setup([], [piper()])
    expect(screen.getByRole('heading', { name: 'No voices yet' })).toBeInTheDocument()
    expect(screen.getByRole('button', { name: /Add voice/ })).toBeDisabled()
    expect(screen.getByRole('listitem', { name: 'Joe (US English)' })).toHaveTextContent('63.2 MB')
  })

  it('renames a voice', async () => {
    commands.renameVoice.mockResolvedValue(ok({ ...slow, name: 'Narrator' }))
    await setup([joe, slow], [piper({ status: 'installed' })])
    await userEvent.click(screen.getByRole('button', { name: 'Rename Joe, slowly' }))
    const input = screen.getByRole('textbox', { name: 'Voice name' })
    await userEvent.clear(input)
    await userEvent.type(input, 'Narrator{Enter}')
    expect(commands.renameVoice).toHaveBeenCalledWith(2, 'Narrator')
    expect(await screen.findByRole('listitem', { name: 'Narrator' })).toBeInTheDocument()
    expect(screen.queryByRole('listitem', { name: 'Joe, slowly' })).not.toBeInTheDocument()
  })

  it('shows why a rename was refused', async () => {
    commands.renameVoice.mockResolvedValue(fail('invalid', 'give the voice a name') as never)
    await setup([joe], [piper({ status: 'installed' })])
    await userEvent.click(screen.getByRole('button', { name: 'Rename Joe' }))
    await userEvent.clear(screen.getByRole('textbox', { name: 'Voice name' }))
    await userEvent.type(screen.getByRole('textbox', { name: 'Voice name' }), ' x {Enter}')
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'Could not rename itThat did not work. Give the voice a name',
    )
  })

  it('changes how a voice speaks', async () => {
    commands.updateVoiceSettings.mockImplementation(async (_id, settings) => ok({ ...slow, settings }))
    await setup([joe, slow], [piper({ status: 'installed' })])
    await userEvent.click(screen.getByRole('button', { name: 'Settings of Joe, slowly' }))
    const form = screen.getByRole('form', { name: 'Settings of Joe, slowly' })
    expect(within(form).getByRole('slider', { name: 'Speed' })).toHaveValue('0.8')
    expect(within(form).getByRole('textbox', { name: 'Expressiveness' })).toHaveValue('0.5')
    fireEvent.change(within(form).getByRole('slider', { name: 'Speed' }), { target: { value: '1.5' } })
    fireEvent.change(within(form).getByRole('slider', { name: 'Pitch' }), { target: { value: '3' } })
    // Out of range: said where it happened, nothing sent.
    await userEvent.type(within(form).getByRole('textbox', { name: 'Rhythm variation' }), '7')
    await userEvent.click(within(form).getByRole('button', { name: 'Save settings' }))
    expect(within(form).getByRole('alert')).toHaveTextContent('Rhythm variation must be between 0 and 2.')
    expect(commands.updateVoiceSettings).not.toHaveBeenCalled()

    await userEvent.clear(within(form).getByRole('textbox', { name: 'Rhythm variation' }))
    await userEvent.type(within(form).getByRole('textbox', { name: 'Rhythm variation' }), '0.9')
    await userEvent.clear(within(form).getByRole('textbox', { name: 'Expressiveness' }))
    await userEvent.type(within(form).getByRole('textbox', { name: 'Speaker' }), '2')
    await userEvent.click(within(form).getByRole('button', { name: 'Save settings' }))
    expect(commands.updateVoiceSettings).toHaveBeenCalledWith(2, {
      speed: 1.5,
      pitch: 3,
      noise_scale: null,
      noise_w: 0.9,
      speaker: 2,
    })
    const card = screen.getByRole('listitem', { name: 'Joe, slowly' })
    expect(within(card).getByTestId('voice-settings-summary')).toHaveTextContent(
      '1.50× speed · +3 st pitch · rhythm variation 0.9 · speaker 2',
    )
    expect(screen.queryByRole('form')).not.toBeInTheDocument()
  })

  it('deletes a voice after confirming, and says why the last one stays', async () => {
    await setup([joe, slow], [piper({ status: 'installed' })])
    await userEvent.click(screen.getByRole('button', { name: 'Delete Joe, slowly' }))
    const dialog = screen.getByRole('dialog', { name: 'Delete Joe, slowly?' })
    await userEvent.click(within(dialog).getByRole('button', { name: 'Delete' }))
    expect(commands.deleteVoice).toHaveBeenCalledWith(2)
    await screen.findByText('Deleted Joe, slowly')
    expect(screen.queryByRole('listitem', { name: 'Joe, slowly' })).not.toBeInTheDocument()

    commands.deleteVoice.mockResolvedValue(
      fail(
        'invalid',
        '"Joe" is the only voice of model piper-en_US-joe-medium; remove the model to remove it',
      ) as never,
    )
    await userEvent.click(screen.getByRole('button', { name: 'Delete Joe' }))
    await userEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Delete' }))
    expect(await screen.findByText('Could not delete Joe: That did not work.')).toBeInTheDocument()
    expect(screen.getByRole('listitem', { name: 'Joe' })).toBeInTheDocument()
  })

  it('downloads a preset voice with progress', async () => {
    commands.downloadModel.mockReturnValue(new Promise(() => {}) as never)
    await setup([], [piper(), piper({ id: 'piper-de_DE-thorsten-medium', name: 'Thorsten', languages: ['de_DE'] })])
    const row = screen.getByRole('listitem', { name: 'Thorsten' })
    expect(row).toHaveTextContent('German (Germany)')
    await userEvent.click(within(row).getByRole('button', { name: 'Download Thorsten' }))
    expect(commands.downloadModel).toHaveBeenCalledWith('piper-de_DE-thorsten-medium')
    act(() =>
      emitRuntime({
        type: 'download',
        model_id: 'piper-de_DE-thorsten-medium',
        file: 'de_DE-thorsten-medium.onnx',
        downloaded: 31_600_000,
        total: 63_200_000,
        bytes_per_second: 4_000_000,
        eta_seconds: 8,
        done: false,
      }),
    )
    expect(within(row).getByRole('progressbar', { name: 'Downloading Thorsten' })).toHaveAttribute(
      'aria-valuenow',
      '50',
    )
    expect(within(row).getByTestId('voice-download-progress')).toHaveTextContent('31.6 MB of 63.2 MB · 8 s left')
    await userEvent.click(within(row).getByRole('button', { name: 'Cancel download of Thorsten' }))
    expect(commands.cancelDownload).toHaveBeenCalledWith('piper-de_DE-thorsten-medium')
  })

  it('adds a voice on an installed model', async () => {
    const added = voice({ id: 9, name: 'Narrator', model_id: 'piper-en_US-joe-medium' })
    commands.addVoice.mockResolvedValue(ok(added))
    await setup([joe], [piper({ status: 'installed' }), piper({ id: 'piper-en_US-amy-medium', name: 'Amy' })])
    await userEvent.click(screen.getByRole('button', { name: /Add voice/ }))
    const dialog = screen.getByRole('dialog', { name: 'Add a voice' })
    // Only installed voice models can get a voice.
    expect(
      within(dialog)
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Joe (US English)'])
    const add = within(dialog).getByRole('button', { name: 'Add voice' })
    expect(add).toBeDisabled()
    await userEvent.type(within(dialog).getByRole('textbox'), 'Narrator')
    // Speed and pitch are chosen while adding, not only afterwards in the settings.
    fireEvent.change(within(dialog).getByRole('slider', { name: 'Speed' }), { target: { value: '0.8' } })
    fireEvent.change(within(dialog).getByRole('slider', { name: 'Pitch' }), { target: { value: '-2' } })
    await userEvent.click(add)
    expect(commands.addVoice).toHaveBeenCalledWith('piper-en_US-joe-medium', 'Narrator', {
      speed: 0.8,
      noise_scale: null,
      noise_w: null,
      pitch: -2,
      speaker: null,
    })
    const card = await screen.findByRole('listitem', { name: 'Narrator' })
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument()
    // The runtime records it as `preset` like the model's own voice: the badge tells them apart.
    expect(within(card).getByText('Yours')).toBeInTheDocument()
    expect(within(screen.getByRole('listitem', { name: joe.name })).getByText('Preset')).toBeInTheDocument()
  })

  it('says what the technical settings do, with their technical names as hints', async () => {
    await setup([joe], [piper({ status: 'installed' })])
    await userEvent.click(screen.getByRole('button', { name: `Settings of ${joe.name}` }))
    const form = screen.getByRole('form', { name: `Settings of ${joe.name}` })
    expect(within(form).queryByText(/^Noise/)).not.toBeInTheDocument()
    expect(within(form).getByRole('textbox', { name: 'Expressiveness' })).toHaveAccessibleDescription(
      '0 (flat) to 2 (lively) · noise scale',
    )
    expect(within(form).getByRole('textbox', { name: 'Rhythm variation' })).toHaveAccessibleDescription(
      '0 (even) to 2 (varied) · noise w',
    )
  })
})

import { render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, job, model, ok, queued, settings } from './bindingsMock'
import { resetApp } from './helpers'
import type { ModelInfo } from '../../src/bindings'
import { loadModels } from '../../src/features/models/modelsStore'
import { loadSettings } from '../../src/features/settings/settingsStore'
import { choicesStore, currentChoices, setChoices } from '../../src/features/transcribe/options'
import { TranscribePage } from '../../src/features/transcribe/TranscribePage'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

const english = model({ id: 'whisper-base.en', name: 'Whisper base (English)', status: 'installed', languages: ['en'] })
const multi = model({ id: 'whisper-base', name: 'Whisper base', status: 'installed', languages: ['en', 'de', 'fr'] })

async function setup(defaultModel: string | null) {
  commands.listModels.mockResolvedValue(
    ok([english, multi, model({ id: 'whisper-small.en', name: 'Whisper small (English)' })]),
  )
  commands.getSettings.mockResolvedValue(ok(settings({ default_transcribe_model: defaultModel })))
  await Promise.all([loadModels(), loadSettings()])
  render(<TranscribePage />)
}

describe('transcription options', () => {
  beforeEach(resetApp)

  it('offers installed models only, starting from the default, and locks English-only models to English', async () => {
    await setup('whisper-base.en')
    const modelSelect = screen.getByRole('combobox', { name: 'Model' })
    expect(
      within(modelSelect)
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Whisper base (English)', 'Whisper base'])
    expect(modelSelect).toHaveValue('whisper-base.en')
    const language = screen.getByRole('combobox', { name: 'Language' })
    expect(language).toBeDisabled()
    expect(language).toHaveValue('en')
    expect(screen.getByRole('radio', { name: 'Translate' })).toBeDisabled()
  })

  it('offers a streaming model without languages or translation', async () => {
    const voxtral = model({
      id: 'local/voxtral',
      name: 'voxtral',
      family: 'voxtral_realtime',
      status: 'installed',
      languages: [],
    })
    commands.listModels.mockResolvedValue(ok([multi, voxtral]))
    commands.getSettings.mockResolvedValue(ok(settings({ default_transcribe_model: 'whisper-base' })))
    await Promise.all([loadModels(), loadSettings()])
    setChoices({ task: 'translate', language: 'de' })
    render(<TranscribePage />)
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Model' }), 'local/voxtral')
    expect(
      within(screen.getByRole('combobox', { name: 'Language' }))
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Detect automatically'])
    expect(screen.getByRole('radio', { name: 'Translate' })).toBeDisabled()
    expect(screen.getByText(/voxtral writes what it hears/)).toBeInTheDocument()
    expect(currentChoices().options).toEqual({
      modelId: 'local/voxtral',
      language: null,
      task: 'transcribe',
      wordTimestamps: false,
      delayMs: null,
    })
    // Its delay can be chosen, is sent with the files, and is remembered; a Whisper model
    // offers none and sends none.
    const delay = screen.getByRole('combobox', { name: 'Delay' })
    expect(within(delay).getAllByRole('option')[0]).toHaveTextContent('Model default')
    await userEvent.selectOptions(delay, '960')
    commands.choosePaths.mockResolvedValueOnce(ok(['/home/ada/Audio/talk.wav']))
    commands.transcribeFiles.mockResolvedValue(ok(queued([job({ id: 12, input: '/home/ada/Audio/talk.wav' })])))
    await userEvent.click(screen.getAllByRole('button', { name: /Open files/ })[0])
    expect(commands.transcribeFiles).toHaveBeenCalledWith(
      ['/home/ada/Audio/talk.wav'],
      expect.objectContaining({ model_id: 'local/voxtral', delay_ms: 960 }),
    )
    expect(JSON.parse(localStorage.getItem('izwi.transcribe.choices') ?? '{}').delayMs).toBe(960)
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Model' }), 'whisper-base')
    expect(screen.queryByRole('combobox', { name: 'Delay' })).not.toBeInTheDocument()
    expect(currentChoices().options?.delayMs).toBeNull()
  })

  it('offers Auto and the model’s languages, and translation, for a multilingual model', async () => {
    await setup('whisper-base.en')
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Model' }), 'whisper-base')
    const language = screen.getByRole('combobox', { name: 'Language' })
    expect(language).toBeEnabled()
    expect(
      within(language)
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Detect automatically', 'English', 'French', 'German'])
    await userEvent.selectOptions(language, 'de')
    await userEvent.click(screen.getByRole('radio', { name: 'Translate' }))

    commands.choosePaths.mockResolvedValueOnce(ok(['/home/ada/Audio/rede.mp3']))
    commands.transcribeFiles.mockResolvedValue(ok(queued([job({ id: 11, input: '/home/ada/Audio/rede.mp3' })])))
    await userEvent.click(screen.getAllByRole('button', { name: /Open files/ })[0])
    expect(commands.choosePaths).toHaveBeenCalledWith('media_files')
    expect(commands.transcribeFiles).toHaveBeenCalledWith(['/home/ada/Audio/rede.mp3'], {
      model_id: 'whisper-base',
      language: 'de',
      task: 'translate',
      timestamps: true,
      beam_size: 1,
      initial_prompt: null,
      word_timestamps: false,
      delay_ms: null,
    })
    expect(await screen.findByRole('listitem', { name: 'rede.mp3' })).toBeInTheDocument()
  })

  it('says why Translate is off, and forgets a remembered Translate the model cannot do', async () => {
    // Remembered from an earlier launch with a multilingual model.
    setChoices({ modelId: 'whisper-base.en', task: 'translate' })
    await setup('whisper-base')
    const translate = screen.getByRole('radio', { name: 'Translate' })
    expect(translate).toBeDisabled()
    expect(translate).toHaveAccessibleDescription(
      'Whisper base (English) knows only English; to translate, pick a multilingual model.',
    )
    expect(JSON.parse(localStorage.getItem('izwi.transcribe.choices')!).task).toBe('transcribe')
    // Choosing a multilingual model afterwards does not bring Translate back by itself.
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Model' }), 'whisper-base')
    expect(screen.getByRole('radio', { name: 'Transcribe' })).toHaveAttribute('aria-checked', 'true')
    // Files opened from outside the app (no component involved) use the same rule.
    setChoices({ modelId: 'whisper-base.en', task: 'translate' })
    expect(currentChoices().options?.task).toBe('transcribe')
    expect(choicesStore.get().task).toBe('transcribe')
  })

  it('offers an import the languages of the catalog model it is', async () => {
    const tiny = model({
      id: 'local/tiny',
      name: 'tiny',
      status: 'installed',
      languages: [],
      source: { kind: 'local', imported_from: '/home/ada/models/whisper-tiny' },
      catalog_id: 'whisper-tiny',
    } as Partial<ModelInfo>)
    commands.listModels.mockResolvedValue(
      ok([model({ id: 'whisper-tiny', name: 'Whisper tiny', languages: ['en', 'de', 'fr'] }), tiny]),
    )
    commands.getSettings.mockResolvedValue(ok(settings({ default_transcribe_model: 'local/tiny' })))
    await Promise.all([loadModels(), loadSettings()])
    render(<TranscribePage />)
    expect(
      within(screen.getByRole('combobox', { name: 'Language' }))
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Detect automatically', 'English', 'French', 'German'])
    expect(screen.getByRole('radio', { name: 'Translate' })).toBeEnabled()
  })

  it('sends no language when detecting it', async () => {
    await setup('whisper-base')
    expect(screen.getByRole('combobox', { name: 'Language' })).toHaveValue('auto')
    commands.choosePaths.mockResolvedValueOnce(ok(['/home/ada/Recordings']))
    await userEvent.click(screen.getAllByRole('button', { name: /Open folder/ })[0])
    expect(commands.choosePaths).toHaveBeenCalledWith('media_folder')
    expect(commands.transcribeFiles).toHaveBeenCalledWith(
      ['/home/ada/Recordings'],
      expect.objectContaining({ language: null, task: 'transcribe' }),
    )
  })

  it('asks for word timestamps when switched on, and remembers it', async () => {
    await setup('whisper-base')
    const words = screen.getByRole('checkbox', { name: 'Word timestamps' })
    expect(words).not.toBeChecked()
    await userEvent.click(words)
    expect(words).toBeChecked()
    expect(JSON.parse(localStorage.getItem('izwi.transcribe.choices')!).wordTimestamps).toBe(true)
    commands.choosePaths.mockResolvedValueOnce(ok(['/home/ada/Audio/talk.wav']))
    await userEvent.click(screen.getAllByRole('button', { name: /Open files/ })[0])
    expect(commands.transcribeFiles).toHaveBeenCalledWith(
      ['/home/ada/Audio/talk.wav'],
      expect.objectContaining({ word_timestamps: true }),
    )
  })
})

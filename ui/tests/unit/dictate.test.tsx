import { act, render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitDictate, fail, model, ok, settings } from './bindingsMock'
import { resetApp } from './helpers'
import { DictatePage } from '../../src/features/dictate/DictatePage'
import { loadModels } from '../../src/features/models/modelsStore'
import { loadSettings } from '../../src/features/settings/settingsStore'
import { SettingsPage } from '../../src/features/settings/SettingsPage'
import { navStore } from '../../src/lib/nav'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

const tiny = model({ id: 'local/tiny', name: 'tiny.en', status: 'installed', languages: ['en'] })
const base = model({ id: 'whisper-base', name: 'Whisper base', status: 'installed', languages: ['en', 'de'] })

async function setup() {
  commands.listModels.mockResolvedValue(ok([tiny, base]))
  await loadModels()
  await loadSettings()
  return render(<DictatePage />)
}

const text = () => screen.getByRole('region', { name: 'Dictated text' })
const say = (e: Parameters<typeof emitDictate>[0]) => act(() => emitDictate(e))

describe('Dictate', () => {
  beforeEach(resetApp)

  it('shows final text, then the partial text after it styled apart, and saves the dictation', async () => {
    await setup()
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Model' }), 'whisper-base')
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Language' }), 'de')
    await userEvent.click(screen.getByRole('button', { name: 'Start dictating' }))
    expect(commands.startDictation).toHaveBeenCalledWith('whisper-base', 'de', null)
    // Only a streaming model has a delay to choose.
    expect(screen.queryByRole('combobox', { name: 'Delay' })).not.toBeInTheDocument()
    // The model cannot change while it listens.
    expect(screen.getByRole('combobox', { name: 'Model' })).toBeDisabled()

    await say({ type: 'listening', input: 'USB Headset Microphone', job_id: 12 })
    expect(screen.getByRole('status')).toHaveTextContent('Listening on USB Headset Microphone')
    await say({ type: 'partial', text: 'and so am I' })
    expect(screen.getByText('and so am I')).toHaveClass('dictate-partial')
    // A later pass revises the partial text, then confirms part of it.
    await say({ type: 'partial', text: 'and so my fellow' })
    await say({ type: 'final', text: 'And so my' })
    await say({ type: 'partial', text: 'fellow Americans' })
    expect(screen.queryByText('and so am I')).not.toBeInTheDocument()
    expect(screen.getByText('And so my')).toHaveClass('dictate-final')
    expect(screen.getByText('fellow Americans')).toHaveClass('dictate-partial')
    expect(text()).toHaveTextContent('And so my fellow Americans')

    await userEvent.click(screen.getByRole('button', { name: 'Stop' }))
    expect(commands.stopDictation).toHaveBeenCalled()
    expect(screen.getByRole('status')).toHaveTextContent('Finishing the last words')
    await say({ type: 'final', text: 'fellow Americans.' })
    await say({ type: 'stopped', job_id: 12, text: 'And so my fellow Americans.', error: null })
    expect(text()).toHaveTextContent(/^And so my fellow Americans\.$/)
    expect(screen.getByRole('button', { name: 'Start dictating' })).toBeEnabled()

    // Copy takes the final text; the saved dictation opens in History.
    const writeText = vi.fn(async () => {})
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true })
    await userEvent.click(screen.getByRole('button', { name: 'Copy' }))
    expect(writeText).toHaveBeenCalledWith('And so my fellow Americans.')
    await userEvent.click(screen.getByRole('button', { name: 'Open in History' }))
    expect(navStore.get()).toMatchObject({ view: 'history', history: { jobId: 12 } })
  })

  it('says why a dictation could not start or stopped, and follows one the shortcut started', async () => {
    commands.startDictation.mockResolvedValueOnce(fail('audio', 'no microphone is connected'))
    await setup()
    expect(screen.getByRole('status')).toHaveTextContent('press CommandOrControl+Shift+Space in any app')
    await userEvent.click(screen.getByRole('button', { name: 'Start dictating' }))
    const alert = await screen.findByRole('alert')
    expect(alert).toHaveTextContent('Could not start dictating')
    expect(alert).toHaveTextContent(/no microphone is connected/i)
    expect(screen.getByRole('button', { name: 'Start dictating' })).toBeEnabled()

    // Started by the global shortcut, from another app: the screen shows it all the same.
    await say({ type: 'listening', input: 'Built-in Microphone', job_id: 3 })
    expect(screen.queryByRole('alert')).not.toBeInTheDocument()
    await say({ type: 'final', text: 'Hello.' })
    expect(screen.getByRole('button', { name: 'Stop' })).toBeEnabled()
    await say({ type: 'stopped', job_id: null, text: '', error: 'the recording could not be written: disk full' })
    expect(screen.getByRole('alert')).toHaveTextContent(/Dictation stopped.*disk full/)
    // What was heard stays on screen.
    expect(text()).toHaveTextContent('Hello.')
    expect(screen.queryByRole('button', { name: 'Open in History' })).not.toBeInTheDocument()
  })

  it('dictates with a streaming model at the delay chosen, which cannot change while it listens', async () => {
    const voxtral = model({ id: 'local/voxtral', name: 'voxtral', family: 'voxtral_realtime', status: 'installed' })
    commands.listModels.mockResolvedValue(ok([tiny, voxtral]))
    await loadModels()
    await loadSettings()
    render(<DictatePage />)
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Model' }), 'local/voxtral')
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Delay' }), '240')
    await userEvent.click(screen.getByRole('button', { name: 'Start dictating' }))
    expect(commands.startDictation).toHaveBeenCalledWith('local/voxtral', null, 240)
    expect(screen.getByRole('combobox', { name: 'Delay' })).toBeDisabled()
  })

  it('picks up a dictation already under way when the page opens', async () => {
    commands.isDictating.mockResolvedValue(ok(true))
    await setup()
    expect(await screen.findByRole('button', { name: 'Stop' })).toBeEnabled()
  })
})

describe('Settings: the dictation shortcut', () => {
  beforeEach(resetApp)

  it('saves a new shortcut and names one the backend refuses', async () => {
    commands.getSettings.mockResolvedValue(ok(settings({ dictation_shortcut: 'Alt+F9' })))
    await loadSettings()
    render(<SettingsPage onShowShortcuts={() => {}} />)
    const field = screen.getByRole('textbox', { name: 'Dictation shortcut' })
    expect(field).toHaveValue('Alt+F9')
    await userEvent.clear(field)
    await userEvent.type(field, 'Ctrl+Shift+D{Enter}')
    expect(commands.setDictationShortcut).toHaveBeenCalledWith('Ctrl+Shift+D')

    commands.setDictationShortcut.mockResolvedValueOnce(fail('invalid', '"Ctrl+Nope" is not a shortcut'))
    await userEvent.clear(field)
    await userEvent.type(field, 'Ctrl+Nope{Enter}')
    await waitFor(() => expect(screen.getByRole('alert')).toHaveTextContent('is not a shortcut'))
  })
})

import { act, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitRuntime, job, model, ok, queued, settings, transcript, voice } from './bindingsMock'
import { resetApp } from './helpers'
import { App } from '../../src/App'
import { navStore } from '../../src/lib/nav'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

describe('app', () => {
  beforeEach(resetApp)

  it('queues the files Izwi was opened with and opens the transcript when done', async () => {
    commands.listModels.mockResolvedValue(
      ok([model({ id: 'whisper-base.en', name: 'Whisper base (English)', status: 'installed', languages: ['en'] })]),
    )
    commands.getSettings.mockResolvedValue(ok(settings({ default_transcribe_model: 'whisper-base.en' })))
    commands.takeOpenedFiles.mockResolvedValue(ok(['/home/ada/Audio/jfk.wav']))
    commands.transcribeFiles.mockResolvedValue(ok(queued([job({ id: 7, model_id: 'whisper-base.en' })])))
    render(<App />)
    await waitFor(() => expect(commands.transcribeFiles).toHaveBeenCalled())
    expect(commands.transcribeFiles).toHaveBeenCalledWith(['/home/ada/Audio/jfk.wav'], {
      model_id: 'whisper-base.en',
      language: 'en',
      task: 'transcribe',
      timestamps: true,
      beam_size: 1,
      initial_prompt: null,
      word_timestamps: false,
      delay_ms: null,
    })
    // Listening started before the files were queued, so no event is missed.
    expect(commands.takeOpenedFiles.mock.invocationCallOrder[0]).toBeGreaterThan(0)
    await screen.findByRole('listitem', { name: 'jfk.wav' })

    await userEvent.keyboard('{Control>}2{/Control}')
    expect(navStore.get().view).toBe('models')

    // The user went elsewhere: the finished transcript is offered, not forced on them.
    commands.getTranscript.mockResolvedValue(ok(transcript(7)))
    act(() => emitRuntime({ type: 'job_started', job_id: 7 }))
    act(() => emitRuntime({ type: 'job_finished', job_id: 7, status: 'done', error: null }))
    expect(navStore.get().view).toBe('models')
    await userEvent.click(await screen.findByRole('button', { name: 'Open' }))
    expect(navStore.get().view).toBe('transcribe')
    expect(navStore.get().transcribe?.jobId).toBe(7)
    expect(await screen.findByText('ask what you can do for your country.')).toBeInTheDocument()
  })

  it('opens the transcript of the file it was opened with where the user still waits for it', async () => {
    commands.listModels.mockResolvedValue(
      ok([model({ id: 'whisper-base.en', name: 'Whisper base (English)', status: 'installed', languages: ['en'] })]),
    )
    commands.getSettings.mockResolvedValue(ok(settings({ default_transcribe_model: 'whisper-base.en' })))
    commands.takeOpenedFiles.mockResolvedValue(ok(['/home/ada/Audio/jfk.wav']))
    commands.transcribeFiles.mockResolvedValue(ok(queued([job({ id: 7, model_id: 'whisper-base.en' })])))
    commands.getTranscript.mockResolvedValue(ok(transcript(7)))
    render(<App />)
    await screen.findByRole('listitem', { name: 'jfk.wav' })
    act(() => emitRuntime({ type: 'job_finished', job_id: 7, status: 'done', error: null }))
    expect(navStore.get().transcribe?.jobId).toBe(7)
    expect(await screen.findByText('ask what you can do for your country.')).toBeInTheDocument()
  })

  it('offers Whisper base to a new user with no model', async () => {
    commands.listModels.mockResolvedValue(ok([model()]))
    commands.downloadModel.mockReturnValue(new Promise(() => {}) as never)
    render(<App />)
    const heading = await screen.findByRole('heading', { name: 'Download Whisper base (290 MB) to start' })
    const empty = heading.closest('.empty') as HTMLElement
    await userEvent.click(within(empty).getByRole('button', { name: /Download Whisper base/ }))
    expect(commands.downloadModel).toHaveBeenCalledWith('whisper-base')
    expect(await within(empty).findByRole('progressbar')).toBeInTheDocument()
  })

  it('switches pages with the keyboard and shows the shortcut sheet', async () => {
    render(<App />)
    await userEvent.keyboard('{Control>}3{/Control}')
    expect(screen.getByRole('heading', { name: 'History' })).toBeInTheDocument()
    await userEvent.keyboard('{Control>}8{/Control}')
    expect(screen.getByRole('heading', { name: 'Dictate' })).toBeInTheDocument()
    await userEvent.keyboard('{Control>}9{/Control}')
    expect(screen.getByRole('heading', { name: 'Settings' })).toBeInTheDocument()
    await userEvent.keyboard('?')
    expect(screen.getByRole('dialog', { name: 'Keyboard shortcuts' })).toBeInTheDocument()
    await userEvent.keyboard('{Escape}')
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument()
    await userEvent.keyboard('{Control>}1{/Control}')
    expect(screen.getByRole('heading', { name: 'Transcribe' })).toBeInTheDocument()
  })

  it('opens the sidebar’s pages top to bottom with Ctrl+1…9', async () => {
    render(<App />)
    const nav = screen.getByRole('navigation', { name: 'Main' })
    const items = within(nav)
      .getAllByRole('button')
      .filter((b) => b.classList.contains('nav-item'))
    expect(items).toHaveLength(9)
    for (const [i, item] of items.entries()) {
      await userEvent.keyboard(`{Control>}${i + 1}{/Control}`)
      expect(item).toHaveAttribute('aria-current', 'page')
    }
  })

  it('applies the theme from the settings and changes it', async () => {
    commands.getSettings.mockResolvedValue(ok(settings({ theme: 'dark' })))
    render(<App />)
    await waitFor(() => expect(document.documentElement.dataset.theme).toBe('dark'))
    await userEvent.keyboard('{Control>}9{/Control}')
    await userEvent.click(await screen.findByRole('radio', { name: 'System' }))
    expect(commands.setTheme).toHaveBeenCalledWith('system')
    expect(document.documentElement.dataset.theme).toBeUndefined()
  })

  it('opens Speak, Batch export and Voices with Ctrl+4, 5 and 6, from the sidebar too', async () => {
    render(<App />)
    await userEvent.keyboard('{Control>}4{/Control}')
    expect(screen.getByRole('heading', { name: 'Speak' })).toBeInTheDocument()
    await userEvent.keyboard('{Control>}5{/Control}')
    expect(screen.getByRole('heading', { name: 'Batch export' })).toBeInTheDocument()
    await userEvent.keyboard('{Control>}6{/Control}')
    expect(screen.getByRole('heading', { name: 'Voices' })).toBeInTheDocument()
    const nav = screen.getByRole('navigation', { name: 'Main' })
    await userEvent.click(within(nav).getByRole('button', { name: /Speak/ }))
    expect(navStore.get().view).toBe('speak')
    await userEvent.keyboard('?')
    const sheet = screen.getByRole('dialog', { name: 'Keyboard shortcuts' })
    expect(sheet).toHaveTextContent('Generate speech / start the batch')
  })

  it('lists the voice of a voice model once its download installs it, and generates with Ctrl+Enter', async () => {
    const joe = model({ id: 'piper-en_US-joe-medium', name: 'Joe', family: 'piper', task: 'speak' })
    commands.listModels.mockResolvedValue(ok([joe]))
    commands.downloadModel.mockResolvedValue(ok({ ...joe, status: 'installed' }))
    commands.speak.mockResolvedValue(ok(job({ id: 40, kind: 'speak' })))
    render(<App />)
    await userEvent.keyboard('{Control>}4{/Control}')
    expect(await screen.findByRole('heading', { name: 'Download a voice to start' })).toBeInTheDocument()
    await userEvent.keyboard('{Control>}6{/Control}')
    commands.listVoices.mockResolvedValue(ok([voice({ name: 'Joe' })]))
    await userEvent.click(await screen.findByRole('button', { name: 'Download Joe' }))
    expect(await screen.findByRole('listitem', { name: 'Joe' })).toHaveTextContent('Installed')
    await userEvent.keyboard('{Control>}4{/Control}')
    await userEvent.type(screen.getByRole('textbox', { name: 'Text to speak' }), 'Hello.')
    await userEvent.keyboard('{Control>}{Enter}{/Control}')
    expect(commands.speak).toHaveBeenCalledWith('1', 'Hello.', null)
    expect(screen.getByRole('textbox', { name: 'Text to speak' })).toHaveValue('Hello.')
  })
})

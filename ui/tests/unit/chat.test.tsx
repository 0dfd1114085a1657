import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { chat, chatSettings, commands, emitChat, fail, message, model, ok, voice } from './bindingsMock'
import { resetApp } from './helpers'
import { ConfirmHost } from '../../src/components/Dialog'
import { Toaster } from '../../src/components/Toaster'
import { ChatPage } from '../../src/features/chat/ChatPage'
import { listenChatEvents, resetChat } from '../../src/features/chat/chatStore'
import { loadModels } from '../../src/features/models/modelsStore'
import { loadVoices } from '../../src/features/voices/voicesStore'
import { navStore } from '../../src/lib/nav'
import type { ChatSent, ModelInfo, VoiceInfo } from '../../src/bindings'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

function deferred<T>() {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

const smol = model({
  id: 'local/smollm2',
  name: 'SmolLM2 135M Instruct',
  family: 'llama',
  task: 'chat',
  status: 'installed',
  source: { kind: 'local', imported_from: '/home/ada/Models/smollm2.gguf' },
  languages: [],
})
const llama = model({ ...smol, id: 'local/llama-3.2-1b', name: 'Llama 3.2 1B Instruct' })
const whisper = model({ status: 'installed' })
const joe = voice()

const museum = chat({ id: 2, title: 'Plan a museum visit', updated_at: Date.UTC(2025, 10, 21, 10, 0) })
const kettle = chat({ id: 1, title: 'Descale the kettle', updated_at: Date.UTC(2025, 10, 20, 9, 0) })

/** The settings as the page shows them with smol, whisper and Joe installed and nothing saved. */
const shown = chatSettings({ llm: 'local/smollm2', voice: 'Joe' })

async function setup({
  models = [smol, whisper],
  voices = [joe],
}: { models?: ModelInfo[]; voices?: VoiceInfo[] } = {}) {
  commands.listModels.mockResolvedValue(ok(models))
  commands.listVoices.mockResolvedValue(ok(voices))
  await loadModels()
  await loadVoices()
  await listenChatEvents()
  return render(
    <>
      <ChatPage />
      <ConfirmHost />
      <Toaster />
    </>,
  )
}

const messageBox = () => screen.getByRole('textbox', { name: 'Message' })
const log = () => screen.getByRole('log', { name: 'Messages' })
const stateLine = () => screen.getByTestId('chat-state')
/** Lets the calls the page queued (one after the other) all be made. */
const settle = () => act(() => new Promise((r) => setTimeout(r, 0)))
const listening = () =>
  act(() => emitChat({ type: 'listening', chat_id: null, input: 'USB Headset', output: 'Built-in Speakers' }))

describe('Chat', () => {
  beforeEach(resetApp)

  it('lists the conversations, searches them as you type and opens one', async () => {
    commands.listChats.mockImplementation(async (q) =>
      ok([museum, kettle].filter((c) => c.title.toLowerCase().includes(q.toLowerCase()))),
    )
    commands.getChatMessages.mockResolvedValue(
      ok([
        message({ id: 1, chat_id: 2, role: 'system', content: 'You are a helpful assistant.' }),
        message({ id: 2, chat_id: 2, content: 'What should I see first?' }),
        message({ id: 3, chat_id: 2, role: 'assistant', content: 'Start with the sculptures.' }),
      ]),
    )
    await setup()
    const list = await screen.findByRole('list', { name: 'Chats' })
    await waitFor(() =>
      expect(
        within(list)
          .getAllByRole('listitem')
          .map((r) => r.getAttribute('aria-label')),
      ).toEqual(['Plan a museum visit', 'Descale the kettle']),
    )

    await userEvent.type(screen.getByRole('searchbox', { name: 'Search chats' }), 'museum')
    await waitFor(() => expect(within(list).getAllByRole('listitem')).toHaveLength(1))
    // Debounced: one search for the whole word, after the first listing.
    expect(commands.listChats.mock.calls).toEqual([[''], ['museum']])
    expect(within(list).getByText('museum')).toHaveClass('match')

    await userEvent.click(within(list).getByRole('button', { name: /^Plan a museum visit/ }))
    expect(commands.getChatMessages).toHaveBeenCalledWith(2)
    const reply = await within(log()).findByText('Start with the sculptures.')
    expect(reply).toBeInTheDocument()
    expect(within(log()).getByText('What should I see first?')).toBeInTheDocument()
    // The system prompt is not a message to show.
    expect(within(log()).queryByText('You are a helpful assistant.')).not.toBeInTheDocument()
    expect(within(list).getByRole('button', { name: /^Plan a museum visit/ })).toHaveAttribute('aria-current', 'true')
  })

  it('sends a message: the reply streams in, then the stored chat is shown and listed first', async () => {
    const answer = deferred<{ status: 'ok'; data: ChatSent }>()
    commands.sendChatMessage.mockReturnValue(answer.promise)
    commands.listChats.mockResolvedValue(ok([kettle]))
    await setup()
    await screen.findByRole('listitem', { name: 'Descale the kettle' })
    expect(screen.getByRole('heading', { name: 'A new conversation' })).toBeInTheDocument()

    // Shift+Enter adds a line; Enter sends.
    await userEvent.type(messageBox(), 'Hello{Shift>}{Enter}{/Shift}there')
    expect(messageBox()).toHaveValue('Hello\nthere')
    expect(commands.sendChatMessage).not.toHaveBeenCalled()
    await userEvent.type(messageBox(), '{Enter}')
    await waitFor(() => expect(commands.sendChatMessage).toHaveBeenCalledWith(null, 'Hello\nthere'))
    // The choices the pickers show are saved first: the backend uses them.
    expect(commands.setChatSettings).toHaveBeenCalledWith(shown)
    expect(commands.setChatSettings.mock.invocationCallOrder[0]).toBeLessThan(
      commands.sendChatMessage.mock.invocationCallOrder[0],
    )
    expect(messageBox()).toHaveValue('')
    expect(within(log()).getByText(/Hello\s+there/)).toBeInTheDocument()
    expect(stateLine()).toHaveTextContent('Thinking…')

    act(() => emitChat({ type: 'thinking' }))
    act(() => emitChat({ type: 'reply_text', text: 'Hi ' }))
    act(() => emitChat({ type: 'reply_text', text: 'Ada.' }))
    expect(within(log()).getByRole('listitem', { name: 'Reply' })).toHaveTextContent('Hi Ada.')
    expect(stateLine()).toHaveTextContent('Writing…')
    expect(screen.getByRole('button', { name: /Stop/ })).toBeEnabled()

    commands.listChats.mockResolvedValue(ok([chat({ id: 5, title: 'Hello there' }), kettle]))
    commands.getChatMessages.mockResolvedValue(
      ok([
        message({ id: 10, chat_id: 5, role: 'system', content: 'You are a helpful assistant.' }),
        message({ id: 11, chat_id: 5, content: 'Hello\nthere' }),
        message({
          id: 12,
          chat_id: 5,
          role: 'assistant',
          content: 'Hi Ada.',
          metrics: { asr_ms: null, first_token_ms: 200, first_audio_ms: null, total_ms: 900, interrupted: false },
        }),
      ]),
    )
    await act(async () => answer.resolve(ok({ chat_id: 5, reply: 'Hi Ada.', stopped: false })))
    const newRow = await screen.findByRole('listitem', { name: 'Hello there' })
    expect(within(newRow).getByRole('button', { name: /^Hello there/ })).toHaveAttribute('aria-current', 'true')
    expect(commands.getChatMessages).toHaveBeenCalledWith(5)
    await waitFor(() => expect(within(log()).getAllByRole('listitem')).toHaveLength(2))
    // A typed reply shows no spoken latency.
    expect(screen.queryByTestId('turn-latency')).not.toBeInTheDocument()
    expect(screen.queryByTestId('chat-state')).not.toBeInTheDocument()
    expect(screen.getByRole('button', { name: /Send/ })).toBeDisabled()

    // The next message goes into the same chat.
    commands.sendChatMessage.mockResolvedValue(ok({ chat_id: 5, reply: 'Yes.', stopped: false }))
    await userEvent.type(messageBox(), 'Still there?{Enter}')
    await waitFor(() => expect(commands.sendChatMessage).toHaveBeenLastCalledWith(5, 'Still there?'))
  })

  it('stops a reply: what was written stays, marked as not saved', async () => {
    const answer = deferred<{ status: 'ok'; data: ChatSent }>()
    commands.sendChatMessage.mockReturnValue(answer.promise)
    await setup()
    await userEvent.type(messageBox(), 'Tell me a story{Enter}')
    await waitFor(() => expect(commands.sendChatMessage).toHaveBeenCalled())
    act(() => emitChat({ type: 'reply_text', text: 'Once upon' }))
    await userEvent.click(screen.getByRole('button', { name: /Stop/ }))
    expect(commands.stopChat).toHaveBeenCalledTimes(1)
    expect(stateLine()).toHaveTextContent('Stopping…')

    commands.getChatMessages.mockResolvedValue(ok([message({ id: 1, chat_id: 3, content: 'Tell me a story' })]))
    await act(async () => answer.resolve(ok({ chat_id: 3, reply: 'Once upon', stopped: true })))
    await waitFor(() => expect(commands.getChatMessages).toHaveBeenCalledWith(3))
    const reply = await within(log()).findByRole('listitem', { name: 'Reply' })
    expect(reply).toHaveTextContent('Once upon')
    expect(reply).toHaveTextContent('Stopped · not saved')
    // The user's words are the stored ones, once.
    expect(within(log()).getAllByText('Tell me a story')).toHaveLength(1)
    expect(screen.getByRole('button', { name: /Send/ })).toBeInTheDocument()
  })

  it('says what to do when no chat model is installed', async () => {
    await setup({ models: [whisper] })
    expect(screen.getByRole('heading', { name: 'Import a chat model to start' })).toBeInTheDocument()
    expect(
      screen.getByText('Import a chat model (.gguf, Llama architecture, e.g. SmolLM2-135M-Instruct) in Models.'),
    ).toBeInTheDocument()
    expect(screen.queryByRole('textbox', { name: 'Message' })).not.toBeInTheDocument()
    expect(screen.getByRole('combobox', { name: 'Chat model' })).toBeDisabled()
    await userEvent.click(screen.getByRole('button', { name: /Open Models/ }))
    expect(navStore.get().view).toBe('models')
  })

  it.each([
    { missing: 'a Whisper model', models: [smol], voices: [joe], reason: /needs a Whisper model/, page: 'models' },
    { missing: 'a voice', models: [smol, whisper], voices: [], reason: /needs a voice/, page: 'voices' },
  ])('turns voice chat off, saying why, without $missing; typing still works', async (c) => {
    commands.sendChatMessage.mockResolvedValue(ok({ chat_id: 1, reply: 'Hi.', stopped: false }))
    await setup({ models: c.models, voices: c.voices })
    const mic = screen.getByRole('button', { name: 'Voice chat' })
    expect(mic).toBeDisabled()
    expect(mic).toHaveAccessibleDescription(c.reason)
    await userEvent.type(messageBox(), 'Hi')
    expect(screen.getByRole('button', { name: /Send/ })).toBeEnabled()
    await userEvent.click(screen.getByRole('button', { name: /^Open / }))
    expect(navStore.get().view).toBe(c.page)
  })

  it('saves the choices of the pickers, and says so when one cannot be saved', async () => {
    commands.getChatSettings.mockResolvedValue(ok(chatSettings({ llm: 'local/smollm2', voice: 'Joe' })))
    await setup({ models: [smol, llama, whisper] })
    const picker = screen.getByRole('combobox', { name: 'Chat model' })
    await waitFor(() => expect(picker).toHaveValue('local/smollm2'))
    await userEvent.selectOptions(picker, 'local/llama-3.2-1b')
    expect(commands.setChatSettings).toHaveBeenLastCalledWith({ ...shown, llm: 'local/llama-3.2-1b' })

    await userEvent.click(screen.getByRole('button', { name: /Voice chat settings/ }))
    const panel = screen.getByRole('region', { name: 'Voice chat settings' })
    expect(commands.listAudioDevices).toHaveBeenCalled()
    expect(within(panel).getByRole('combobox', { name: 'Speech recognition' })).toHaveDisplayValue(
      'Default (Whisper base)',
    )
    const mic = within(panel).getByRole('combobox', { name: 'Microphone' })
    await waitFor(() => expect(within(mic).getByRole('option', { name: 'USB Headset' })).toBeInTheDocument())
    await userEvent.selectOptions(mic, 'alsa:usb-headset')
    expect(commands.setChatSettings).toHaveBeenLastCalledWith({
      ...shown,
      llm: 'local/llama-3.2-1b',
      input_device: 'alsa:usb-headset',
    })
    await userEvent.click(within(panel).getByRole('checkbox', { name: /Interrupt the reply by speaking/ }))
    expect(commands.setChatSettings).toHaveBeenLastCalledWith(expect.objectContaining({ barge_in: false }))
    // The pause is saved once the slider rests.
    fireEvent.change(within(panel).getByRole('slider', { name: 'End-of-speech pause' }), { target: { value: '800' } })
    expect(within(panel).getByText('0.80 s')).toBeInTheDocument()
    await waitFor(() =>
      expect(commands.setChatSettings).toHaveBeenLastCalledWith(expect.objectContaining({ end_silence_ms: 800 })),
    )

    commands.setChatSettings.mockResolvedValueOnce(fail('internal', 'the settings could not be written'))
    await userEvent.selectOptions(mic, '')
    expect(await screen.findByText(/Could not save the chat settings/)).toBeInTheDocument()
    // Back to what is saved.
    expect(mic).toHaveValue('alsa:usb-headset')
  })

  it('deletes a chat only once the user confirms', async () => {
    commands.listChats.mockResolvedValue(ok([museum, kettle]))
    await setup()
    const row = await screen.findByRole('listitem', { name: 'Plan a museum visit' })
    await userEvent.click(within(row).getByRole('button', { name: 'Delete Plan a museum visit' }))
    const dialog = screen.getByRole('dialog', { name: 'Delete Plan a museum visit?' })
    expect(dialog).toHaveTextContent('its recordings')
    await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }))
    expect(commands.deleteChat).not.toHaveBeenCalled()

    await userEvent.click(within(row).getByRole('button', { name: 'Delete Plan a museum visit' }))
    await userEvent.click(screen.getByRole('button', { name: 'Delete' }))
    expect(commands.deleteChat).toHaveBeenCalledWith(2)
    await waitFor(() => expect(screen.queryByRole('listitem', { name: 'Plan a museum visit' })).not.toBeInTheDocument())
    expect(screen.getByText('Deleted Plan a museum visit')).toBeInTheDocument()
  })

  it('follows a voice chat: state line, level meter, words heard, the reply, barge-in, the stored turn, stop', async () => {
    commands.listChats.mockResolvedValue(ok([]))
    await setup()
    const mic = screen.getByRole('button', { name: 'Voice chat' })
    expect(mic).toHaveAttribute('aria-pressed', 'false')
    await userEvent.click(mic)
    await waitFor(() => expect(commands.startVoiceChat).toHaveBeenCalledWith(null, false))
    expect(mic).toHaveAttribute('aria-pressed', 'true')
    expect(stateLine()).toHaveTextContent('Starting voice chat…')
    // Typing waits: one activity at a time.
    await userEvent.type(messageBox(), 'Hi')
    expect(screen.queryByRole('button', { name: /Send/ })).not.toBeInTheDocument()

    act(() => emitChat({ type: 'listening', chat_id: null, input: 'USB Headset', output: 'Built-in Speakers' }))
    expect(stateLine()).toHaveTextContent('Listening on USB Headset…')
    const meter = screen.getByRole('meter', { name: 'Microphone level' })
    expect(meter).toHaveAttribute('aria-valuenow', '0')
    act(() => emitChat({ type: 'level', rms: 0.1 }))
    // -20 dB on a 60 dB scale.
    expect(meter).toHaveAttribute('aria-valuenow', '67')

    act(() => emitChat({ type: 'speech_started' }))
    expect(stateLine()).toHaveTextContent('Hearing you…')
    act(() => emitChat({ type: 'speech_ended' }))
    expect(stateLine()).toHaveTextContent('Thinking…')
    act(() => emitChat({ type: 'heard', text: 'What time is it?' }))
    expect(within(log()).getByRole('listitem', { name: 'You' })).toHaveTextContent('What time is it?')
    act(() => emitChat({ type: 'reply_text', text: 'It is noon, ' }))
    expect(stateLine()).toHaveTextContent('Speaking…')
    expect(within(log()).getByRole('listitem', { name: 'Reply' })).toHaveTextContent('It is noon,')

    act(() => emitChat({ type: 'speech_started' }))
    act(() => emitChat({ type: 'barge_in' }))
    expect(within(log()).getByRole('listitem', { name: 'Reply' })).toHaveTextContent('Interrupted')
    expect(stateLine()).toHaveTextContent('Hearing you…')

    const metrics = { asr_ms: 300, first_token_ms: 600, first_audio_ms: 1400, total_ms: 2100, interrupted: true }
    commands.listChats.mockResolvedValue(ok([chat({ id: 9, title: 'What time is it?' })]))
    commands.getChatMessages.mockResolvedValue(
      ok([
        message({ id: 1, chat_id: 9, content: 'What time is it?', metrics: { ...metrics, interrupted: false } }),
        message({ id: 2, chat_id: 9, role: 'assistant', content: 'It is noon,', metrics }),
      ]),
    )
    act(() =>
      emitChat({ type: 'turn_done', chat_id: 9, user_text: 'What time is it?', reply_text: 'It is noon,', metrics }),
    )
    expect(await screen.findByRole('listitem', { name: 'What time is it?' })).toBeInTheDocument()
    expect(commands.getChatMessages).toHaveBeenCalledWith(9)
    const latency = await screen.findByTestId('turn-latency')
    expect(latency).toHaveTextContent('first audio 1.4 s')
    expect(latency).toHaveAttribute('title', expect.stringContaining('heard in 300 ms'))
    expect(within(log()).getByRole('listitem', { name: 'Reply' })).toHaveTextContent('Interrupted')
    expect(within(log()).getAllByRole('listitem')).toHaveLength(2)
    expect(stateLine()).toHaveTextContent('Hearing you…')

    await userEvent.click(screen.getByRole('button', { name: /Stop/ }))
    expect(commands.stopChat).toHaveBeenCalledTimes(1)
    expect(stateLine()).toHaveTextContent('Stopping…')
    act(() => emitChat({ type: 'stopped', error: null }))
    expect(screen.queryByTestId('chat-state')).not.toBeInTheDocument()
    expect(screen.queryByRole('meter')).not.toBeInTheDocument()
    expect(mic).toHaveAttribute('aria-pressed', 'false')
    expect(screen.getByRole('button', { name: /Send/ })).toBeEnabled()
  })

  it('stops a reply in a new chat before the message was kept: no error, the words go back in the box', async () => {
    const answer = deferred<ReturnType<typeof fail>>()
    commands.sendChatMessage.mockReturnValue(answer.promise)
    await setup()
    await userEvent.type(messageBox(), 'Tell me a story{Enter}')
    await waitFor(() => expect(commands.sendChatMessage).toHaveBeenCalled())
    await userEvent.click(screen.getByRole('button', { name: /Stop/ }))
    await act(async () => answer.resolve(fail('cancelled', 'stopped before the message was kept')))
    await waitFor(() => expect(messageBox()).toHaveValue('Tell me a story'))
    expect(screen.queryByRole('alert')).not.toBeInTheDocument()
    expect(screen.queryByTestId('chat-state')).not.toBeInTheDocument()
    expect(within(log()).queryByText('Tell me a story')).not.toBeInTheDocument()
    expect(screen.getByRole('button', { name: /Send/ })).toBeEnabled()
  })

  it('offers speech to speech when an LFM2-Audio model is installed, and then needs no voice', async () => {
    const lfm2Audio = model({
      id: 'local/lfm2-audio',
      name: 'LFM2-Audio 1.5B',
      family: 'lfm2_audio',
      task: 'transcribe',
      status: 'installed',
      source: { kind: 'local', imported_from: '/home/ada/Models/LFM2-Audio-1.5B' },
    })
    commands.startVoiceChat.mockResolvedValue(ok(null))
    await setup({ voices: [] })
    await userEvent.click(screen.getByRole('button', { name: /Voice chat settings/ }))
    let panel = screen.getByRole('region', { name: 'Voice chat settings' })
    // Without such a model there is nothing to choose, and voice chat needs a voice.
    expect(within(panel).queryByRole('combobox', { name: 'Answered by' })).not.toBeInTheDocument()
    expect(screen.getByText(/Voice chat needs a voice/)).toBeInTheDocument()
    cleanup()

    await setup({ models: [smol, whisper, lfm2Audio], voices: [] })
    await userEvent.click(screen.getByRole('button', { name: /Voice chat settings/ }))
    panel = screen.getByRole('region', { name: 'Voice chat settings' })
    const mode = within(panel).getByRole('combobox', { name: 'Answered by' })
    await waitFor(() => expect(mode).toHaveValue(''))
    await userEvent.selectOptions(mode, 'local/lfm2-audio')
    expect(commands.setChatSettings).toHaveBeenLastCalledWith(
      expect.objectContaining({ s2s: 'local/lfm2-audio', llm: 'local/smollm2' }),
    )
    expect(mode).toHaveDisplayValue('LFM2-Audio 1.5B, speech to speech')
    expect(screen.queryByText(/Voice chat needs a voice/)).not.toBeInTheDocument()
    await userEvent.selectOptions(mode, '')
    expect(commands.setChatSettings).toHaveBeenLastCalledWith(expect.objectContaining({ s2s: null }))
  })

  it('reads saved settings that leave fields out with the backend defaults', async () => {
    commands.getChatSettings.mockResolvedValue(ok({ llm: 'local/smollm2' }))
    commands.sendChatMessage.mockResolvedValue(ok({ chat_id: 1, reply: 'Hi.', stopped: false }))
    await setup()
    await userEvent.click(screen.getByRole('button', { name: /Voice chat settings/ }))
    const panel = screen.getByRole('region', { name: 'Voice chat settings' })
    expect(within(panel).getByText('0.50 s')).toBeInTheDocument()
    expect(within(panel).getByRole('checkbox', { name: /Interrupt the reply by speaking/ })).toBeChecked()
    await userEvent.type(messageBox(), 'Hi{Enter}')
    await waitFor(() => expect(commands.setChatSettings).toHaveBeenCalledWith(shown))
  })

  it('talks with push-to-talk: the button and Space each send one press and one release per hold', async () => {
    await setup()
    const modes = screen.getByRole('radiogroup', { name: 'Voice mode' })
    expect(within(modes).getByRole('radio', { name: 'Hands-free' })).toBeChecked()
    await userEvent.click(within(modes).getByRole('radio', { name: 'Push to talk' }))
    expect(within(modes).getByRole('radio', { name: 'Push to talk' })).toBeChecked()

    await userEvent.click(screen.getByRole('button', { name: 'Voice chat' }))
    await waitFor(() => expect(commands.startVoiceChat).toHaveBeenCalledWith(null, true))
    // The mode holds while voice chat runs; the talk button is ready once it listens.
    expect(screen.queryByRole('radiogroup', { name: 'Voice mode' })).not.toBeInTheDocument()
    const talk = screen.getByRole('button', { name: 'Hold to talk' })
    expect(talk).toBeDisabled()
    listening()
    expect(stateLine()).toHaveTextContent('Hold to talk on USB Headset')
    expect(talk).toBeEnabled()

    // The button: down talks, up sends; a second pointer or leaving after the release sends nothing more.
    fireEvent.pointerDown(talk, { button: 0 })
    expect(talk).toHaveAttribute('aria-pressed', 'true')
    expect(stateLine()).toHaveTextContent('Talking… (release to send)')
    fireEvent.pointerDown(talk, { button: 0 })
    fireEvent.pointerUp(talk)
    fireEvent.pointerLeave(talk)
    expect(talk).toHaveAttribute('aria-pressed', 'false')
    await settle()
    expect(commands.setTalking.mock.calls).toEqual([[true], [false]])

    // Space, outside text fields: key repeats are not sent again.
    commands.setTalking.mockClear()
    fireEvent.keyDown(document.body, { key: ' ' })
    fireEvent.keyDown(document.body, { key: ' ', repeat: true })
    fireEvent.keyDown(document.body, { key: ' ', repeat: true })
    expect(stateLine()).toHaveTextContent('Talking… (release to send)')
    // The pointer leaving the button does not end a turn held with Space.
    fireEvent.pointerLeave(talk)
    fireEvent.keyUp(document.body, { key: ' ' })
    await settle()
    expect(commands.setTalking.mock.calls).toEqual([[true], [false]])

    // In the message box, Space types.
    commands.setTalking.mockClear()
    fireEvent.keyDown(messageBox(), { key: ' ' })
    fireEvent.keyUp(messageBox(), { key: ' ' })
    await settle()
    expect(commands.setTalking).not.toHaveBeenCalled()

    // Leaving the window lets go: a key released elsewhere never comes back up here.
    fireEvent.keyDown(document.body, { key: ' ' })
    act(() => {
      fireEvent.blur(window)
    })
    expect(talk).toHaveAttribute('aria-pressed', 'false')
    await settle()
    expect(commands.setTalking.mock.calls).toEqual([[true], [false]])
  })

  it('follows a push-to-talk turn, and goes back to waiting after a press too short to count', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      await setup()
      await userEvent.click(screen.getByRole('radio', { name: 'Push to talk' }))
      await userEvent.click(screen.getByRole('button', { name: 'Voice chat' }))
      listening()
      const talk = screen.getByRole('button', { name: 'Hold to talk' })

      fireEvent.pointerDown(talk, { button: 0 })
      act(() => emitChat({ type: 'speech_started' }))
      expect(stateLine()).toHaveTextContent('Talking… (release to send)')
      vi.setSystemTime(Date.now() + 1200)
      fireEvent.pointerUp(talk)
      act(() => emitChat({ type: 'speech_ended' }))
      expect(stateLine()).toHaveTextContent('Thinking…')
      act(() => emitChat({ type: 'heard', text: 'What time is it?' }))
      act(() => emitChat({ type: 'reply_text', text: 'It is noon.' }))
      expect(stateLine()).toHaveTextContent('Speaking…')
      expect(within(log()).getByRole('listitem', { name: 'Reply' })).toHaveTextContent('It is noon.')

      // A slip of the finger: the backend takes no turn, so nothing is thought about.
      fireEvent.pointerDown(talk, { button: 0 })
      act(() => emitChat({ type: 'speech_started' }))
      act(() => emitChat({ type: 'barge_in' }))
      vi.setSystemTime(Date.now() + 100)
      fireEvent.pointerUp(talk)
      act(() => emitChat({ type: 'speech_ended' }))
      expect(stateLine()).toHaveTextContent('Too short: hold while you speak. Hold to talk on USB Headset')
      await settle()
      expect(commands.setTalking.mock.calls).toEqual([[true], [false], [true], [false]])
    } finally {
      vi.useRealTimers()
    }
  })

  it('remembers the voice mode', async () => {
    const { unmount } = await setup()
    await userEvent.click(screen.getByRole('radio', { name: 'Push to talk' }))
    unmount()
    // A new session: the store starts again from what was remembered.
    resetChat()
    await setup()
    expect(screen.getByRole('radio', { name: 'Push to talk' })).toBeChecked()
    await userEvent.click(screen.getByRole('radio', { name: 'Hands-free' }))
    resetChat()
    await userEvent.click(screen.getByRole('button', { name: 'Voice chat' }))
    await waitFor(() => expect(commands.startVoiceChat).toHaveBeenCalledWith(null, false))
  })

  it('goes back to listening when nothing was heard, and says so', async () => {
    await setup()
    await userEvent.click(screen.getByRole('button', { name: 'Voice chat' }))
    listening()
    act(() => emitChat({ type: 'speech_started' }))
    act(() => emitChat({ type: 'speech_ended' }))
    expect(stateLine()).toHaveTextContent('Thinking…')
    act(() => emitChat({ type: 'nothing_heard' }))
    expect(stateLine()).toHaveTextContent("Didn't catch that. Listening on USB Headset…")
    expect(within(log()).queryByRole('listitem')).not.toBeInTheDocument()
    act(() => emitChat({ type: 'speech_started' }))
    expect(stateLine()).toHaveTextContent(/^Hearing you…$/)
  })

  it('says why when the backend refuses, and gives the words back', async () => {
    commands.sendChatMessage.mockResolvedValue(fail('invalid', 'a reply or voice chat is under way: stop it first'))
    await setup()
    await userEvent.type(messageBox(), 'Hello{Enter}')
    const alert = await screen.findByRole('alert')
    expect(alert).toHaveTextContent('Could not send the message')
    expect(alert).toHaveTextContent('A reply or voice chat is under way: stop it first')
    expect(messageBox()).toHaveValue('Hello')
    await userEvent.click(within(alert).getByRole('button', { name: 'Dismiss' }))
    expect(screen.queryByRole('alert')).not.toBeInTheDocument()

    commands.startVoiceChat.mockResolvedValue(
      fail('model', 'choose the voice that answers (Voices has them; none installed: download one in Models)'),
    )
    await userEvent.click(screen.getByRole('button', { name: 'Voice chat' }))
    expect(await screen.findByRole('alert')).toHaveTextContent('Voice chat could not start')
    expect(screen.getByRole('button', { name: 'Voice chat' })).toHaveAttribute('aria-pressed', 'false')
  })

  it('says why a voice chat stopped on its own', async () => {
    await setup()
    await userEvent.click(screen.getByRole('button', { name: 'Voice chat' }))
    act(() => emitChat({ type: 'listening', chat_id: null, input: 'USB Headset', output: 'Built-in Speakers' }))
    act(() => emitChat({ type: 'stopped', error: 'the microphone stopped' }))
    const alert = await screen.findByRole('alert')
    expect(alert).toHaveTextContent('Voice chat stopped')
    expect(alert).toHaveTextContent('The microphone or speaker could not be used')
    expect(alert).toHaveTextContent('The microphone stopped')
  })

  it('shows a voice chat this window did not start (it was reloaded), so it can be stopped', async () => {
    await setup()
    act(() => emitChat({ type: 'level', rms: 0.05 }))
    expect(screen.getByRole('button', { name: 'Voice chat' })).toHaveAttribute('aria-pressed', 'true')
    await userEvent.click(screen.getByRole('button', { name: /Stop/ }))
    expect(commands.stopChat).toHaveBeenCalled()
  })
})

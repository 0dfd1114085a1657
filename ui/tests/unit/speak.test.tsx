import { act, fireEvent, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitRuntime, fail, job, model, ok, sendSpeechAudio, settings, voice } from './bindingsMock'
import { installFakeAudio } from './fakeAudio'
import { resetApp } from './helpers'
import { Toaster } from '../../src/components/Toaster'
import { handleSpeakEvent, handleSpeechAudio, suggestedName } from '../../src/features/speak/speakStore'
import { SpeakPage } from '../../src/features/speak/SpeakPage'
import { loadSettings } from '../../src/features/settings/settingsStore'
import { loadModels } from '../../src/features/models/modelsStore'
import { loadVoices } from '../../src/features/voices/voicesStore'
import { subscribeRuntime } from '../../src/lib/events'
import { listenSpeechAudio } from '../../src/lib/speechAudio'
import { navStore } from '../../src/lib/nav'
import type { VoiceInfo } from '../../src/bindings'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

function deferred<T>() {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

// A Piper voice's sentence: the saved speech pauses 0.15 s before each but the first.
const audio = (jobId: number, index: number, total: number, first: number, length = 2205, gap = 0.15) => ({
  job_id: jobId,
  index,
  total,
  sample_rate: 22050,
  gap_before: index > 0 ? gap : 0,
  samples: Array.from({ length }, (_, i) => (i === 0 ? first : 0.1)),
})

const progress = (jobId: number, done: number, total: number) =>
  ({
    type: 'job_progress',
    job_id: jobId,
    progress: done / total,
    windows_done: done,
    windows_total: total,
    eta_seconds: total - done,
  }) as const

async function setup(voices: VoiceInfo[] = [voice()]) {
  commands.listVoices.mockResolvedValue(ok(voices))
  const sub = subscribeRuntime(handleSpeakEvent)
  await sub.ready
  await listenSpeechAudio(handleSpeechAudio)
  await loadVoices()
  render(
    <>
      <SpeakPage />
      <Toaster />
    </>,
  )
}

describe('Speak', () => {
  let fake: ReturnType<typeof installFakeAudio>
  beforeEach(() => {
    resetApp()
    fake = installFakeAudio()
  })
  afterEach(() => fake.remove())

  it('tells a new user to download a voice first', async () => {
    await setup([voice({ installed: false })])
    expect(screen.getByRole('heading', { name: 'Download a voice to start' })).toBeInTheDocument()
    await userEvent.click(screen.getByRole('button', { name: /Choose a voice/ }))
    expect(navStore.get().view).toBe('voices')
  })

  it('plays sentences in order as they arrive, shows progress, then saves the WAV', async () => {
    commands.speak.mockResolvedValue(ok(job({ id: 21, kind: 'speak', input: 'Hello there. How are you?' })))
    commands.chooseSavePath.mockResolvedValueOnce(ok('/home/ada/Music/hello.wav'))
    commands.saveSpeech.mockResolvedValue(ok('/home/ada/Music/hello.wav'))
    await setup()
    const generateButton = screen.getByRole('button', { name: /Generate/ })
    expect(generateButton).toBeDisabled()
    await userEvent.type(screen.getByRole('textbox', { name: 'Text to speak' }), 'Hello there. How are you?')
    await userEvent.click(generateButton)
    expect(commands.speak).toHaveBeenCalledWith('1', 'Hello there. How are you?', null)
    expect(screen.getByRole('button', { name: /Save WAV/ })).toBeDisabled()

    act(() => emitRuntime({ type: 'job_started', job_id: 21 }))
    expect(screen.getByTestId('speak-progress')).toHaveTextContent('Reading the text…')
    // The second sentence arrives first: it waits for the first.
    act(() => sendSpeechAudio(audio(21, 1, 2, 0.5)))
    expect(fake.scheduled).toHaveLength(0)
    act(() => sendSpeechAudio(audio(21, 0, 2, 0.25, 4410)))
    act(() => emitRuntime(progress(21, 2, 2)))
    expect(fake.scheduled.map((s) => s.first)).toEqual([0.25, 0.5])
    // Back to back, after the first sentence plus a short pause.
    expect(fake.scheduled[1].at).toBeGreaterThanOrEqual(fake.scheduled[0].at + 4410 / 22050)
    expect(screen.getByRole('progressbar', { name: 'Speech progress' })).toHaveAttribute('aria-valuenow', '100')

    // Events of other jobs are not this screen's.
    act(() => sendSpeechAudio(audio(99, 2, 3, 0.9)))
    expect(fake.scheduled).toHaveLength(2)

    act(() => emitRuntime({ type: 'job_finished', job_id: 21, status: 'done', error: null }))
    expect(screen.getByTestId('speak-progress')).toHaveTextContent('Done · 2 sentences')
    expect(screen.getByTestId('speak-progress')).toHaveTextContent('0.3 s of audio')
    // The finished speech has a waveform to see and a scrubber to seek in.
    const player = screen.getByRole('group', { name: 'Speech player' })
    const scrubber = within(player).getByRole('slider', { name: 'Playback position' })
    expect(Number(scrubber.getAttribute('data-peaks'))).toBeGreaterThan(0)
    act(() => fake.finishAll())
    await userEvent.click(within(player).getByRole('button', { name: 'Play' }))
    // One clip: both sentences with the pause between them, from the start.
    const length = 4410 + Math.round(0.15 * 22050) + 2205
    const whole = fake.scheduled.at(-1)!
    expect(whole).toEqual(expect.objectContaining({ offset: 0, length, first: 0.25 }))
    await userEvent.click(within(player).getByRole('button', { name: 'Stop' }))
    expect(whole.stopped).toBe(true)
    // Seeking while stopped moves the playhead; Play starts there.
    scrubber.getBoundingClientRect = () => ({ left: 0, width: 200, top: 0, height: 56 }) as DOMRect
    fireEvent.click(scrubber, { clientX: 100 })
    await userEvent.click(within(player).getByRole('button', { name: 'Play' }))
    expect(fake.scheduled.at(-1)!.offset).toBeCloseTo(length / 22050 / 2, 5)
    const saveButton = screen.getByRole('button', { name: /Save WAV/ })
    expect(saveButton).toBeEnabled()
    await userEvent.click(saveButton)
    expect(commands.chooseSavePath).toHaveBeenCalledWith(expect.any(String), 'hello-there-how-are-you.wav', null)
    expect(commands.saveSpeech).toHaveBeenCalledWith(21, '/home/ada/Music/hello.wav')
    expect(await screen.findByText('Saved WAV')).toBeInTheDocument()
    expect(screen.getByTestId('saved-path')).toHaveTextContent('/home/ada/Music/hello.wav')
  })

  it('plays the pieces of a Qwen3-TTS voice back to back, with no pause between them', async () => {
    commands.speak.mockResolvedValue(ok(job({ id: 31, kind: 'speak' })))
    await setup()
    await userEvent.type(screen.getByRole('textbox', { name: 'Text to speak' }), 'Hello there.')
    const now = vi.spyOn(performance, 'now').mockReturnValue(1000)
    await userEvent.click(screen.getByRole('button', { name: /Generate/ }))
    now.mockReturnValue(1380)
    act(() => sendSpeechAudio(audio(31, 0, 1, 0.25, 4410, 0)))
    now.mockReturnValue(2600)
    act(() => sendSpeechAudio(audio(31, 1, 2, 0.5, 2205, 0)))
    expect(fake.scheduled.map((s) => s.first)).toEqual([0.25, 0.5])
    expect(fake.scheduled[1].at).toBeCloseTo(fake.scheduled[0].at + 4410 / 22050, 5)
    now.mockRestore()
    act(() => emitRuntime({ type: 'job_finished', job_id: 31, status: 'done', error: null }))
    // How long the first audio took from Generate: the first piece's arrival, not a later one's.
    expect(screen.getByTestId('speak-progress')).toHaveTextContent('first audio in 380 ms')
    act(() => fake.finishAll())
    const player = screen.getByRole('group', { name: 'Speech player' })
    await userEvent.click(within(player).getByRole('button', { name: 'Play' }))
    // One clip as saved: the pieces joined, no pause added.
    expect(fake.scheduled.at(-1)).toEqual(expect.objectContaining({ offset: 0, length: 4410 + 2205, first: 0.25 }))
  })

  it('keeps sentences that arrive before the command answers', async () => {
    const answer = deferred<ReturnType<typeof ok>>()
    commands.speak.mockReturnValue(answer.promise as never)
    await setup()
    await userEvent.type(screen.getByRole('textbox', { name: 'Text to speak' }), 'Hi.')
    await userEvent.click(screen.getByRole('button', { name: /Generate/ }))
    act(() => sendSpeechAudio(audio(5, 0, 1, 0.75)))
    expect(fake.scheduled).toHaveLength(0)
    await act(async () => answer.resolve(ok(job({ id: 5, kind: 'speak' }))))
    expect(fake.scheduled.map((s) => s.first)).toEqual([0.75])
  })

  it('cancels: playback stops and the job ends cancelled', async () => {
    commands.speak.mockResolvedValue(ok(job({ id: 8, kind: 'speak' })))
    await setup()
    await userEvent.type(screen.getByRole('textbox', { name: 'Text to speak' }), 'One. Two. Three.')
    await userEvent.click(screen.getByRole('button', { name: /Generate/ }))
    act(() => sendSpeechAudio(audio(8, 0, 3, 0.2)))
    await userEvent.click(screen.getByRole('button', { name: /Cancel/ }))
    expect(commands.cancelJob).toHaveBeenCalledWith(8)
    expect(fake.scheduled[0].stopped).toBe(true)
    act(() => emitRuntime({ type: 'job_finished', job_id: 8, status: 'cancelled', error: null }))
    expect(screen.getByTestId('speak-progress')).toHaveTextContent('Cancelled.')
    expect(screen.getByRole('button', { name: /Save WAV/ })).toBeDisabled()
    expect(screen.getByRole('button', { name: /Generate/ })).toBeEnabled()
  })

  it('sends the speed when it differs from the voice, and says why a request failed', async () => {
    commands.speak.mockResolvedValue(fail('model', 'espeak-ng is not installed: sudo apt install espeak-ng') as never)
    await setup([voice({ settings: { speed: 1.25, noise_scale: null, noise_w: null, pitch: 0, speaker: null } })])
    const slider = screen.getByRole('slider', { name: 'Speed' })
    expect(slider).toHaveValue('1.25')
    fireEvent.change(slider, { target: { value: '1.3' } })
    expect(screen.getByText('1.30×')).toBeInTheDocument()
    await userEvent.type(screen.getByRole('textbox', { name: 'Text to speak' }), 'Hello.')
    await userEvent.click(screen.getByRole('button', { name: /Generate/ }))
    expect(commands.speak).toHaveBeenCalledWith('1', 'Hello.', 1.3)
    const alert = await screen.findByRole('alert')
    expect(alert).toHaveTextContent('Could not start the speech')
    expect(alert).toHaveTextContent('Espeak-ng is not installed: sudo apt install espeak-ng')
  })

  it('previews the chosen voice', async () => {
    commands.previewVoice.mockResolvedValue(ok({ sample_rate: 16000, samples: [0.6, 0.1, 0.1] }))
    await setup([voice(), voice({ id: 2, name: 'Amy', language: 'en_GB' })])
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Voice' }), '2')
    await userEvent.click(screen.getByRole('button', { name: 'Preview Amy' }))
    expect(commands.previewVoice).toHaveBeenCalledWith('2', null)
    expect(fake.scheduled).toEqual([expect.objectContaining({ first: expect.closeTo(0.6, 5), sampleRate: 16000 })])
    expect(screen.getByRole('button', { name: 'Stop the preview of Amy' })).toBeInTheDocument()
    act(() => fake.finishAll())
    expect(screen.getByRole('button', { name: 'Preview Amy' })).toBeInTheDocument()
  })

  it('takes its length limit from the runtime, through the settings', async () => {
    commands.getSettings.mockResolvedValue(ok(settings({ speak_max_chars: 12 })))
    await loadSettings()
    await setup()
    const box = screen.getByRole('textbox', { name: 'Text to speak' })
    await userEvent.type(box, 'Hello there.')
    expect(screen.getByRole('button', { name: /Generate/ })).toBeEnabled()
    await userEvent.type(box, '!')
    expect(screen.getByText(/13 characters: at most 12\./)).toBeInTheDocument()
    expect(screen.getByRole('button', { name: /Generate/ })).toBeDisabled()
  })

  it("counts a Qwen3-TTS voice's audio in pieces, its progress by utterance", async () => {
    commands.listModels.mockResolvedValue(
      ok([model({ id: 'local/qwen-design', family: 'qwen3_tts', task: 'speak', status: 'installed' })]),
    )
    await loadModels()
    commands.speak.mockResolvedValue(ok(job({ id: 22, kind: 'speak', input: 'Hello there.' })))
    await setup([voice({ id: 3, name: 'Calm', model_id: 'local/qwen-design', source: 'designed' })])
    await userEvent.type(screen.getByRole('textbox', { name: 'Text to speak' }), 'Hello there.')
    await userEvent.click(screen.getByRole('button', { name: /Generate/ }))
    act(() => emitRuntime({ type: 'job_started', job_id: 22 }))
    expect(screen.getByTestId('speak-progress')).toHaveTextContent('Speaking…')
    // Each piece's total is the pieces so far: not a count of sentences.
    act(() => sendSpeechAudio({ ...audio(22, 0, 1, 0.25), gap_before: 0 }))
    act(() => sendSpeechAudio({ ...audio(22, 1, 2, 0.5), gap_before: 0 }))
    act(() => sendSpeechAudio({ ...audio(22, 2, 3, 0.5), gap_before: 0 }))
    expect(screen.getByTestId('speak-progress')).toHaveTextContent('3 pieces of audio')
    expect(screen.getByTestId('speak-progress')).not.toHaveTextContent(/Sentence/)
    expect(screen.getByRole('progressbar', { name: 'Speech progress' })).not.toHaveAttribute('aria-valuenow')
    act(() => emitRuntime(progress(22, 1, 1)))
    expect(screen.getByRole('progressbar', { name: 'Speech progress' })).toHaveAttribute('aria-valuenow', '100')
    act(() => emitRuntime({ type: 'job_finished', job_id: 22, status: 'done', error: null }))
    expect(screen.getByTestId('speak-progress')).toHaveTextContent('Done · 3 pieces')
  })

  it('speaks in an LFM2-Audio voice in pieces, with no speed to set', async () => {
    commands.listModels.mockResolvedValue(
      ok([model({ id: 'local/lfm2-audio', family: 'lfm2_audio', task: 'transcribe', status: 'installed' })]),
    )
    await loadModels()
    commands.speak.mockResolvedValue(ok(job({ id: 23, kind: 'speak', input: 'Hello there.' })))
    await setup([
      voice({
        id: 4,
        name: 'UK male',
        model_id: 'local/lfm2-audio',
        settings: { speed: 1, noise_scale: null, noise_w: null, pitch: 0, speaker: null, speaker_name: 'uk-male' },
      }),
    ])
    expect(screen.getByRole('slider', { name: /Speed/ })).toBeDisabled()
    await userEvent.type(screen.getByRole('textbox', { name: 'Text to speak' }), 'Hello there.')
    await userEvent.click(screen.getByRole('button', { name: /Generate/ }))
    expect(commands.speak).toHaveBeenCalledWith('4', 'Hello there.', null)
    act(() => emitRuntime({ type: 'job_started', job_id: 23 }))
    act(() => sendSpeechAudio({ ...audio(23, 0, 1, 0.25), sample_rate: 24000, gap_before: 0 }))
    act(() => sendSpeechAudio({ ...audio(23, 1, 2, 0.5), sample_rate: 24000, gap_before: 0 }))
    expect(screen.getByTestId('speak-progress')).toHaveTextContent('2 pieces of audio')
  })

  it('suggests a file name from the text', () => {
    expect(suggestedName('  Hello, world! Ça va? 1 2 3')).toBe('hello-world-ça-va-1.wav')
    expect(suggestedName('...')).toBe('speech.wav')
  })
})

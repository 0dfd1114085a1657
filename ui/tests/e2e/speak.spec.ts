import type { Job, VoiceInfo } from '../../src/bindings'
import { calls, expect, recorded, shot, start, test } from './util'

/** Counts the Web Audio sources the page starts (the sentences it plays). */
async function countAudio(page: import('@playwright/test').Page) {
  await page.addInitScript(() => {
    const w = window as unknown as { __audioStarts: number[] }
    w.__audioStarts = []
    const original = AudioBufferSourceNode.prototype.start
    AudioBufferSourceNode.prototype.start = function (this: AudioBufferSourceNode, ...args: number[]) {
      w.__audioStarts.push(this.buffer?.length ?? 0)
      return original.apply(this, args as [number])
    }
  })
}

test('type text → generate (sentences play as they come) → progress → Save WAV', async ({ page }) => {
  await countAudio(page)
  await start(page, { jobStepMs: 150, savePath: '/home/user/Music/hello.wav' })
  const [voice] = await recorded<VoiceInfo[]>(page, 'voices')
  const events = await recorded<{ payload: { type: string; samples?: number } }[]>(page, 'speakEvents')
  const sentences = events.filter((e) => e.payload.type === 'speech_audio')
  expect(sentences.length, 'the recorded speak job streamed its sentences').toBeGreaterThan(0)

  await page.keyboard.press('Control+4')
  await expect(page.getByRole('heading', { name: 'Speak' })).toBeVisible()
  await expect(page.getByRole('combobox', { name: 'Voice' })).toHaveValue(String(voice.id))
  await expect(page.getByRole('button', { name: /Save WAV/ })).toBeDisabled()

  const text = 'Good morning. The museum opens at nine.'
  await page.getByRole('textbox', { name: 'Text to speak' }).fill(text)
  await page.getByRole('button', { name: /Generate/ }).click()
  expect((await calls(page, 'speak'))[0].args).toEqual([String(voice.id), text, null])

  const status = page.getByTestId('speak-progress')
  await expect(page.getByRole('progressbar', { name: 'Speech progress' })).toBeVisible()
  await expect(status).toContainText(/Getting the voice ready|Reading the text|Sentence/)
  await expect(page.getByRole('button', { name: /Cancel/ })).toBeVisible()
  await shot(page, 'speak-running')

  await expect(status).toContainText(`Done · ${sentences.length} sentence`, { timeout: 15_000 })
  // The time from Generate to the first sentence's audio.
  await expect(status).toContainText(/first audio in \d+ ms/)
  await expect(status).toContainText('of audio')
  await expect(page.getByRole('progressbar', { name: 'Speech progress' })).toHaveAttribute('aria-valuenow', '100')
  // Every sentence went to Web Audio, with the recorded number of samples, in order.
  const started = await page.evaluate(() => (window as unknown as { __audioStarts: number[] }).__audioStarts)
  expect(started).toEqual(sentences.map((s) => s.payload.samples))

  await page.getByRole('button', { name: /Save WAV/ }).click()
  // The dialog's answer, then the save: both arrive after the click resolves.
  await expect.poll(async () => (await calls(page, 'saveSpeech')).length).toBe(1)
  const dialog = (await calls(page, 'chooseSavePath'))[0]
  expect(dialog.args[1]).toBe('good-morning-the-museum-opens.wav')
  const saved = await calls(page, 'saveSpeech')
  expect(saved[0].args[1]).toBe('/home/user/Music/hello.wav')
  await expect(page.getByRole('status').filter({ hasText: 'Saved WAV' })).toContainText('/home/user/Music/hello.wav')
  await expect(page.getByTestId('saved-path')).toContainText('/home/user/Music/hello.wav')
  await shot(page, 'speak-done')
})

test('cancel a speech while it is being made', async ({ page }) => {
  // Slow enough that the speech cannot be done before the click, on a loaded machine too.
  await start(page, { jobStepMs: 3000 })
  const job = await recorded<Job>(page, 'speakJob')
  expect(job.kind).toBe('speak')
  const [voice] = await recorded<VoiceInfo[]>(page, 'voices')
  await page.keyboard.press('Control+4')
  // Control+Enter does nothing until a voice is chosen: on a loaded machine the voices come late.
  await expect(page.getByRole('combobox', { name: 'Voice' })).toHaveValue(String(voice.id))
  await page.getByRole('textbox', { name: 'Text to speak' }).fill('One. Two. Three.')
  await page.keyboard.press('Control+Enter')
  await expect.poll(async () => (await calls(page, 'speak')).length).toBe(1)
  await page.getByRole('button', { name: /Cancel/ }).click()
  await expect(page.getByTestId('speak-progress')).toContainText('Cancelled.')
  expect(await calls(page, 'cancelJob')).toHaveLength(1)
  await expect(page.getByRole('button', { name: /Save WAV/ })).toBeDisabled()
  await expect(page.getByRole('button', { name: /Generate/ })).toBeEnabled()
})

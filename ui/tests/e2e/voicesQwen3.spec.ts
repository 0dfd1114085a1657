import { calls, expect, shot, start, test } from './util'

// The mock build has no Qwen3-TTS model (none can be installed here): both dialogs say
// what is needed and lead to the Models page.
test('voices: designing and cloning need a Qwen3-TTS model and say so', async ({ page }) => {
  await start(page)
  await page.keyboard.press('Control+6')
  await expect(page.getByRole('heading', { name: 'Voices', exact: true })).toBeVisible()

  await page.getByRole('button', { name: 'Clone a voice' }).click()
  const clone = page.getByRole('dialog', { name: 'Clone a voice' })
  await expect(clone.getByTestId('no-clone-model')).toContainText('Qwen3-TTS Base model')
  await clone.getByRole('button', { name: 'Cancel' }).click()
  await expect(clone).toHaveCount(0)

  await page.getByRole('button', { name: 'Design a voice' }).click()
  const design = page.getByRole('dialog', { name: 'Design a voice' })
  await expect(design.getByTestId('no-design-model')).toContainText('Qwen3-TTS VoiceDesign model')
  await expect(design.getByRole('button', { name: 'Keep' })).toBeDisabled()
  await design.getByRole('button', { name: /Models page/ }).click()
  await expect(design).toHaveCount(0)
  await expect(page.getByRole('heading', { name: 'Models', exact: true })).toBeVisible()
})

// With `qwen3Models` the mock installs a SYNTHESISED Base and VoiceDesign import: each
// dialog offers only its variant.
test('voices: a voice cloned from a recording made in the dialog, trimmed, its transcript corrected', async ({
  page,
}) => {
  await start(page, { qwen3Models: true, chatStepMs: 40 })
  await page.keyboard.press('Control+6')
  await page.getByRole('button', { name: 'Clone a voice' }).click()
  const clone = page.getByRole('dialog', { name: 'Clone a voice' })
  await expect(clone.getByRole('combobox')).toHaveText('Qwen3-TTS 0.6B Base')

  await clone.getByRole('button', { name: 'Record…' }).click()
  await expect(clone.getByTestId('recording')).toContainText('quick brown fox')
  const meter = clone.getByRole('meter', { name: 'Microphone level' })
  await expect(meter).not.toHaveAttribute('aria-valuenow', '0')
  await shot(page, 'voices-clone-recording')
  await clone.getByRole('button', { name: 'Stop' }).click()

  // The recording's waveform, to trim; Whisper's transcript, to correct.
  await expect(clone.getByTestId('trim-range')).toBeVisible()
  const transcript = clone.getByRole('textbox', { name: 'Transcript' })
  await expect(transcript).toHaveValue(/ask not what your country can do for you/)
  await expect(clone.getByTestId('heard-by')).toContainText('heard by local/tiny')
  await clone.getByRole('slider', { name: 'Start' }).fill('1')
  await expect(clone.getByTestId('trim-kept')).toContainText('Keeps 0:01.0 to')
  await transcript.fill('And so, my fellow Americans.')
  await clone.getByRole('textbox', { name: 'Name' }).fill('Me')
  await shot(page, 'voices-clone-trim')
  await clone.getByRole('button', { name: 'Clone' }).click()
  await expect(clone.getByTestId('cloned-voice')).toContainText('Cloned Me')
  await expect(clone.getByTestId('transcript-source')).toContainText('the transcript you gave')
  const trims = await calls(page, 'trimVoiceSample')
  expect(trims).toHaveLength(1)
  expect(trims[0].args.slice(1, 2)).toEqual([1])
  const cloned = await calls(page, 'cloneVoice')
  expect(cloned[0].args).toEqual([
    'Me',
    'local/qwen3-tts-base',
    expect.stringMatching(/voice-samples\/sample-\d+\.wav$/),
    'And so, my fellow Americans.',
  ])
  await clone.getByRole('button', { name: 'Done' }).click()
  await expect(page.getByRole('listitem', { name: 'Me' })).toBeVisible()
})

test('voices: a file dropped on "Clone a voice" is its recording, not a transcription', async ({ page }) => {
  await start(page, { qwen3Models: true })
  await page.keyboard.press('Control+6')
  await page.getByRole('button', { name: 'Clone a voice' }).click()
  const clone = page.getByRole('dialog', { name: 'Clone a voice' })
  await page.evaluate(() => window.__izwiMock!.drag(['/home/user/Audio/me.wav']))
  await expect(page.getByText('Drop to use as the recording')).toBeVisible()
  await page.evaluate(() => window.__izwiMock!.drop(['/home/user/Audio/me.wav']))
  await expect(clone.getByTestId('clone-audio')).toHaveText('me.wav')
  await expect(clone.getByTestId('trim-range')).toBeVisible()
  expect(await calls(page, 'transcribeFiles')).toEqual([])
  expect((await calls(page, 'openVoiceSample'))[0].args).toEqual(['/home/user/Audio/me.wav'])

  await clone.getByRole('button', { name: 'Cancel' }).click()
  await page.getByRole('button', { name: 'Design a voice' }).click()
  const design = page.getByRole('dialog', { name: 'Design a voice' })
  await expect(design.getByRole('combobox')).toHaveText('Qwen3-TTS 1.7B VoiceDesign')
})

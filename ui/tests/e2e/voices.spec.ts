import type { ModelInfo, VoiceInfo } from '../../src/bindings'
import { calls, expect, recorded, shot, start, test } from './util'

test('voices: rename one and change its settings', async ({ page }) => {
  await start(page)
  const [voice] = await recorded<VoiceInfo[]>(page, 'voices')
  await page.keyboard.press('Control+6')
  await expect(page.getByRole('heading', { name: 'Voices', exact: true })).toBeVisible()
  const card = page.getByRole('listitem', { name: voice.name, exact: true })
  await expect(card).toContainText(voice.model_id)
  await expect(card.getByText('Installed')).toBeVisible()

  await card.getByRole('button', { name: `Rename ${voice.name}` }).click()
  await page.getByRole('textbox', { name: 'Voice name' }).fill('Museum guide')
  await page.keyboard.press('Enter')
  const renamed = page.getByRole('listitem', { name: 'Museum guide' })
  await expect(renamed).toBeVisible()
  expect((await calls(page, 'renameVoice'))[0].args).toEqual([voice.id, 'Museum guide'])

  await renamed.getByRole('button', { name: 'Settings of Museum guide' }).click()
  const form = page.getByRole('form', { name: 'Settings of Museum guide' })
  await form.getByRole('slider', { name: 'Speed' }).fill('1.5')
  await form.getByRole('slider', { name: 'Pitch' }).fill('2')
  await form.getByRole('textbox', { name: 'Expressiveness' }).fill('0.4')
  await shot(page, 'voices-settings')
  await form.getByRole('button', { name: 'Save settings' }).click()
  await expect(form).toHaveCount(0)
  await expect(renamed.getByTestId('voice-settings-summary')).toHaveText(
    '1.50× speed · +2 st pitch · expressiveness 0.4',
  )
  expect((await calls(page, 'updateVoiceSettings'))[0].args).toEqual([
    voice.id,
    { speed: 1.5, pitch: 2, noise_scale: 0.4, noise_w: null, speaker: null },
  ])

  // Out of range: the runtime's limit, said in the form.
  await renamed.getByRole('button', { name: 'Settings of Museum guide' }).click()
  await form.getByRole('textbox', { name: 'Rhythm variation' }).fill('5')
  await form.getByRole('button', { name: 'Save settings' }).click()
  await expect(form.getByRole('alert')).toContainText('Rhythm variation must be between 0 and 2.')
  await form.getByRole('button', { name: 'Cancel' }).click()

  // The last voice of an installed model stays.
  await renamed.getByRole('button', { name: 'Delete Museum guide' }).click()
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click()
  await expect(page.getByRole('alert').filter({ hasText: 'Could not delete Museum guide' })).toContainText(
    'remove the model to remove it',
  )
  await expect(renamed).toBeVisible()
})

test('voices: download a preset voice, add a voice on it, preview it', async ({ page }) => {
  await start(page, { downloadMs: 1500, jobStepMs: 100 })
  const models = await recorded<ModelInfo[]>(page, 'models')
  const preset = models.find((m) => m.family === 'piper' && m.status !== 'installed')
  expect(preset, 'the recorded catalog has a voice to download').toBeTruthy()
  await page.keyboard.press('Control+6')
  const row = page.getByRole('listitem', { name: preset!.name, exact: true })
  await row.getByRole('button', { name: `Download ${preset!.name}` }).click()
  await expect(row.getByRole('progressbar')).toBeVisible()
  // Installed: it leaves the downloads and joins the library.
  const card = page.getByRole('list', { name: 'Voices' }).getByRole('listitem', { name: preset!.name, exact: true })
  await expect(card).toBeVisible({ timeout: 10_000 })
  await expect(card.getByText('Installed')).toBeVisible()

  await page.getByRole('button', { name: /Add voice/ }).click()
  const dialog = page.getByRole('dialog', { name: 'Add a voice' })
  await dialog.getByRole('combobox').selectOption(preset!.id)
  await dialog.getByRole('textbox').fill('Slow narrator')
  await dialog.getByRole('button', { name: 'Add voice' }).click()
  await expect(page.getByRole('listitem', { name: 'Slow narrator' })).toBeVisible()
  expect((await calls(page, 'addVoice'))[0].args.slice(0, 2)).toEqual([preset!.id, 'Slow narrator'])

  await page
    .getByRole('listitem', { name: 'Slow narrator' })
    .getByRole('button', { name: 'Preview Slow narrator' })
    .click()
  await expect.poll(async () => (await calls(page, 'previewVoice')).length).toBe(1)
  await shot(page, 'voices-library')
})

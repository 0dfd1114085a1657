import { expect, start, test } from './util'

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

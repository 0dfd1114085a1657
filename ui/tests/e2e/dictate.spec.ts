import { calls, expect, shot, start, test } from './util'

test('dictate: start, watch partial then final text, stop and copy it', async ({ page }) => {
  await start(page, { chatStepMs: 40 })
  await page.keyboard.press('Control+8')
  await expect(page.getByRole('heading', { name: 'Dictate', exact: true })).toBeVisible()
  await expect(page.getByRole('status')).toContainText('CommandOrControl+Shift+Space')

  await page.getByRole('button', { name: 'Start dictating' }).click()
  await expect(page.getByRole('status')).toContainText('Listening on Built-in Microphone')
  const text = page.getByRole('region', { name: 'Dictated text' })
  // Words still being decided are shown apart, then settle.
  await expect(text.locator('.dictate-partial')).toBeVisible()
  await expect(text.locator('.dictate-final').first()).toBeVisible()
  await shot(page, 'dictate-live')
  await expect(text).toContainText('ask what you can do for your country.')
  await page.getByRole('button', { name: 'Stop', exact: true }).click()
  await expect(page.getByRole('button', { name: 'Start dictating' })).toBeEnabled()
  await expect(text.locator('.dictate-partial')).toHaveCount(0)
  expect(await calls(page, 'stopDictation')).toHaveLength(1)
  // The model shown, and English: the recorded model (tiny.en) knows no other language.
  const model = await page.getByRole('combobox', { name: 'Model' }).inputValue()
  // No delay: only a streaming model takes one.
  expect((await calls(page, 'startDictation'))[0].args).toEqual([model, 'en', null])

  await page.getByRole('button', { name: 'Copy' }).click()
  await expect(page.getByRole('button', { name: 'Copied' })).toBeVisible()
  await shot(page, 'dictate-done')
  await expect(page.getByRole('button', { name: 'Open in History' })).toBeVisible()
})

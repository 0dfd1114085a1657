import { expect, shot, start, test } from './util'

test('search "country" → highlighted snippets → open the transcript at that segment', async ({ page }) => {
  await page.emulateMedia({ colorScheme: 'dark' })
  await start(page)
  await page.keyboard.press('Control+3')
  await expect(page.getByRole('heading', { name: 'History' })).toBeVisible()
  await expect(page.getByRole('list', { name: 'Past jobs' }).getByRole('listitem').first()).toBeVisible()

  await page.keyboard.press('Control+f')
  await expect(page.getByRole('searchbox', { name: 'Search all transcripts' })).toBeFocused()
  await page.keyboard.type('country')
  const results = page.getByRole('list', { name: 'Search results' })
  await expect(results).toBeVisible()
  const marks = results.locator('mark')
  await expect(marks.first()).toHaveText(/country/i)
  await expect(results).not.toContainText('[')
  await shot(page, 'history-search')

  await results.getByRole('button').first().click()
  const segments = page.getByRole('list', { name: 'Segments' })
  await expect(segments).toBeVisible()
  await expect(segments.locator('.segment-flash')).toContainText(/country/i)
  await expect(page.getByRole('region', { name: /Transcript of/ })).toBeVisible()
  await shot(page, 'history-transcript')
})

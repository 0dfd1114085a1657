import { calls, expect, shot, start, test } from './util'

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

test('a speech job opens as speech in History: its text, voice and recording, saved again', async ({ page }) => {
  await start(page, { jobStepMs: 60, savePath: '/home/user/Music/again.wav' })
  await page.keyboard.press('Control+4')
  const text = 'Good morning. The museum opens at nine.'
  await page.getByRole('textbox', { name: 'Text to speak' }).fill(text)
  await page.getByRole('button', { name: /Generate/ }).click()
  await expect(page.getByTestId('speak-progress')).toContainText('Done', { timeout: 15_000 })

  await page.keyboard.press('Control+3')
  const row = page.getByRole('list', { name: 'Past jobs' }).getByRole('listitem', { name: text })
  await expect(row.getByRole('img', { name: 'Speech' })).toBeVisible()
  await row.getByRole('button').first().click()
  const view = page.getByRole('region', { name: /^Speech job/ })
  await expect(view.getByRole('region', { name: 'Text' })).toContainText(text)
  await expect(view).not.toContainText('No speech was found')
  await expect(view.locator('dl[aria-label="Voice and settings"]')).toContainText('Voice')
  await expect(view.getByRole('button', { name: 'Play' })).toBeEnabled()
  await shot(page, 'history-speech')

  await view.getByRole('button', { name: /Save as/ }).click()
  await expect.poll(async () => (await calls(page, 'saveSpeech')).length).toBe(1)
  expect((await calls(page, 'saveSpeech'))[0].args[1]).toBe('/home/user/Music/again.wav')
})

test('a batch opens in History with its lines and files', async ({ page }) => {
  await start(page, { jobStepMs: 60, openFolder: '/home/user/Exports/gallery' })
  await page.keyboard.press('Control+5')
  const lines = ['Welcome to the gallery.', 'Photographs are allowed.', 'Thank you!']
  await page.getByRole('textbox', { name: 'Lines to speak' }).fill(lines.join('\n'))
  await page.getByRole('button', { name: /Choose folder/ }).click()
  await page.getByRole('button', { name: /Start/ }).click()
  await expect(page.getByTestId('batch-progress')).toContainText('Done', { timeout: 15_000 })

  await page.keyboard.press('Control+3')
  const row = page.getByRole('list', { name: 'Past jobs' }).getByRole('listitem', { name: 'gallery' })
  await expect(row.getByRole('img', { name: 'Batch' })).toBeVisible()
  await row.getByRole('button').first().click()
  const view = page.getByRole('region', { name: /^Batch job/ })
  const items = view.getByRole('list', { name: 'Lines' }).getByRole('listitem')
  await expect(items).toHaveCount(3)
  for (const [i, line] of lines.entries()) {
    await expect(items.nth(i)).toContainText(line)
    await expect(items.nth(i)).toContainText(`00${i + 1}.wav`)
  }
  await expect(view).toContainText('3 of 3 lines made')
  await shot(page, 'history-batch')
})

test('correct a segment of a transcript in place, then revert it', async ({ page }) => {
  await start(page)
  await page.keyboard.press('Control+3')
  const done = page
    .getByRole('list', { name: 'Past jobs' })
    .getByRole('listitem')
    .filter({ has: page.getByText('Done', { exact: true }) })
    .first()
  await done.getByRole('button').first().click()
  const segments = page.getByRole('list', { name: 'Segments' })
  const first = segments.getByRole('listitem').first()
  const before = (await first.locator('.segment-text').textContent())!.trim()

  // Esc drops the draft: nothing is saved, even as the field goes away.
  await first.locator('.segment-text').dblclick()
  await first.getByRole('textbox').fill('dropped')
  await first.getByRole('textbox').press('Escape')
  await expect(first.getByRole('textbox')).toHaveCount(0)
  await expect(first.locator('.segment-text')).toHaveText(before)
  expect(await calls(page, 'editSegment')).toEqual([])

  await first.getByRole('button', { name: /^Edit text at/ }).click()
  const field = first.getByRole('textbox')
  await expect(field).toBeFocused()
  await field.fill('And so, my fellow Americans:')
  await field.press('Enter')
  await expect(first.locator('.segment-text')).toHaveText('And so, my fellow Americans:')
  // Saved once, though the field was blurred as it closed.
  await expect.poll(async () => (await calls(page, 'editSegment')).length).toBe(1)
  await expect(first.getByText('edited')).toHaveAttribute('title', `Heard: ${before}`)
  expect((await calls(page, 'editSegment'))[0].args.slice(1)).toEqual([0, 'And so, my fellow Americans:'])
  await shot(page, 'history-transcript-edited')

  await first.getByRole('button', { name: /^Revert to what was heard/ }).click()
  await expect(first.locator('.segment-text')).toHaveText(before)
  await expect(first.getByText('edited')).toHaveCount(0)
})

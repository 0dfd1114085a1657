import { calls, expect, recorded, shot, start, test } from './util'

test('a batch of lines → per-line progress → done → open folder', async ({ page }) => {
  await start(page, { jobStepMs: 200, openFolder: '/home/user/Exports/museum' })
  await page.keyboard.press('Control+5')
  await expect(page.getByRole('heading', { name: 'Batch export' })).toBeVisible()

  const lines = ['Welcome to the museum.', 'The exit is on your left.', 'Tickets, please.', 'Enjoy your visit!']
  await page.getByRole('textbox', { name: 'Lines to speak' }).fill(lines.join('\n\n'))
  await expect(page.getByTestId('batch-count')).toContainText('4 lines → 4 WAV files and manifest.csv')
  await expect(page.getByRole('button', { name: /Start/ })).toBeDisabled()
  await page.getByRole('button', { name: /Choose folder/ }).click()
  await expect(page.getByRole('button', { name: /museum/ })).toBeVisible()
  await page.getByRole('button', { name: /Start/ }).click()

  const sent = (await calls(page, 'speakBatch'))[0]
  expect(sent.args.slice(1)).toEqual([lines, '/home/user/Exports/museum', null])
  const list = page.getByRole('list', { name: 'Lines' })
  await expect(list.getByRole('listitem')).toHaveCount(4)
  // Line by line: the first is done while a later one is still waiting.
  await expect(list.getByRole('listitem', { name: 'Line 1' })).toHaveAttribute('data-state', 'done', {
    timeout: 10_000,
  })
  await expect(list.getByRole('listitem', { name: 'Line 1' })).toContainText('001.wav')
  await expect(page.getByTestId('batch-progress')).toContainText(/of 4 lines done|Done/)
  await shot(page, 'batch-running')

  await expect(page.getByTestId('batch-progress')).toContainText('Done · 4 files in /home/user/Exports/museum', {
    timeout: 15_000,
  })
  for (let i = 1; i <= 4; i++) {
    await expect(list.getByRole('listitem', { name: `Line ${i}` })).toContainText(`00${i}.wav`)
  }
  await expect(page.getByRole('progressbar', { name: 'Batch progress' })).toHaveAttribute('aria-valuenow', '100')
  await page.getByRole('button', { name: /Open folder/ }).click()
  await expect.poll(async () => (await calls(page, 'showBatchOutput')).length).toBe(1)
  await shot(page, 'batch-done')
})

test('import the lines of a .csv file', async ({ page }) => {
  await start(page, { openFiles: ['/home/user/Documents/lines.csv'] })
  const csv = await recorded<string[]>(page, 'linesCsv')
  await page.keyboard.press('Control+5')
  await page.getByRole('button', { name: /Import .txt or .csv/ }).click()
  // The dialog answers asynchronously: wait for the call rather than read the log at once.
  await expect.poll(async () => (await calls(page, 'readLines'))[0]?.args).toEqual(['/home/user/Documents/lines.csv'])
  await expect(page.getByRole('textbox', { name: 'Lines to speak' })).toHaveValue(csv.join('\n'))
  await expect(page.getByTestId('batch-count')).toContainText(`${csv.length} lines`)
})

// The mock's Whisper check is SYNTHESISED (flaggedLines): line 2 is heard without its last word.
test('a batch checked by Whisper: the flagged line with its transcript and WER, re-taken', async ({ page }) => {
  await start(page, { jobStepMs: 60, openFolder: '/home/user/Exports/tour', flaggedLines: [2] })
  await page.keyboard.press('Control+5')
  const lines = ['Welcome to the museum.', 'The exit is on your left.', 'Tickets, please.']
  await page.getByRole('textbox', { name: 'Lines to speak' }).fill(lines.join('\n'))
  await page.getByRole('button', { name: /Choose folder/ }).click()
  await page.getByRole('button', { name: /Start/ }).click()
  await expect(page.getByTestId('batch-progress')).toContainText('Done', { timeout: 15_000 })

  const checks = page.getByRole('region', { name: 'Flagged lines' })
  await expect(checks).toContainText('Whisper heard 3 lines back: 1 flagged')
  const flagged = checks.getByRole('listitem', { name: 'Flagged line 2' })
  await expect(flagged).toContainText('The exit is on your left.')
  await expect(flagged).toContainText('Heard: “The exit is on your”')
  await expect(flagged).toContainText('WER 17%')
  await expect(checks.getByRole('listitem')).toHaveCount(1)
  await shot(page, 'batch-flagged')

  await checks.getByRole('button', { name: 'Re-take 1 flagged line' }).click()
  const retake = (await calls(page, 'retakeFlagged'))[0]
  const batch = (await calls(page, 'speakBatch'))[0]
  expect(retake.args[1]).toBe(batch.args[0])
  await expect(checks).toContainText('none flagged')
  await expect(checks.getByRole('status')).toContainText('Re-take done')
  await expect(checks.getByRole('listitem')).toHaveCount(0)
})

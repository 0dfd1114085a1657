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

import type { Job, TranscriptView } from '../../src/bindings'
import { basename, calls, expect, recorded, shot, start, test } from './util'

test('open a file → queue with progress → transcript with the recorded segments → export SRT', async ({ page }) => {
  await start(page, { jobStepMs: 400, savePath: '/home/user/Documents/jfk.srt' })
  const [job] = await recorded<Job[]>(page, 'jobs')
  const view = await recorded<TranscriptView>(page, 'transcript')
  const name = basename(job.input)

  await page.getByRole('button', { name: 'Open files' }).first().click()
  // The dialog's answer leads to transcribeFiles after the click returns: wait for it.
  await expect.poll(async () => (await calls(page, 'transcribeFiles')).length).toBe(1)
  expect((await calls(page, 'choosePaths'))[0].args[0]).toBe('media_files')
  const sent = (await calls(page, 'transcribeFiles'))[0]
  expect(sent.args[0]).toEqual([job.input])

  // The queue row shows the job working, with a progress bar.
  const row = page.getByRole('listitem', { name })
  await expect(row).toBeVisible()
  await expect(row.getByText('Running')).toBeVisible()
  await expect(row.getByRole('progressbar')).toBeVisible()
  await shot(page, 'transcribe-running')

  // Done: the transcript shows every recorded segment, in order.
  await expect(row.getByText('Done')).toBeVisible({ timeout: 15_000 })
  const segments = page.getByRole('list', { name: 'Segments' }).getByRole('listitem')
  await expect(segments).toHaveCount(view.segments.length)
  const texts = [...view.segments].sort((a, b) => a.start - b.start).map((s) => s.text.trim())
  await expect(segments.locator('.segment-text')).toHaveText(texts)
  await expect(page.getByRole('slider', { name: 'Playback position' })).toHaveAttribute('data-peaks', /[1-9]/)

  // Click a later segment: the playhead moves there.
  if (view.segments.length > 1) {
    await segments.nth(view.segments.length - 1).click()
    const last = [...view.segments].sort((a, b) => a.start - b.start).at(-1)!
    await expect(page.getByRole('slider', { name: 'Playback position' })).toHaveAttribute(
      'aria-valuenow',
      String(Math.round(last.start)),
    )
  }

  // Search within the transcript.
  await page.keyboard.press('Control+f')
  const word = texts.join(' ').match(/[A-Za-z]{4,}/)![0]
  await page.getByRole('searchbox', { name: 'Find in transcript' }).fill(word)
  await expect(page.locator('.segments mark').first()).toHaveText(new RegExp(word, 'i'))
  await page.keyboard.press('Escape')

  // Export SRT through the save dialog.
  await page.getByRole('button', { name: /Export/ }).click()
  await page.getByRole('menuitem', { name: /SubRip/ }).click()
  await expect(page.getByRole('status').filter({ hasText: 'Saved SRT' })).toContainText('/home/user/Documents/jfk.srt')
  const exported = await calls(page, 'exportTranscript')
  expect(exported).toHaveLength(1)
  expect(exported[0].args).toEqual([expect.any(Number), 'srt', '/home/user/Documents/jfk.srt'])
  await shot(page, 'transcribe-done')
})

test('files Izwi was opened with are queued at launch and their transcript is offered when done', async ({ page }) => {
  await start(page, { jobStepMs: 120, openedFiles: ['/home/user/Audio/jfk.wav'] })
  await expect.poll(async () => (await calls(page, 'transcribeFiles')).length).toBe(1)
  expect((await calls(page, 'transcribeFiles'))[0].args[0]).toEqual(['/home/user/Audio/jfk.wav'])
  await page.keyboard.press('Control+2')
  await expect(page.getByRole('heading', { name: 'Models' })).toBeVisible()
  // The user went elsewhere: when it finishes, a notice offers the transcript; they stay.
  await page.getByRole('button', { name: 'Open' }).click({ timeout: 15_000 })
  await expect(page.getByRole('list', { name: 'Segments' })).toBeVisible()
  await expect(page.getByRole('heading', { name: 'Transcribe' })).toBeVisible()
})

test('files dropped on the window are queued; the overlay shows while dragging', async ({ page }) => {
  await start(page, { jobStepMs: 100 })
  await page.keyboard.press('Control+3')
  await page.evaluate(() => window.__izwiMock!.drag(['/home/user/Audio/a.wav', '/home/user/Audio/b.wav']))
  await expect(page.getByText('Drop to transcribe')).toBeVisible()
  await expect(page.getByText('2 items')).toBeVisible()
  await page.waitForTimeout(200) // let the fade-in finish for the screenshot
  await shot(page, 'transcribe-drop-overlay')
  await page.evaluate(() => window.__izwiMock!.drop(['/home/user/Audio/a.wav', '/home/user/Audio/b.wav']))
  await expect(page.getByText('Drop to transcribe')).toHaveCount(0)
  await expect(page.getByRole('heading', { name: 'Transcribe' })).toBeVisible()
  await expect.poll(async () => (await calls(page, 'transcribeFiles')).length).toBe(1)
  expect((await calls(page, 'transcribeFiles'))[0].args[0]).toEqual([
    '/home/user/Audio/a.wav',
    '/home/user/Audio/b.wav',
  ])
  await expect(page.getByRole('listitem', { name: 'a.wav' })).toBeVisible()
  await expect(page.getByRole('listitem', { name: 'b.wav' })).toBeVisible()
  // Jobs run one after the other; both end up done.
  await expect(page.getByRole('listitem', { name: 'b.wav' }).getByText('Done')).toBeVisible({ timeout: 15_000 })
})

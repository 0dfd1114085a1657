// Drives the real desktop app through WebDriver (tauri-driver + WebKitWebDriver): opens
// a speech job, a batch job and a transcript from the history, the Models screen after
// an import, speaks two sentences on the Speak screen (their audio reaching the page as
// binary over the speech audio channel), and a stored chat in the Chat screen where it
// asks the real model a second question; checks what each shows, and saves a screenshot
// of each.
// scripts/app-tour.sh sets up the data folder and the virtual screen and runs this.
//
//   node scripts/app-tour.mjs APP OUT_DIR SPEAK_JOB BATCH_JOB TRANSCRIBE_JOB
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Builder, By, Key, until } from 'selenium-webdriver'

const [app, outDir, speakJob, batchJob, transcribeJob] = process.argv.slice(2)
const driver = await new Builder()
  .usingServer('http://127.0.0.1:4444/')
  .withCapabilities({ browserName: 'wry', 'tauri:options': { application: app } })
  .build()

const failures = []
const WAIT = 20_000

async function page(label) {
  const item = await driver.wait(
    until.elementLocated(By.xpath(`//nav//button[.//span[@class='nav-label' and normalize-space()='${label}']]`)),
    WAIT,
  )
  await item.click()
}

async function openJob(id) {
  const row = await driver.wait(until.elementLocated(By.css(`li[data-job="${id}"] .job-row-main`)), WAIT)
  await row.click()
}

/** Waits until the page shows every one of `texts`; records a failure otherwise. */
async function expectText(what, texts) {
  const main = await driver.findElement(By.css('main, #root'))
  try {
    await driver.wait(async () => {
      const shown = (await main.getText()).toLowerCase()
      return texts.every((t) => shown.includes(t.toLowerCase()))
    }, WAIT)
  } catch {
    const shown = (await main.getText()).replace(/\s+/g, ' ').slice(0, 600)
    failures.push(`${what}: expected ${JSON.stringify(texts)}; the window shows: ${shown}`)
  }
}

async function shot(name) {
  writeFileSync(join(outDir, name), await driver.takeScreenshot(), 'base64')
}

try {
  await page('History')
  await openJob(speakJob)
  await expectText('the speech job', ['Speech', 'Hello from Izwi', 'joe'])
  await shot('history-speak.png')

  await openJob(batchJob)
  await expectText('the batch job', ['Batch', '3 of 3 lines made', '002.wav'])
  await shot('history-batch.png')

  await openJob(transcribeJob)
  await expectText('the transcript', ['ask not what your country can do for you'])
  await shot('history-transcript.png')

  await page('Models')
  await expectText('the Models screen', ['Whisper tiny (English)', 'Installed'])
  await shot('models-import.png')

  // Seconds "of audio" are counted from the frames that reached the page.
  await page('Speak')
  const text = await driver.wait(until.elementLocated(By.css('textarea[aria-label="Text to speak"]')), WAIT)
  await text.sendKeys('Good morning. The museum opens at nine.')
  await driver.findElement(By.xpath("//button[normalize-space()='Generate']")).click()
  await expectText('the speech made on the Speak screen', ['Done · 2 sentences', 'of audio'])
  await shot('speak.png')

  // The chat the CLI had, then a question typed here answered by the real model.
  await page('Chat')
  const chat = await driver.wait(until.elementLocated(By.css('li[data-chat] .chat-row-main')), WAIT)
  await chat.click()
  await expectText('the stored chat', ['What is the capital of France?', 'Paris'])
  const message = await driver.findElement(By.css('textarea.chat-input'))
  await message.sendKeys('And of Italy?', Key.ENTER)
  await expectText('the typed reply', ['And of Italy?', 'Rome'])
  // The reply is whole once there is nothing left to stop.
  await driver.wait(
    async () => (await driver.findElements(By.xpath("//button[normalize-space()='Stop']"))).length === 0,
    WAIT,
  )
  await shot('chat.png')
} finally {
  await driver.quit()
}

if (failures.length) {
  for (const f of failures) console.error(`app-tour: ${f}`)
  process.exit(1)
}
console.log(`app-tour: every view showed what it should (screenshots in ${outDir})`)

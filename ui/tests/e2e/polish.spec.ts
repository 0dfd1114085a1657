// What a try-out found in the layout, checked in a real browser: labels cut, tips over
// menus, cards stretched by a neighbour, names cut in the voice picker.

import type { VoiceInfo } from '../../src/bindings'
import { calls, expect, recorded, shot, start, test } from './util'

test('a busy sidebar item keeps its whole label', async ({ page }) => {
  await start(page, { jobStepMs: 400 })
  await page.keyboard.press('Control+5')
  await page.getByRole('textbox', { name: 'Lines to speak' }).fill('One.\nTwo.\nThree.\nFour.')
  await page.getByRole('button', { name: /Choose folder/ }).click()
  await page.getByRole('button', { name: /Start/ }).click()
  const item = page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name: /Batch export/ })
  await expect(item.getByLabel('In progress')).toBeVisible()
  const label = item.locator('.nav-label')
  await expect(label).toHaveText('Batch export')
  // Not cut with an ellipsis: the text fits its box.
  expect(await label.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true)
  await shot(page, 'polish-sidebar-busy')
})

test('a finished batch line plays on its own; a batch has a speed', async ({ page }) => {
  await start(page, { jobStepMs: 100 })
  await page.keyboard.press('Control+5')
  await page.getByRole('textbox', { name: 'Lines to speak' }).fill('Welcome to the museum.\nTickets, please.')
  await page.getByRole('slider', { name: 'Speed' }).fill('1.2')
  await page.getByRole('button', { name: /Choose folder/ }).click()
  await page.getByRole('button', { name: /Start/ }).click()
  expect((await calls(page, 'speakBatch'))[0].args[3]).toBe(1.2)
  await expect(page.getByTestId('batch-progress')).toContainText('Done', { timeout: 15_000 })
  const line = page.getByRole('list', { name: 'Lines' }).getByRole('listitem', { name: 'Line 1' })
  await expect(line.getByRole('button', { name: 'Play line 1' })).toBeVisible()
  await shot(page, 'polish-batch-lines')
})

test('an open menu is not covered by its button’s tooltip; Import offers a file or a folder', async ({ page }) => {
  await start(page)
  await page.keyboard.press('Control+2')
  const button = page.getByRole('button', { name: /Import/ })
  await button.hover()
  await button.click()
  const menu = page.getByRole('menu')
  await expect(menu.getByRole('menuitem', { name: /Piper voice \(\.onnx file\)/ })).toBeVisible()
  await expect(menu.getByRole('menuitem', { name: /Whisper model folder/ })).toBeVisible()
  const tip = await button.evaluate((el) => getComputedStyle(el, '::after').display)
  expect(tip).toBe('none')
  await shot(page, 'polish-import-menu')
})

test('opening a voice card’s settings leaves its neighbour’s height alone', async ({ page }) => {
  await start(page)
  const [voice] = await recorded<VoiceInfo[]>(page, 'voices')
  await page.keyboard.press('Control+6')
  // A second voice beside the first, with its own speed and pitch.
  await page.getByRole('button', { name: /Add voice/ }).click()
  const dialog = page.getByRole('dialog', { name: 'Add a voice' })
  await dialog.getByRole('textbox').fill('Joe, slowly for the audiobook chapters')
  await dialog.getByRole('slider', { name: 'Speed' }).fill('0.8')
  await dialog.getByRole('slider', { name: 'Pitch' }).fill('-1')
  await shot(page, 'polish-add-voice')
  await dialog.getByRole('button', { name: 'Add voice' }).click()
  const added = (await calls(page, 'addVoice'))[0]
  expect(added.args[2]).toMatchObject({ speed: 0.8, pitch: -1 })
  const mine = page.getByRole('listitem', { name: 'Joe, slowly for the audiobook chapters' })
  await expect(mine.getByText('Yours')).toBeVisible()
  const first = page.getByRole('list', { name: 'Voices' }).getByRole('listitem', { name: voice.name, exact: true })
  await expect(first.getByText('Preset')).toBeVisible()

  const before = (await mine.boundingBox())!.height
  await first.getByRole('button', { name: `Settings of ${voice.name}` }).click()
  await expect(page.getByRole('form', { name: `Settings of ${voice.name}` })).toBeVisible()
  expect((await mine.boundingBox())!.height).toBe(before)
  await shot(page, 'polish-voice-settings')

  // The picker shows the whole name.
  await page.keyboard.press('Control+4')
  const picker = page.getByRole('combobox', { name: 'Voice' })
  const value = await picker.locator('option', { hasText: 'audiobook chapters' }).getAttribute('value')
  await picker.selectOption(value!)
  // The select is as wide as its chosen option's text (plus its arrow's padding).
  const fits = await picker.evaluate((el: HTMLSelectElement) => {
    const style = getComputedStyle(el)
    const ctx = document.createElement('canvas').getContext('2d')!
    ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`
    const text = ctx.measureText(el.selectedOptions[0].text).width
    return text + parseFloat(style.paddingLeft) + parseFloat(style.paddingRight) <= el.clientWidth + 1
  })
  expect(fits).toBe(true)
  await shot(page, 'polish-voice-picker')
})

test('the finished speech has a waveform and a scrubber', async ({ page }) => {
  await start(page, { jobStepMs: 50 })
  await page.keyboard.press('Control+4')
  await page.getByRole('textbox', { name: 'Text to speak' }).fill('Good morning. The museum opens at nine.')
  await page.getByRole('button', { name: /Generate/ }).click()
  await expect(page.getByTestId('speak-progress')).toContainText('Done', { timeout: 15_000 })
  const player = page.getByRole('group', { name: 'Speech player' })
  await expect(player.getByRole('slider', { name: 'Playback position' })).toBeVisible()
  await shot(page, 'polish-speak-player')
})

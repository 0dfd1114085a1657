import type { ModelInfo } from '../../src/bindings'
import { calls, expect, recorded, shot, start, test } from './util'

test('chat: import a chat model, send a message and read the reply, then talk by voice and stop', async ({ page }) => {
  await start(page, { chatStepMs: 40 })
  const chatModel = await recorded<ModelInfo>(page, 'chatModel')
  const turn = await recorded<{ heard: string }>(page, 'voiceTurn')

  // First run: no chat model yet, and the page says what to do.
  await page.keyboard.press('Control+7')
  await expect(page.getByRole('heading', { name: 'Chat', exact: true })).toBeVisible()
  await expect(page.getByRole('heading', { name: 'Import a chat model to start' })).toBeVisible()
  await shot(page, 'chat-first-run')
  await page.getByRole('button', { name: /Open Models/ }).click()
  await page.getByRole('button', { name: /Import/ }).click()
  await page.getByRole('menuitem', { name: /Chat model \(\.gguf file\)/ }).click()
  await expect(page.getByRole('region', { name: 'Chat' }).getByRole('article', { name: chatModel.name })).toBeVisible()

  // A typed message: the reply streams in, then the chat is stored and listed, open.
  await page.keyboard.press('Control+7')
  const box = page.getByRole('textbox', { name: 'Message' })
  await box.fill('When does the museum open?')
  await box.press('Enter')
  const log = page.getByRole('log', { name: 'Messages' })
  await expect(log.getByRole('listitem', { name: 'You' })).toHaveText('When does the museum open?')
  const reply = log.getByRole('listitem', { name: 'Reply' })
  await expect(reply).toContainText('You said: “When does the museum open?”')
  await expect(reply).toContainText('as a chat model writes.')
  await expect(page.getByTestId('chat-state')).toHaveCount(0)
  const chats = page.getByRole('list', { name: 'Chats' })
  const row = chats.getByRole('listitem', { name: 'When does the museum open?' })
  await expect(row.getByRole('button', { name: /^When does/ })).toHaveAttribute('aria-current', 'true')
  expect((await calls(page, 'sendChatMessage'))[0].args).toEqual([null, 'When does the museum open?'])
  // The chat model the picker showed was saved for the backend to use.
  const saved = (await calls(page, 'setChatSettings'))[0].args[0] as { llm: string }
  await expect(page.getByRole('combobox', { name: 'Chat model' })).toHaveValue(saved.llm)
  await shot(page, 'chat-typed')

  // Hands-free: listening on the microphone, the words heard, the spoken reply and its latency.
  const mic = page.getByRole('button', { name: 'Voice chat', exact: true })
  await mic.click()
  await expect(mic).toHaveAttribute('aria-pressed', 'true')
  await expect(page.getByTestId('chat-state')).toContainText('Listening on Built-in Microphone')
  await expect(page.getByRole('meter', { name: 'Microphone level' })).toBeVisible()
  await expect(log.getByRole('listitem', { name: 'You' }).last()).toHaveText(turn.heard)
  await expect(page.getByTestId('turn-latency')).toHaveText('first audio 1.4 s')
  await shot(page, 'chat-voice')
  expect((await calls(page, 'startVoiceChat'))[0].args).toEqual([
    (await calls(page, 'getChatMessages'))[0].args[0],
    false,
  ])

  await page.getByRole('button', { name: 'Stop', exact: true }).click()
  await expect(page.getByTestId('chat-state')).toHaveCount(0)
  await expect(mic).toHaveAttribute('aria-pressed', 'false')
  expect(await calls(page, 'stopChat')).toHaveLength(1)

  // The microphone chosen is remembered by the backend.
  await page.getByRole('button', { name: 'Voice chat settings' }).click()
  const settings = page.getByRole('region', { name: 'Voice chat settings' })
  await settings.getByRole('combobox', { name: 'Microphone' }).selectOption({ label: 'USB Headset Microphone' })
  await expect
    .poll(async () => (await calls(page, 'setChatSettings')).at(-1)?.args[0])
    .toMatchObject({
      input_device: 'usb-headset-in',
    })
  await shot(page, 'chat-settings')

  // Both turns are in the one chat, found by what was said.
  await page.getByRole('searchbox', { name: 'Search chats' }).fill('tomorrow')
  await expect(chats.getByRole('listitem')).toHaveCount(1)
  await expect(log.getByRole('listitem', { name: 'You' })).toHaveCount(2)
})

test('chat: push to talk, with the button held and with Space', async ({ page }) => {
  await start(page, { chatStepMs: 40 })
  const chatModel = await recorded<ModelInfo>(page, 'chatModel')
  const turn = await recorded<{ heard: string }>(page, 'voiceTurn')
  await page.keyboard.press('Control+7')
  await page.getByRole('button', { name: /Open Models/ }).click()
  await page.getByRole('button', { name: /Import/ }).click()
  await page.getByRole('menuitem', { name: /Chat model \(\.gguf file\)/ }).click()
  await expect(page.getByRole('region', { name: 'Chat' }).getByRole('article', { name: chatModel.name })).toBeVisible()
  await page.keyboard.press('Control+7')

  await page.getByRole('radio', { name: 'Push to talk' }).click()
  const mic = page.getByRole('button', { name: 'Voice chat', exact: true })
  await mic.click()
  const state = page.getByTestId('chat-state')
  await expect(state).toHaveText('Hold to talk on Built-in Microphone')
  expect((await calls(page, 'startVoiceChat'))[0].args).toEqual([null, true])

  // Held: talking, and the microphone is heard; let go: the words heard, then the reply.
  const talk = page.getByRole('button', { name: 'Hold to talk' })
  await talk.hover()
  await page.mouse.down()
  await expect(talk).toHaveAttribute('aria-pressed', 'true')
  await expect(state).toHaveText('Talking… (release to send)')
  await expect(page.getByRole('meter', { name: 'Microphone level' })).toHaveAttribute('aria-valuenow', '67')
  await shot(page, 'chat-push-to-talk')
  // Longer than a slip of the finger, which takes no turn.
  await page.waitForTimeout(400)
  await page.mouse.up()
  await expect(talk).toHaveAttribute('aria-pressed', 'false')
  const log = page.getByRole('log', { name: 'Messages' })
  await expect(log.getByRole('listitem', { name: 'You' })).toHaveText(turn.heard)
  await expect(log.getByRole('listitem', { name: 'Reply' })).toContainText('as a chat model writes.')
  await expect(page.getByTestId('turn-latency')).toHaveText('first audio 1.4 s')
  await expect(state).toHaveText('Hold to talk on Built-in Microphone')
  await expect(page.getByRole('list', { name: 'Chats' }).getByRole('listitem', { name: turn.heard })).toBeVisible()

  // Space talks too, even with a button focused (which it does not press).
  await mic.focus()
  await page.keyboard.down(' ')
  await expect(state).toHaveText('Talking… (release to send)')
  await page.waitForTimeout(400)
  await page.keyboard.up(' ')
  await expect(log.getByRole('listitem', { name: 'You' })).toHaveCount(2)
  await expect(state).toHaveText('Hold to talk on Built-in Microphone')
  await expect(mic).toHaveAttribute('aria-pressed', 'true')
  expect((await calls(page, 'setTalking')).map((c) => c.args)).toEqual([[true], [false], [true], [false]])

  await page.getByRole('button', { name: 'Stop', exact: true }).click()
  await expect(state).toHaveCount(0)
  await expect(page.getByRole('radio', { name: 'Push to talk' })).toBeChecked()
})

// Settings → API: the switch that serves the OpenAI-compatible API from the app; and
// Settings → Backend: a remote server for the work.

import { calls, expect, shot, start, test } from './util'

test('the API is switched on where asked, shows where it listens, and says why it cannot', async ({ page }) => {
  await start(page)
  await page.keyboard.press('Control+9')
  const toggle = page.getByRole('switch', { name: 'OpenAI-compatible API' })
  await expect(toggle).toHaveAttribute('aria-checked', 'false')
  await page.getByLabel('API key').fill('s3cret')
  await toggle.click()
  await expect(toggle).toHaveAttribute('aria-checked', 'true')
  await expect(page.getByTestId('api-server-status')).toContainText('Listening at http://127.0.0.1:8080/v1')
  expect((await calls(page, 'startApiServer'))[0].args[0]).toEqual({
    host: '127.0.0.1',
    port: 8080,
    api_key: 's3cret',
  })
  await shot(page, 'settings-api-on')

  await toggle.click()
  await expect(toggle).toHaveAttribute('aria-checked', 'false')
  await page.getByLabel('Port').fill('80')
  await toggle.click()
  await expect(page.getByRole('alert')).toContainText('Permission denied')
  await expect(toggle).toHaveAttribute('aria-checked', 'false')
  await shot(page, 'settings-api-refused')
})

test('the work goes to a remote server with its key, which is never shown again', async ({ page }) => {
  await start(page)
  await page.keyboard.press('Control+9')
  const status = page.getByTestId('remote-backend-status')
  await expect(status).toHaveText('This computer.')
  await page.getByLabel('Remote server URL').fill('http://gpu-box:8000/v1')
  await page.getByLabel('Remote server key').fill('sk-secret')
  await page.getByRole('button', { name: 'Use this server' }).click()
  await expect(status).toContainText('run on http://gpu-box:8000/v1, with an API key')
  expect((await calls(page, 'setRemoteBackend'))[0].args).toEqual(['http://gpu-box:8000/v1', 'sk-secret'])
  await expect(page.getByLabel('Remote server key')).toHaveValue('')
  await shot(page, 'settings-remote-backend')

  await page.getByRole('button', { name: 'Use this computer' }).click()
  await expect(status).toHaveText('This computer.')
})

import type { ModelInfo } from '../../src/bindings'
import { calls, expect, recorded, shot, start, test } from './util'

test('download a model with progress and ETA until installed; cancel another', async ({ page }) => {
  await start(page, { downloadMs: 4000 })
  const models = await recorded<ModelInfo[]>(page, 'models')
  const available = models.filter((m) => m.status !== 'installed')
  expect(available.length, 'the recorded catalog needs two models that are not installed').toBeGreaterThanOrEqual(2)
  const [first, second] = available

  await page.keyboard.press('Control+2')
  await expect(page.getByRole('heading', { name: 'Models' })).toBeVisible()
  for (const m of models) {
    // An import the hub recognised as a catalog model shows on that model's card, not its own.
    const home = models.find((c) => c.source.kind === 'catalog' && c.id === m.catalog_id) ?? m
    const article = page.getByRole('article', { name: home.name, exact: true })
    await expect(article).toBeVisible()
    if (home !== m)
      await expect(article.getByTestId('model-imported')).toContainText(`Your import ${m.id} is this model`)
  }

  const card = page.getByRole('article', { name: first.name, exact: true })
  await card.getByRole('button', { name: `Download ${first.name}`, exact: true }).click()
  const bar = card.getByRole('progressbar', { name: `Downloading ${first.name}` })
  await expect(bar).toBeVisible()
  await expect(card.getByTestId('download-progress')).toContainText(/s left|min left/)
  const value = async () => Number(await bar.getAttribute('aria-valuenow'))
  const before = await value()
  await expect.poll(value).toBeGreaterThan(before)
  await expect(card.getByTestId('download-progress')).toContainText(/ of /)
  await shot(page, 'models-downloading')

  // Start and cancel a second download meanwhile.
  const other = page.getByRole('article', { name: second.name, exact: true })
  await other.getByRole('button', { name: `Download ${second.name}`, exact: true }).click()
  await expect(other.getByRole('progressbar')).toBeVisible()
  await other.getByRole('button', { name: `Cancel download of ${second.name}` }).click()
  await expect(other.getByRole('button', { name: `Download ${second.name}`, exact: true })).toBeVisible()
  await expect(other.getByRole('progressbar')).toHaveCount(0)
  await expect(other.getByRole('alert')).toHaveCount(0)
  expect((await calls(page, 'cancelDownload')).map((c) => c.args[0])).toEqual([second.id])

  // The first one finishes and is installed.
  await expect(card.getByText('Installed')).toBeVisible({ timeout: 15_000 })
  await expect(card.getByRole('progressbar')).toHaveCount(0)
  await expect(card.getByRole('button', { name: `Remove ${first.name}` })).toBeVisible()
  await expect(page.getByTestId('models-summary')).toContainText(
    `${models.filter((m) => m.status === 'installed').length + 1} model`,
  )
  await shot(page, 'models-installed')
})

import { test as base, expect, type Page } from '@playwright/test'
import fs from 'node:fs'
import path from 'node:path'
import type { MockCall, MockConfig } from '../../src/mocks/control'

export const SHOTS = path.resolve(import.meta.dirname, '../../test-results')

/** Fails a test whose page threw an uncaught error. */
export const test = base.extend<{ pageErrors: string[] }>({
  pageErrors: [
    async ({ page }, use) => {
      const errors: string[] = []
      page.on('pageerror', (e) => errors.push(e.message))
      await use(errors)
      expect(errors, 'uncaught errors in the page').toEqual([])
    },
    { auto: true },
  ],
})
export { expect }

export async function start(page: Page, config: Partial<MockConfig> = {}): Promise<void> {
  await page.addInitScript((c) => {
    ;(window as unknown as { __izwiMockConfig: unknown }).__izwiMockConfig = c
  }, config)
  await page.goto('/')
  // A recording that is missing stops the stand-ins from loading: no page.
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible()
}

export async function calls(page: Page, cmd?: string): Promise<MockCall[]> {
  const all = await page.evaluate(() => window.__izwiMock!.calls)
  return cmd ? all.filter((c) => c.cmd === cmd) : all
}

export async function recorded<T>(page: Page, key: string): Promise<T> {
  return page.evaluate((k) => window.__izwiMock!.recorded[k], key) as Promise<T>
}

export async function shot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true })
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) })
}

export const basename = (p: string) =>
  p
    .replace(/[\\/]+$/, '')
    .split(/[\\/]/)
    .pop() ?? p

/**
 * End-to-end test of the dashboard's live updates: conditional polling (If-None-Match → 304 while nothing changed)
 * and new data shown without a reload, on the built dashboard (dist/dashboard; `npm run build` first) in real
 * headless Chromium against the real collector on a real SQLite store (startTestCollector), fed through the report
 * route while the page is open. The page polls every 300 ms here (`window.tailguardRefreshMs`), 10 s in production.
 */
import { describe, expect, it } from 'vitest'
import { browserTestsRun, openPage, startTestCollector, useBrowserAndBackend } from '../helpers/dashboard.js'
import type { TestCollector } from '../helpers/dashboard.js'
import { makeReport } from '../helpers/reports.js'

const RUN = browserTestsRun('dashboard live-update')
const TOKEN = 'live-read-token-0123456789abcdef'
const AGENT = { id: 'live-agent', node: 'n0' }

/** One 5 s report of `service` on `replica`, ending now. */
const series = (service: string, replica: string) =>
  makeReport({
    seq: 1,
    startMs: Date.now() - 5000,
    series: [{ labels: { service, model: 'm', replica }, samples: { total: [20_000, 30_000] }, ok: 2 }],
  }).series

describe.skipIf(!RUN)('live updates by conditional polling (headless Chromium)', () => {
  const ctx = useBrowserAndBackend<TestCollector & { url: string }>(async () => {
    const c = await startTestCollector({
      tokens: [{ token: TOKEN, scope: 'read' }],
      agentToken: 'live-agent-token-0123456789',
    })
    const url = await c.app.listen({ host: '127.0.0.1', port: 0 })
    return Object.assign(c, { url })
  })

  it('shows a new replica without a reload, after 304s while nothing changed', async () => {
    const c = ctx.backend
    await c.report(AGENT, Date.now() - 5000, 5000, { series: series('live', 'r0') })
    const { page, problems } = await openPage(ctx.browser)
    await page.addInitScript('window.tailguardRefreshMs = 300')
    const statuses: number[] = []
    let unconditional = 0
    page.on('response', (r) => {
      if (!new URL(r.url()).pathname.endsWith('/api/v1/services')) return
      statuses.push(r.status())
      if (r.request().headers()['if-none-match'] === undefined) unconditional++
    })
    let navigations = 0
    page.on('framenavigated', () => navigations++)
    await page.goto(`${c.url}/#token=${encodeURIComponent(TOKEN)}&/services`)
    const replicas = page.locator('tr[data-service="live"] td').nth(3)
    await expect.poll(() => replicas.textContent()).toBe('1')
    // Nothing changes: the polls are answered 304 and the page stays as it is.
    await expect.poll(() => statuses.filter((s) => s === 304).length).toBeGreaterThanOrEqual(3)
    const navigationsBefore = navigations
    await page.evaluate('window.liveMarker = 1')

    await c.report(AGENT, Date.now() - 5000, 5000, { series: series('live', 'r1') })
    await expect.poll(() => replicas.textContent()).toBe('2')
    await c.report(AGENT, Date.now() - 5000, 5000, { series: series('later', 'r0') })
    await page.locator('tr[data-service="later"]').waitFor()

    // No reload: the same document (its marker is still there) and no navigation since.
    expect(await page.evaluate('window.liveMarker')).toBe(1)
    expect(navigations).toBe(navigationsBefore)
    // Only the first request of the page went without If-None-Match; the rest were conditional.
    expect(unconditional).toBe(1)
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(3)
    expect(problems).toEqual([])
    await page.context().close()
  })
})

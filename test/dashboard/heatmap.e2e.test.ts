/**
 * End-to-end tests of the service page's latency heatmap, the GPU page's telemetry charts and dark mode, on the
 * built dashboard (dist/dashboard; `npm run build` first) in real headless Chromium against the backend of
 * test/helpers/dashboard-backend.ts (the real collector on a real SQLite store).
 *
 * Set TG_SCREENSHOT_DIR to keep a screenshot of each page.
 */
import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { gpuKey } from '../../dashboard/src/lib/gpu-transforms.js'
import type { GpuTimeseriesResponse } from '../../dashboard/src/lib/gpu-types.js'
import type { HeatmapResponse } from '../../dashboard/src/lib/heatmap.js'
import {
  FLEET,
  GPUS,
  RUN,
  SLOS,
  openPage,
  screenshot,
  useDashboardHarness,
} from '../helpers/dashboard-backend.js'
import { seriousViolations } from '../helpers/dashboard.js'

/** Points drawn by a recharts line path: one per move-to and one per segment after it. */
const pathPoints = (d: string | null): number => (d ?? '').match(/[MLC]/g)?.length ?? 0

describe.skipIf(!RUN)('latency heatmap, GPU telemetry and dark mode (headless Chromium)', () => {
  const h = useDashboardHarness()
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${h.backend.url}/api/v1/${path}`, {
      headers: { authorization: `Bearer ${h.backend.token}` },
    })
    expect(res.status, path).toBe(200)
    return (await res.json()) as T
  }
  const signIn = (page: Page, route: string) =>
    page.goto(`${h.backend.url}/#token=${encodeURIComponent(h.backend.token)}&${route}`)

  it('draws one heatmap cell per step and band with samples, with the counts the API gives', async () => {
    const { page, problems } = await openPage(h.browser)
    const request = page.waitForRequest((r) => r.url().includes('/api/v1/heatmap?'))
    await signIn(page, `/service/${FLEET.live.service}`)
    const query = new URL((await request).url()).search
    const heatmap = page.locator('[data-chart="heatmap"]')
    await heatmap.locator('rect.heatmap-cell').first().waitFor()
    // The same query, answered again: the data ended before the page loaded, so the answer is the same.
    const res = await api<HeatmapResponse>(`heatmap${query}`)
    expect(res.phase).toBe('total')
    expect(res.bands.length).toBeGreaterThan(2)
    const expected = res.points.flatMap((p) =>
      p.counts.flatMap((count, band) => (count > 0 ? [`${p.t}|${band}|${count}`] : [])),
    )
    const drawn = await heatmap
      .locator('rect.heatmap-cell')
      .evaluateAll((rs) =>
        rs.map(
          (r) => `${r.getAttribute('data-t')}|${r.getAttribute('data-band')}|${r.getAttribute('data-count')}`,
        ),
      )
    expect(drawn.sort()).toEqual(expected.sort())
    // 30 minutes of two replicas × 30 requests per 10 s: every sample is in some cell.
    const total = res.points.reduce((n, p) => n + p.count, 0)
    expect(total).toBe(180 * 2 * 30)
    expect(res.points.every((p) => p.counts.reduce((a, b) => a + b, 0) === p.count)).toBe(true)
    // Axes, legend and the hover line.
    expect(await heatmap.locator('text.axis-label').count()).toBeGreaterThan(5)
    expect(await heatmap.locator('.heatmap-legend-stop').last().textContent()).toBe(String(res.maxCount))
    const cell = heatmap.locator('rect.heatmap-cell').nth(3)
    await cell.hover()
    const tip = heatmap.locator('.heatmap-tip[data-tip="cell"]')
    await expect.poll(() => tip.count()).toBe(1)
    expect(await tip.textContent()).toContain(`: ${await cell.getAttribute('data-count')} samples`)
    await screenshot(page, 'heatmap-service')
    expect(await seriousViolations(page)).toEqual([])
    expect(problems).toEqual([])
  })

  it('splits the heatmap per replica, node and version, each with the counts the API gives for its selector', async () => {
    const { page, problems } = await openPage(h.browser)
    const queries: string[] = []
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/heatmap?')) queries.push(new URL(r.url()).search)
    })
    await signIn(page, `/service/${FLEET.live.service}?split=replica`)
    /** The cells a heatmap draws, as `t|band|count`. */
    const drawn = (split: string) =>
      page
        .locator(`[data-chart="heatmap"][data-split="${split}"] rect.heatmap-cell`)
        .evaluateAll((rs) =>
          rs.map(
            (r) =>
              `${r.getAttribute('data-t')}|${r.getAttribute('data-band')}|${r.getAttribute('data-count')}`,
          ),
        )
    /** The API's cells for the query the page sent for `label=value` (the data ended before the page loaded). */
    const expected = async (label: string, value: string) => {
      const query = queries.find((q) => new URLSearchParams(q).get(label) === value)
      expect(query, `${label}=${value}`).toBeDefined()
      const res = await api<HeatmapResponse>(`heatmap${query}`)
      return {
        total: res.points.reduce((n, p) => n + p.count, 0),
        cells: res.points.flatMap((p) =>
          p.counts.flatMap((count, band) => (count > 0 ? [`${p.t}|${band}|${count}`] : [])),
        ),
      }
    }
    const check = async (label: string, values: readonly string[]) => {
      let total = 0
      for (const value of values) {
        const split = `${label}=${value}`
        await page
          .locator(`[data-chart="heatmap"][data-split="${split}"] rect.heatmap-cell`)
          .first()
          .waitFor()
        const want = await expected(label, value)
        expect((await drawn(split)).sort(), split).toEqual(want.cells.sort())
        const panel = page.locator('section.panel', { has: page.locator(`[data-split="${split}"]`) })
        expect(await panel.locator('h2').textContent()).toContain(`${label} ${value}`)
        total += want.total
      }
      // One heatmap per value, and together they hold every sample of the service: 2 replicas × 180 × 30.
      expect(await page.locator('[data-chart="heatmap"]').count()).toBe(values.length)
      expect(total).toBe(180 * 2 * 30)
    }
    // The live service's replicas chat-0 and chat-1 run on node-0 and node-1, both version 1.
    await check('replica', FLEET.live.replicas)
    await page
      .getByRole('group', { name: 'split', exact: true })
      .getByRole('button', { name: 'per node' })
      .click()
    expect(page.url()).toContain('split=node')
    await check('node', ['node-0', 'node-1'])
    await page
      .getByRole('group', { name: 'split', exact: true })
      .getByRole('button', { name: 'per version' })
      .click()
    await check('version', ['1'])
    // Back to one heatmap for the service.
    await page.getByRole('group', { name: 'split', exact: true }).getByRole('button', { name: 'all' }).click()
    await expect.poll(() => page.locator('[data-chart="heatmap"]:not([data-split])').count()).toBe(1)
    expect(page.url()).not.toContain('split=')
    await screenshot(page, 'heatmap-split')
    expect(await seriousViolations(page)).toEqual([])
    expect(problems).toEqual([])
  })

  it('draws each GPU’s power, temperature, clocks and tensor activity with the API’s points', async () => {
    const { page, problems } = await openPage(h.browser)
    await signIn(page, '/gpus')
    const series = async (field: string) =>
      api<GpuTimeseriesResponse>(`gpus/timeseries?field=${field}&from=-1h`)
    const power = await series('powerW')
    const whole = power.gpus.find((g) => g.uuid === GPUS.wholeGpu.uuid)!
    const key = gpuKey(whole)
    for (const [chart, field] of [
      ['gpu-power', 'powerW'],
      ['gpu-temperature', 'temperatureC'],
      ['gpu-clocks', 'smClockMhz'],
      ['gpu-tensor', 'tensorActivePct'],
    ] as const) {
      const line = page.locator(`[data-chart="${chart}"][data-gpu="${key}"] path.recharts-line-curve`).first()
      await line.waitFor({ state: 'attached' })
      const points = (await series(field)).gpus.find((g) => gpuKey(g) === key)!.points
      // 30 minutes of reports in buckets of about a minute.
      expect(points.length, field).toBeGreaterThan(25)
      // The page may have loaded a bucket fewer or more than this later answer at the edges of the hour.
      expect(Math.abs(pathPoints(await line.getAttribute('d')) - points.length), field).toBeLessThanOrEqual(1)
    }
    // The clocks chart has both the SM and the memory clock.
    expect(
      await page.locator(`[data-chart="gpu-clocks"][data-gpu="${key}"] path.recharts-line-curve`).count(),
    ).toBe(2)
    // The MIG instance reports only utilization and memory: its telemetry panel says so instead of drawing.
    const mig = power.gpus.find((g) => g.uuid === GPUS.mig.uuid)
    expect(mig).toBeUndefined()
    const migPanel = page.locator('section[aria-label$="· telemetry"]', { hasText: 'MIG' })
    await expect.poll(() => migPanel.getAttribute('data-state')).toBe('empty')
    // The hover tooltip reads the API's value.
    const powerChart = page.locator(`[data-chart="gpu-power"][data-gpu="${key}"]`)
    await powerChart.scrollIntoViewIfNeeded()
    const box = (await powerChart.locator('.recharts-surface').boundingBox())!
    // Three quarters across the last hour: inside the 30 minutes with reports.
    await page.mouse.move(box.x + box.width * 0.75, box.y + box.height / 2)
    await expect.poll(() => powerChart.locator('.recharts-tooltip-wrapper').textContent()).toContain('413 W')
    await screenshot(page, 'heatmap-gpus')
    expect(await seriousViolations(page)).toEqual([])
    expect(problems).toEqual([])
  })

  it('follows a dark system colour scheme and keeps axe-core contrast checks passing', async () => {
    const { page, problems } = await openPage(h.browser)
    await page.emulateMedia({ colorScheme: 'dark' })
    await signIn(page, '/')
    const found: Record<string, string[]> = {}
    const routes: Record<string, string> = {
      fleet: '#/',
      service: `#/service/${FLEET.live.service}`,
      slo: `#/slos/${SLOS.latency}`,
      gpus: '#/gpus',
      alerts: '#/alerts',
    }
    for (const [name, route] of Object.entries(routes)) {
      await page.evaluate(`window.location.hash = ${JSON.stringify(route)}`)
      await page.locator('main section.panel').first().waitFor()
      await expect
        .poll(() => page.locator('main section.panel[data-state="loading"]').count(), { timeout: 15_000 })
        .toBe(0)
      if (name === 'service') await page.locator('rect.heatmap-cell').first().waitFor()
      await screenshot(page, `dark-${name}`)
      found[name] = await seriousViolations(page)
    }
    expect(found).toEqual(Object.fromEntries(Object.keys(routes).map((k) => [k, []])))
    // The page really is dark: the variables switched.
    const bg = await page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor')
    expect(bg).toBe('rgb(15, 19, 26)')
    await page.emulateMedia({ colorScheme: 'light' })
    expect(await page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor')).toBe(
      'rgb(245, 246, 248)',
    )
    expect(problems).toEqual([])
  })
})

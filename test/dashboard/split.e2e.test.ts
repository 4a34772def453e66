/**
 * End-to-end test of the service page's split (one line per replica, node or version on every time-series chart),
 * on the built dashboard (dist/dashboard; `npm run build` first) in real headless Chromium against the real collector
 * on a real SQLite store (startTestCollector), fed through the report route: a service with 3 replicas on 2 nodes
 * and 2 versions, each with its own latency, rate and errors.
 */
import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import type { TimeseriesResponse } from '../../dashboard/src/lib/api-types.js'
import type { RequestsResponse } from '../../dashboard/src/lib/signals.js'
import {
  browserTestsRun,
  openPage,
  screenshotter,
  seriousViolations,
  startTestCollector,
  useBrowserAndBackend,
} from '../helpers/dashboard.js'
import type { TestCollector } from '../helpers/dashboard.js'
import { latenciesUs, makeReport, rng } from '../helpers/reports.js'

const RUN = browserTestsRun('dashboard split')
const TOKEN = 'split-read-token-0123456789abcdef'
const SERVICE = 'splitsvc'
const screenshot = screenshotter()

/** 3 replicas on 2 nodes and 2 versions; per 10 s interval each serves `n` requests (`errors` of them fail). */
const REPLICAS = [
  { replica: 'r-a', node: 'n1', version: 'v1', medianUs: 20_000, n: 10, errors: 0 },
  { replica: 'r-b', node: 'n1', version: 'v2', medianUs: 60_000, n: 20, errors: 1 },
  { replica: 'r-c', node: 'n2', version: 'v2', medianUs: 120_000, n: 40, errors: 4 },
] as const
const INTERVAL_MS = 10_000
const INTERVALS = 90

/** The values each split draws, in name order. */
const SPLITS = {
  replica: ['r-a', 'r-b', 'r-c'],
  node: ['n1', 'n2'],
  version: ['v1', 'v2'],
} as const

type Series = ReadonlyArray<[string, ReadonlyArray<[number, number]>]>

describe.skipIf(!RUN)('service page split per replica, node and version (headless Chromium)', () => {
  const ctx = useBrowserAndBackend<TestCollector & { url: string }>(async () => {
    const c = await startTestCollector({
      tokens: [{ token: TOKEN, scope: 'read' }],
      agentToken: 'split-agent-token-0123456789',
    })
    const next = rng(7)
    const end = Math.floor(Date.now() / INTERVAL_MS) * INTERVAL_MS
    for (let i = INTERVALS; i >= 1; i--) {
      const startMs = end - i * INTERVAL_MS
      for (const node of ['n1', 'n2']) {
        const mine = REPLICAS.filter((r) => r.node === node)
        const series = makeReport({
          seq: 1,
          startMs,
          series: mine.map((r) => ({
            labels: { service: SERVICE, model: 'm', replica: r.replica, node: r.node, version: r.version },
            samples: { total: latenciesUs(next, r.n, r.medianUs) },
            ok: r.n - r.errors,
            error: r.errors,
            ...(r.errors > 0 ? { errorClasses: { timeout: r.errors } } : {}),
          })),
        }).series
        await c.report({ id: `agent-${node}`, node }, startMs, INTERVAL_MS, { series })
      }
    }
    const url = await c.app.listen({ host: '127.0.0.1', port: 0 })
    return Object.assign(c, { url })
  }, 60_000)

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${ctx.backend.url}/api/v1/${path}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })
    expect(res.status, path).toBe(200)
    return (await res.json()) as T
  }
  const drawn = async (page: Page, chart: string, split: string): Promise<Series> => {
    const el = page.locator(`[data-chart="${chart}"][data-split="${split}"]`)
    await el.waitFor()
    return JSON.parse((await el.getAttribute('data-series')) ?? '[]') as Series
  }
  const lines = (page: Page, chart: string) =>
    page.locator(`[data-chart="${chart}"] path.recharts-line-curve`).count()

  it('draws one line per value on every chart, with the points the API answers for that selector', async () => {
    const { page, problems } = await openPage(ctx.browser)
    // The range of the page's own answers (relative ranges end at the last whole 10 s), to ask the API the same.
    const ranges = new Map<string, { from: string; to: string }>()
    page.on('response', (r) => {
      const u = new URL(r.url())
      if (!/\/api\/v1\/(timeseries|requests)$/.test(u.pathname) || r.status() !== 200) return
      void r.json().then(
        (b: { from: string; to: string }) => ranges.set(u.search, { from: b.from, to: b.to }),
        () => undefined,
      )
    })
    await page.goto(`${ctx.backend.url}/#token=${encodeURIComponent(TOKEN)}&/service/${SERVICE}`)
    // No split: the charts as they were, one line per quantile and one heatmap.
    const latency = page.locator('[data-chart="latency"]:not([data-split])')
    await latency.locator('path.recharts-line-curve').first().waitFor()
    expect(await lines(page, 'latency')).toBe(2)
    expect(await page.locator('[data-chart="rate"]:not([data-split])').count()).toBe(1)
    const group = page.getByRole('group', { name: 'split' })

    for (const [label, values] of Object.entries(SPLITS)) {
      await group.getByRole('button', { name: `per ${label}` }).click()
      expect(page.url()).toContain(`split=${label}`)
      for (const chart of ['latency', 'rate', 'error-rate']) {
        const series = await drawn(page, chart, label)
        expect(
          series.map(([name]) => name),
          `${chart} per ${label}`,
        ).toEqual(values)
        await expect.poll(() => lines(page, chart), { message: `${chart} per ${label}` }).toBe(values.length)
        const legend = page.locator(`section.panel:has([data-chart="${chart}"]) .recharts-legend-item-text`)
        expect(await legend.allTextContents()).toEqual(values)
      }
      await expect.poll(() => page.locator('[data-chart="heatmap"]').count()).toBe(values.length)
      await screenshot(page, `split-${label}`)
      expect(await seriousViolations(page), label).toEqual([])
    }

    // The p99 and rate lines of one replica are what /api/v1/timeseries answers with replica= for the same range.
    await group.getByRole('button', { name: 'per replica' }).click()
    const p99 = await drawn(page, 'latency', 'replica')
    const rate = await drawn(page, 'rate', 'replica')
    const tsKey = [...ranges.keys()].find((k) => k.includes('replica=r-b') && k.includes('quantiles='))
    expect(tsKey, 'the page asked for replica r-b').toBeDefined()
    const range = ranges.get(tsKey!)!
    const ts = await api<TimeseriesResponse>(
      `timeseries?service=${SERVICE}&phase=total&quantiles=0.5,0.99&replica=r-b&from=${range.from}&to=${range.to}`,
    )
    expect(ts.points.length).toBeGreaterThan(10)
    const line = (s: Series, name: string) => s.find(([n]) => n === name)![1]
    expect(line(p99, 'r-b')).toEqual(
      ts.points.filter((p) => p.count > 0).map((p) => [Date.parse(p.t), p.quantiles['0.99']]),
    )
    // The rate line has a point per step of the range (0 where the API has no bucket: no request), but the last,
    // still filling one, as the unsplit chart draws it.
    const toMs = Date.parse(ts.to)
    const byT = new Map(ts.points.map((p) => [Date.parse(p.t), p.ratePerSecond]))
    const steps: Array<[number, number]> = []
    for (
      let t = Math.floor(Date.parse(ts.from) / ts.stepMs) * ts.stepMs;
      t + ts.stepMs <= toMs;
      t += ts.stepMs
    )
      steps.push([t, byT.get(t) ?? 0])
    expect(line(rate, 'r-b')).toEqual(steps)
    expect(line(rate, 'r-b').filter(([, v]) => v > 0).length).toBeGreaterThan(10)
    // The replicas differ: r-c is slower and busier than r-a.
    const mean = (pts: ReadonlyArray<[number, number]>) => pts.reduce((s, [, v]) => s + v, 0) / pts.length
    expect(mean(line(p99, 'r-c'))).toBeGreaterThan(mean(line(p99, 'r-a')) * 2)
    expect(mean(line(rate, 'r-c'))).toBeGreaterThan(mean(line(rate, 'r-a')) * 2)

    // The error line of version v2 is what /api/v1/requests answers with version=v2.
    await group.getByRole('button', { name: 'per version' }).click()
    const errors = await drawn(page, 'error-rate', 'version')
    const reqKey = [...ranges.keys()].find((k) => k.includes('version=v2') && !k.includes('quantiles='))
    const reqRange = ranges.get(reqKey!)!
    const req = await api<RequestsResponse>(
      `requests?service=${SERVICE}&version=v2&from=${reqRange.from}&to=${reqRange.to}`,
    )
    expect(line(errors, 'v2')).toEqual(req.points.map((p) => [Date.parse(p.t), p.errorRatio]))
    expect(line(errors, 'v1').every(([, v]) => v === 0)).toBe(true)

    // Back to the whole service: the charts as they were.
    await group.getByRole('button', { name: 'all' }).click()
    await expect.poll(() => page.locator('[data-split]').count()).toBe(0)
    expect(page.url()).not.toContain('split=')
    expect(await lines(page, 'latency')).toBe(2)
    expect(problems).toEqual([])
    await page.context().close()
  }, 120_000)
})

/**
 * End-to-end test of the built dashboard (dist/dashboard; `npm run build` first) in real headless Chromium,
 * against the backend of test/helpers/dashboard-h.backend.ts (the real collector on a real SQLite store).
 *
 * Set TG_SCREENSHOT_DIR to keep screenshots of each page for a look at the layout.
 */
import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { formatUnit } from '../../dashboard/src/lib/gpu-transforms.js'
import { dataSeconds } from '../../dashboard/src/lib/transforms.js'
import type { BreakdownResponse, TimeseriesResponse } from '../../dashboard/src/lib/api-types.js'
import {
  FLEET,
  GPUS,
  RUN,
  SLOS,
  useDashboardHarness,
  openPage as openPageIn,
  screenshot as shot,
  startEmptyBackend,
} from '../helpers/dashboard-backend.js'

/** The rows of the breakdown table for these phases: total first, then the others in API order. */
const tableOrder = (phases: readonly string[]) => ['total', ...phases.filter((p) => p !== 'total')]

/** The token the dashboard keeps in the page's sessionStorage (evaluated in the browser, hence the string). */
const storedToken = (page: Page) =>
  page.evaluate<string | null>("window.sessionStorage.getItem('tailguard.token')")

// ---------------------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------------------

describe.skipIf(!RUN)('dashboard end to end (headless Chromium)', () => {
  const h = useDashboardHarness()
  /** A new page that records every URL it requests and every console error it logs. */
  const openPage = () => openPageIn(h.browser)

  it('takes the token from the fragment, lists services, and shows a service with charts', async () => {
    const { page, urls, problems } = await openPage()
    await page.goto(`${h.backend.url}/#token=${encodeURIComponent(h.backend.token)}&/services`)

    // The list: both services with figures, the token gone from the address bar and from every request URL.
    const live = page.locator(`tr[data-service="${FLEET.live.service}"]`)
    const stale = page.locator(`tr[data-service="${FLEET.stale.service}"]`)
    await live.waitFor()
    await stale.waitFor()
    await expect.poll(() => live.locator('td.num').nth(1).textContent()).toMatch(/\/s$/)
    await expect.poll(() => live.locator('td.num').nth(4).textContent()).toMatch(/ms$/)
    expect(await live.textContent()).toContain(FLEET.live.model)
    expect(await live.locator('td.num').first().textContent()).toBe(String(FLEET.live.replicas.length))
    expect(await stale.locator('td.num').last().textContent()).toContain('2 h ago')
    expect(page.url()).not.toContain(h.backend.token)
    expect(page.url()).not.toContain('token')
    await expect.poll(() => storedToken(page)).toBe(h.backend.token)
    expect(await page.locator('.topbar .brand').textContent()).toContain('tailguard')
    await shot(page, '1-list')

    // The detail page of the live service: latency chart with a drawn line, breakdown, status tiles.
    await live.locator('a.service-link').click()
    await page.waitForURL(/#\/service\/chat\?model=llama-3-8b$/)
    await page
      .locator('[data-chart="latency"] svg path.recharts-line-curve')
      .first()
      .waitFor({ state: 'attached' })
    const lines = await page.locator('[data-chart="latency"] svg path.recharts-line-curve').count()
    expect(lines).toBe(2) // p50 and p99
    const d = await page
      .locator('[data-chart="latency"] svg path.recharts-line-curve')
      .first()
      .getAttribute('d')
    expect(d?.length ?? 0).toBeGreaterThan(100)
    await page.locator('[data-chart="rate"] svg path').first().waitFor({ state: 'attached' })
    const breakdown = page.locator('[data-chart="breakdown"]')
    await breakdown.waitFor()
    const phases = await breakdown.locator('table.phase-table tbody td:first-child').allTextContents()
    expect(phases).toEqual(tableOrder(FLEET.live.phases))
    expect(await breakdown.locator('.recharts-bar-rectangle').count()).toBeGreaterThanOrEqual(3)
    const tiles = page.locator('.tiles[data-state="ready"]')
    await tiles.waitFor()
    // The request-rate tile matches the API for the same range, over the time with data (30 min of reports on
    // the 1 h range: a tile dividing by the whole hour would read half).
    const apiGet = async (path: string): Promise<unknown> =>
      (
        await fetch(`${h.backend.url}/api/v1/${path}`, {
          headers: { authorization: `Bearer ${h.backend.token}` },
        })
      ).json()
    const q = `service=${FLEET.live.service}&model=${FLEET.live.model}&from=-1h&to=now`
    const apiCounts = ((await apiGet(`breakdown?${q}`)) as BreakdownResponse).requests
    const apiSeries = (await apiGet(`timeseries?${q}&phase=total&quantiles=0.5`)) as TimeseriesResponse
    const apiRate = (apiCounts.ok + apiCounts.error + apiCounts.shed) / dataSeconds(apiSeries)!
    expect(apiRate).toBeCloseTo(FLEET.live.replicas.length * 3, 0) // 30 requests per 10 s per replica
    const rateTile = tiles.locator('.tile', { hasText: 'requests' }).locator('.tile-hint')
    await expect
      .poll(async () => Number(/([\d.]+)\/s/.exec((await rateTile.textContent()) ?? '')?.[1]))
      .toBeGreaterThan(0)
    const tileRate = Number(/([\d.]+)\/s/.exec((await rateTile.textContent()) ?? '')?.[1])
    expect(Math.abs(tileRate - apiRate) / apiRate).toBeLessThan(0.02)
    expect(await tiles.textContent()).toMatch(/errors\d/)
    expect(await tiles.textContent()).toContain(`${FLEET.live.errorClass}:`)
    await shot(page, '2-detail')

    // Pickers: phase and quantiles change the chart and the address.
    await page.selectOption('select[aria-label="phase"]', 'decode')
    await page.waitForURL(/phase=decode/)
    await expect.poll(() => page.locator('section[aria-label="Latency: decode"]').count()).toBe(1)
    await expect.poll(() => tiles.textContent()).toContain('decode p99') // the tiles follow the phase
    expect(await tiles.textContent()).not.toContain('total p99')
    await page.locator('[role="group"][aria-label="quantiles"] button', { hasText: 'p99.9' }).click()
    await page.waitForURL(/q=0.5%2C0.99%2C0.999|q=0.5,0.99,0.999/)
    await expect
      .poll(() => page.locator('[data-chart="latency"] svg path.recharts-line-curve').count())
      .toBe(3)
    expect(await breakdown.locator('thead').textContent()).toContain('p99.9')
    await page.locator('[role="group"][aria-label="time range"] button', { hasText: '5m' }).click()
    await page.waitForURL(/range=5m/)
    await expect
      .poll(() => page.locator('section[aria-label="Latency: decode"] .panel-sub').textContent())
      .toBe('quantiles per 10 s bucket')
    await page
      .locator('[data-chart="latency"] svg path.recharts-line-curve')
      .first()
      .waitFor({ state: 'attached' })

    // No request ever carried the token in its URL; no script errors.
    expect(urls.filter((u) => u.includes(h.backend.token))).toEqual([])
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('shows the empty state for a range without data, and the chart for one with data', async () => {
    const { page, problems } = await openPage()
    await page.goto(`${h.backend.url}/#token=${encodeURIComponent(h.backend.token)}&/services`)
    await page.locator(`tr[data-service="${FLEET.stale.service}"] a.service-link`).click()
    await page.waitForURL(/#\/service\/embed/)
    const latency = page.locator('section[aria-label="Latency: total"]')
    await expect.poll(() => latency.getAttribute('data-state')).toBe('empty')
    expect(await latency.textContent()).toContain('No data in this range')
    await expect.poll(() => latency.textContent()).toContain('last report 2 h ago')
    expect(await page.locator('section[aria-label="Breakdown by phase"]').textContent()).toContain(
      'No data in this range',
    )
    await shot(page, '3-empty')
    await page.locator('[role="group"][aria-label="time range"] button', { hasText: '6h' }).click()
    await expect.poll(() => latency.getAttribute('data-state')).toBe('ready')
    await page
      .locator('[data-chart="latency"] svg path.recharts-line-curve')
      .first()
      .waitFor({ state: 'attached' })
    const phases = await page.locator('table.phase-table tbody td:first-child').allTextContents()
    expect(phases).toEqual(tableOrder(FLEET.stale.phases))
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('lists the SLOs with their budget bars and shows one SLO with its charts', async () => {
    const { page, problems } = await openPage()
    const fromApi = async (name: string) => {
      const res = await fetch(`${h.backend.url}/api/v1/slos/${name}`, {
        headers: { authorization: `Bearer ${h.backend.token}` },
      })
      expect(res.status).toBe(200)
      return (await res.json()) as {
        sli: number
        budgetRemaining: number
        alerts: Array<{ tier: string }>
        burnDown: unknown[]
      }
    }
    await page.goto(`${h.backend.url}/#token=${encodeURIComponent(h.backend.token)}`)
    await page.locator('nav[aria-label="main"] a', { hasText: 'SLOs' }).click()
    await page.waitForURL(/#\/slos$/)
    await expect
      .poll(() => page.locator('section[aria-label="slos"]').getAttribute('data-state'))
      .toBe('ready')
    const rows = page.locator('tr[data-slo]')
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-slo')))).toEqual([
      SLOS.latency,
      SLOS.availability,
    ])

    // Each row's budget bar shows the API's remaining ratio: the latency SLO has budget left, the
    // availability SLO (timeouts on about 0.5% of requests against 0.1% allowed) has overspent it.
    for (const name of [SLOS.latency, SLOS.availability]) {
      const api = await fromApi(name)
      const row = page.locator(`tr[data-slo="${name}"]`)
      const budget = row.locator('.budget')
      expect(Number(await budget.getAttribute('data-remaining'))).toBe(api.budgetRemaining)
      const width = await budget
        .locator('.budget-fill')
        .evaluate((el) => (el as unknown as { style: { width: string } }).style.width)
      expect(parseFloat(width)).toBeCloseTo(Math.min(100, Math.max(0, api.budgetRemaining * 100)), 3)
      expect(await row.locator('.burn').count()).toBe(api.alerts.length)
    }
    const latency = await fromApi(SLOS.latency)
    expect(latency.budgetRemaining).toBeGreaterThan(0)
    expect(latency.budgetRemaining).toBeLessThan(1)
    expect(await page.locator(`tr[data-slo="${SLOS.latency}"] .budget`).getAttribute('data-tone')).not.toBe(
      'bad',
    )
    expect((await fromApi(SLOS.availability)).budgetRemaining).toBeLessThan(0)
    expect(await page.locator(`tr[data-slo="${SLOS.availability}"] .budget`).getAttribute('data-tone')).toBe(
      'bad',
    )
    const latencyRow = page.locator(`tr[data-slo="${SLOS.latency}"]`)
    expect(await latencyRow.textContent()).toContain('latency ≤ 450 ms')
    expect(await latencyRow.textContent()).toContain('99%')
    expect(await latencyRow.textContent()).toContain('30d')
    await shot(page, '6-slos')

    // The detail page: tiles, the burn-down chart drawn, burn rates per tier, the tier table.
    await latencyRow.locator('a.slo-link').click()
    await page.waitForURL(/#\/slos\/chat-latency$/)
    await page.locator('[data-chart="burn-down"] svg path.recharts-area-area').waitFor({ state: 'attached' })
    const area = await page.locator('[data-chart="burn-down"] svg path.recharts-area-curve').getAttribute('d')
    expect(area?.length ?? 0).toBeGreaterThan(100)
    expect(latency.burnDown.length).toBeGreaterThan(1)
    await page
      .locator('[data-chart="burn-rates"] .recharts-bar-rectangle')
      .first()
      .waitFor({ state: 'attached' })
    const tiers = await page
      .locator('table.tier-table tbody tr')
      .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-tier')))
    expect(tiers).toEqual(latency.alerts.map((a) => a.tier))
    expect(Number(await page.locator('.tiles .budget').getAttribute('data-remaining'))).toBe(
      latency.budgetRemaining,
    )
    expect(await page.locator('.tiles').textContent()).toContain(
      `${String(Number((latency.sli * 100).toPrecision(5)))}%`,
    )
    expect(await page.locator('[data-forecast]').textContent()).not.toContain('Not evaluated')
    await shot(page, '7-slo-detail')

    // Without SLOs, the list says how to add some.
    await page.goto(`${h.backend.noSlosUrl!}/#token=${encodeURIComponent(h.backend.token)}&/slos`)
    const empty = page.locator('section[aria-label="slos"]')
    await expect.poll(() => empty.getAttribute('data-state')).toBe('empty')
    expect(await empty.textContent()).toBe('No SLOs defined — see the README to add some')
    await shot(page, '8-no-slos')

    // An unknown SLO has its own error state.
    await page.goto(`${h.backend.url}/#/slos/no-such-slo`)
    await expect
      .poll(() => page.locator('main [role="alert"]').textContent())
      .toBe('No SLO is named no-such-slo.')
    expect(problems.filter((p) => !p.includes('404'))).toEqual([])
    await page.context().close()
  })

  it('asks for a token when there is none, and shows the error for a bad one', async () => {
    const { page } = await openPage()
    await page.goto(`${h.backend.url}/`)
    const form = page.locator('form[aria-label="sign in"]')
    await form.waitFor()
    expect(await page.locator('tr[data-service]').count()).toBe(0)
    await shot(page, '4-login')

    await form.locator('input#token').fill('not-the-token')
    await form.locator('button[type="submit"]').click()
    await expect.poll(() => form.locator('[role="alert"]').textContent()).toContain('invalid bearer token')
    expect(await storedToken(page)).toBeNull()
    await shot(page, '5-bad-token')

    await form.locator('input#token').fill(h.backend.token)
    await form.locator('button[type="submit"]').click()
    await page.locator(`tr[data-service="${FLEET.live.service}"]`).waitFor()
    await page.context().close()
  })

  it('takes a token pasted into the fragment without a reload, and says when a page or service is not there', async () => {
    const { page, problems } = await openPage()
    await page.goto(`${h.backend.url}/`)
    await page.locator('form[aria-label="sign in"]').waitFor()
    // A token pasted into the open tab's fragment is taken at once and stripped from the address bar.
    const withToken = `#token=${encodeURIComponent(h.backend.token)}&/slos`
    await page.evaluate(`window.location.hash = ${JSON.stringify(withToken)}`)
    await expect.poll(() => page.url()).toMatch(/#\/slos$/)
    expect(page.url()).not.toContain('token')
    await expect.poll(() => storedToken(page)).toBe(h.backend.token)
    await page.locator('form[aria-label="sign in"]').waitFor({ state: 'detached' })

    // An unknown route says so (it used to show the services silently), with a link back.
    await page.evaluate(`window.location.hash = '#/servces'`)
    const notFound = page.locator('main[data-page="not-found"]')
    await expect.poll(() => notFound.textContent()).toContain('/servces')
    expect(await notFound.locator('a[href="#/"]').count()).toBe(1)
    // An unknown service says so instead of an empty page.
    await page.evaluate(`window.location.hash = '#/service/no-such-service'`)
    await expect.poll(() => notFound.textContent()).toContain('No service named no-such-service')
    await shot(page, '9-not-found')
    await notFound.locator('a[href="#/"]').click()
    await page.locator(`tr[data-service="${FLEET.live.service}"]`).waitFor()
    expect(problems.filter((p) => !p.includes('404'))).toEqual([])
    await page.context().close()
  })

  it('shows the GPU page: inventory, a chart per GPU, the XID and the process beside its replica', async () => {
    const { page, urls, problems } = await openPage()
    await page.goto(`${h.backend.url}/#token=${encodeURIComponent(h.backend.token)}`)
    await page.locator(`tr[data-service="${FLEET.live.service}"]`).waitFor()
    await page.locator('nav[aria-label="main"] a', { hasText: 'GPUs' }).click()
    await page.waitForURL(/#\/gpus$/)
    // The URL changes before React renders the new page: wait for the navigation to mark it.
    await expect.poll(() => page.locator('nav[aria-label="main"] a.active').textContent()).toBe('GPUs')

    const inventory = page.locator('section[aria-label="GPU inventory"]')
    await expect.poll(() => inventory.getAttribute('data-state')).toBe('ready')
    const rows = inventory.locator('tbody tr')
    expect(await rows.count()).toBe(2)
    const whole = rows.nth(0)
    const cells = await whole.locator('td').allTextContents()
    expect(cells.slice(0, 4)).toEqual([GPUS.wholeGpu.node, 'GPU 0', GPUS.wholeGpu.name, '–'])
    expect(await whole.locator('td[data-field="gpuUtilPct"]').textContent()).toBe(
      formatUnit(GPUS.utilPct(1), '%'),
    )
    expect(await whole.locator('td[data-field="powerW"]').textContent()).toBe(
      formatUnit(GPUS.wholeGpu.powerW, 'W'),
    )
    expect(await whole.locator('td[data-field="temperatureC"]').textContent()).toBe('66 °C')
    expect(await whole.locator('td[data-field="clocks"]').textContent()).toBe('1980 MHz / 2619 MHz')
    expect(await whole.locator('td[data-field="memUsedBytes"]').textContent()).toMatch(/GiB \/ 74\.5 GiB$/)
    const mig = await rows.nth(1).locator('td').allTextContents()
    expect(mig.slice(0, 4)).toEqual([
      GPUS.mig.node,
      `GPU 0 · MIG 7/0 (${GPUS.mig.profile})`,
      GPUS.mig.name,
      `MIG 7/0 (${GPUS.mig.profile})`,
    ])

    // One chart per GPU, each with its utilization line drawn over the last 30 minutes.
    const charts = page.locator('[data-chart="gpu-usage"]')
    await expect.poll(() => charts.count()).toBe(2)
    const curve = charts.first().locator('svg path.recharts-line-curve').first()
    await curve.waitFor({ state: 'attached' })
    expect((await curve.getAttribute('d'))?.length ?? 0).toBeGreaterThan(100)
    expect(await charts.first().locator('svg path.recharts-line-curve').count()).toBe(3)

    const events = page.locator('section[aria-label="GPU events"]')
    await expect.poll(() => events.getAttribute('data-state')).toBe('ready')
    expect(await events.locator('tbody tr').count()).toBe(1)
    expect(await events.locator('tbody tr').textContent()).toContain('XID 79')
    expect(await events.locator('tbody tr').textContent()).toContain('GPU has fallen off the bus')

    const processes = page.locator('section[aria-label="GPU processes"]')
    const proc = processes.locator(`tr[data-pid="${GPUS.wholeGpu.pid}"]`)
    await proc.waitFor()
    expect(await proc.locator('td[data-field="replica"]').textContent()).toBe(
      `${FLEET.live.service}/${FLEET.live.model}@1 ${FLEET.live.replicas[0]}`,
    )
    // The replica's latency sits beside its GPU use.
    expect(await proc.locator('td.num').nth(3).textContent()).toMatch(/ms$/)
    expect(await proc.locator('td.num').nth(4).textContent()).toMatch(/ms$/)
    await shot(page, '6-gpus')

    // The range picker changes the charts' range and the address.
    await page.locator('[role="group"][aria-label="time range"] button', { hasText: '6h' }).click()
    await page.waitForURL(/#\/gpus\?range=6h$/)
    await charts.first().locator('svg path.recharts-line-curve').first().waitFor({ state: 'attached' })
    expect(urls.filter((u) => u.includes(h.backend.token))).toEqual([])
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('says so when no GPU has reported', async () => {
    const empty = await startEmptyBackend()
    try {
      const { page, problems } = await openPage()
      await page.goto(`${empty.url}/#token=${encodeURIComponent(empty.token)}&/gpus`)
      const inventory = page.locator('section[aria-label="GPU inventory"]')
      await expect.poll(() => inventory.getAttribute('data-state')).toBe('empty')
      expect(await inventory.textContent()).toContain('No GPU has reported')
      expect(await page.locator('[data-chart="gpu-usage"]').count()).toBe(0)
      expect(await page.locator('section[aria-label="GPU events"]').getAttribute('data-state')).toBe('empty')
      await shot(page, '7-gpus-empty')
      expect(problems).toEqual([])
      await page.context().close()
    } finally {
      await empty.close()
    }
  })

  it('says so when a page or the fleet chart cannot be loaded, and the rest still works', async () => {
    // Pages and the fleet chart come in chunks of their own (dashboard/src/app.tsx): a chunk that no longer exists
    // (the collector upgraded while the tab stayed open) must not leave a blank page.
    const { page } = await openPage()
    await page.route(/\/assets\/(slos|charts)-[^/]*\.js$/, (route) => route.abort())
    await page.goto(`${h.backend.url}/#token=${encodeURIComponent(h.backend.token)}&/`)
    await page.locator('section[aria-label="fleet"][data-state="ready"]').waitFor()
    const chart = page.locator('section[aria-label="Request rate and goodput"]')
    await expect.poll(() => chart.getAttribute('data-state')).toBe('error')
    expect(await chart.textContent()).toContain('reload the page')

    await page.evaluate(`window.location.hash = '#/slos'`)
    const failed = page.locator('main[data-page="load-failed"]')
    await failed.waitFor()
    expect(await failed.textContent()).toContain('This page could not be loaded')
    expect(await failed.locator('button', { hasText: 'Reload' }).count()).toBe(1)
    // Another page loads again (the boundary starts over with the route).
    await page.locator('main[data-page="load-failed"] a.back').click()
    await page.locator('section[aria-label="fleet"][data-state="ready"]').waitFor()
    await page.context().close()
  })

  it('shows the error for a bad token in the fragment', async () => {
    const { page } = await openPage()
    await page.goto(`${h.backend.url}/#token=wrong`)
    const alert = page.locator('form[aria-label="sign in"] [role="alert"]')
    await expect.poll(() => alert.textContent()).toBe('The collector refused the token: invalid bearer token')
    expect(page.url()).not.toContain('wrong')
    await page.context().close()
  })
})

/**
 * End-to-end tests of the fleet overview and the alerts page of the built dashboard (dist/dashboard; `npm run
 * build` first) in real headless Chromium, against the backend of test/helpers/dashboard-h.backend.ts (the real
 * collector on a real SQLite store, an SLO engine with real webhook receivers). Also runs axe-core on every page
 * of the dashboard and fails on serious or critical violations.
 *
 * Set TG_SCREENSHOT_DIR to keep a screenshot of each page.
 */
import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { formatMs, formatPercent } from '../../dashboard/src/lib/format.js'
import { formatBurnRate } from '../../dashboard/src/lib/slo.js'
import { dataSeconds } from '../../dashboard/src/lib/transforms.js'
import type { BreakdownResponse, TimeseriesResponse } from '../../dashboard/src/lib/api-types.js'
import type { FleetResponse } from '../../dashboard/src/lib/fleet.js'
import type { AlertsResponse, DeliveriesResponse, SilencesResponse } from '../../dashboard/src/lib/alerts.js'
import type { SloListResponse } from '../../dashboard/src/lib/slo-types.js'
import { FLEET, RUN, SLOS, useDashboardHarness, openPage, screenshot } from '../helpers/dashboard-backend.js'
import { seriousViolations } from '../helpers/axe.js'

/** The first number in a text like `6.02/s` or `210 ms`. */
const numberIn = (text: string | null): number => Number(/-?[\d.]+/.exec(text ?? '')?.[0])

describe.skipIf(!RUN)('fleet overview and alerts page (headless Chromium)', () => {
  const h = useDashboardHarness()
  const api = async <T>(path: string, token = h.backend.token): Promise<T> => {
    const res = await fetch(`${h.backend.url}/api/v1/${path}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    expect(res.status, path).toBe(200)
    return (await res.json()) as T
  }
  const signIn = (page: Page, route = '/', token = h.backend.token) =>
    page.goto(`${h.backend.url}/#token=${encodeURIComponent(token)}&${route}`)

  it('lands on the fleet overview: what needs attention first, numbers as the API gives them', async () => {
    const { page, urls, problems } = await openPage(h.browser)
    await signIn(page)
    const fleet = page.locator('section[aria-label="fleet"]')
    await expect.poll(() => fleet.getAttribute('data-state')).toBe('ready')
    expect(await page.locator('nav[aria-label="main"] a.active').textContent()).toBe('Fleet')
    // The SLOs load beside the figures; wait until the budget of the live service is drawn.
    const chat = page.locator(`tr[data-service="${FLEET.live.service}"]`)
    await chat.locator('.budget').waitFor()

    // Attention order: the live service (its availability SLO overspent, alerts firing) before the healthy one,
    // which has no SLO, before the one that has not reported in the hour, whatever the alphabet says.
    const order = await fleet
      .locator('tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [tr.getAttribute('data-service'), tr.getAttribute('data-attention')]),
      )
    expect(order.map(([s]) => s)).toEqual([FLEET.live.service, FLEET.healthy.service, FLEET.stale.service])
    expect(['firing', 'burning']).toContain(order[0]![1])
    expect(order[1]![1]).toBe('ok')
    expect(order[2]![1]).toBe('idle')

    // Every figure on the page is the API's for the same range.
    const fromApi = await api<FleetResponse>('fleet?from=-1h&to=now')
    const slos = await api<SloListResponse>('slos')
    for (const s of fromApi.services) {
      const row = page.locator(`tr[data-service="${s.service}"]`)
      const cell = (f: string) => row.locator(`td[data-field="${f}"]`).textContent()
      expect(await cell('replicas')).toBe(String(s.replicas))
      expect(await cell('p99')).toContain(formatMs(s.latencyMs.p99))
      expect(await cell('errors')).toBe(formatPercent(s.errorRatio))
      expect(await cell('shed')).toBe(formatPercent(s.shedRatio))
      if (s.ratePerSecond === null) expect(await cell('rate')).toBe('–')
      // The rate's window ends now, so it may have moved by a second between the page's request and this one.
      else
        expect(Math.abs(numberIn(await cell('rate')) - s.ratePerSecond) / s.ratePerSecond).toBeLessThan(0.01)
      if (s.goodputPerSecond === null) expect(await cell('goodput')).toBe('–')
      else
        expect(
          Math.abs(numberIn(await cell('goodput')) - s.goodputPerSecond) / s.goodputPerSecond,
        ).toBeLessThan(0.01)
    }
    const live = fromApi.services.find((s) => s.service === FLEET.live.service)!
    const availability = slos.slos.find((s) => s.name === SLOS.availability)!
    expect(Number(await chat.locator('.budget').getAttribute('data-remaining'))).toBe(
      Math.min(...slos.slos.map((s) => s.budgetRemaining ?? Infinity)),
    )
    const firing = slos.slos.flatMap((s) => s.alerts).filter((a) => a.state === 'firing').length
    expect(numberIn(await chat.locator('td[data-field="firing"]').textContent())).toBe(firing)
    expect(await chat.locator('td[data-field="burn"]').textContent()).toContain(
      formatBurnRate(Math.max(...slos.slos.map((s) => s.alerts[0]!.longBurnRate))),
    )
    expect(availability.budgetRemaining).toBeLessThan(0)
    // p99 against the latency SLO's 450 ms objective, and the GPU the live service's replica holds.
    expect(await chat.locator('td[data-field="p99"]').textContent()).toContain('/ 450 ms')
    expect(await chat.locator('td[data-field="gpu"]').textContent()).toMatch(/% of 1$/)
    // The live service's goodput is within its latency SLO and below its rate.
    expect(live.goodputPerSecond).toBeGreaterThan(0)
    expect(live.goodputPerSecond!).toBeLessThanOrEqual(live.ratePerSecond!)

    // The rate is over the time with data (30 minutes of the hour), as the breakdown and time series say:
    // a page dividing by the whole hour would read half.
    const q = `service=${FLEET.live.service}&from=-1h&to=now`
    const counts = (await api<BreakdownResponse>(`breakdown?${q}`)).requests
    const series = await api<TimeseriesResponse>(`timeseries?${q}&phase=total&quantiles=0.5`)
    const expected = (counts.ok + counts.error + counts.shed) / dataSeconds(series)!
    expect(expected).toBeCloseTo(FLEET.live.replicas.length * 3, 0) // 30 requests per 10 s per replica
    const shown = numberIn(await chat.locator('td[data-field="rate"]').textContent())
    expect(Math.abs(shown - expected) / expected).toBeLessThan(0.02)

    // Tiles and the rate chart.
    const tiles = page.locator('.tiles[aria-label="fleet totals"]')
    expect(await tiles.textContent()).toContain(`services${fromApi.services.length}`)
    const bars = page.locator('[data-chart="fleet-rate"] .recharts-bar-rectangle')
    await bars.first().waitFor({ state: 'attached' })
    // One bar per service with a rate, and one per service with a goodput (only those a latency SLO covers).
    const withRate = fromApi.services.filter((s) => s.ratePerSecond !== null)
    expect(await bars.count()).toBe(
      withRate.length + withRate.filter((s) => s.goodputPerSecond !== null).length,
    )
    await screenshot(page, 'fleet')

    // The range picker: on 6 h the stale service has data (it stopped 2.5 h ago) and is no longer idle; the
    // range stays in the address and the navigation carries it to the other pages.
    await page.locator('[role="group"][aria-label="time range"] button', { hasText: '6h' }).click()
    await page.waitForURL(/#\/\?range=6h$/)
    const stale = page.locator(`tr[data-service="${FLEET.stale.service}"]`)
    await expect.poll(() => stale.getAttribute('data-attention')).toBe('ok')
    const stale6h = (await api<FleetResponse>('fleet?from=-6h&to=now')).services.find(
      (s) => s.service === FLEET.stale.service,
    )!
    expect(await stale.locator('td[data-field="p99"]').textContent()).toBe(formatMs(stale6h.latencyMs.p99))
    await page.locator('nav[aria-label="main"] a', { hasText: 'Alerts' }).click()
    await page.waitForURL(/#\/alerts\?range=6h$/)
    expect(
      await page.locator('[role="group"][aria-label="time range"] button[aria-pressed="true"]').textContent(),
    ).toBe('6h')
    await page.locator('nav[aria-label="main"] a', { hasText: 'SLOs' }).click()
    await page.waitForURL(/#\/slos\?range=6h$/)
    await page.locator('nav[aria-label="main"] a', { hasText: 'GPUs' }).click()
    await page.waitForURL(/#\/gpus\?range=6h$/)
    await page.locator('nav[aria-label="main"] a', { hasText: 'Fleet' }).click()
    await page.waitForURL(/#\/\?range=6h$/)

    // One click to the service page, with the range.
    await page.locator(`tr[data-service="${FLEET.live.service}"] a.service-link`).click()
    await page.waitForURL(/#\/service\/chat\?range=6h$/)
    await page
      .locator('[data-chart="latency"] svg path.recharts-line-curve')
      .first()
      .waitFor({ state: 'attached' })
    // The services list is still there, at #/services.
    await page.locator('nav[aria-label="main"] a', { hasText: 'Services' }).click()
    await page.waitForURL(/#\/services/)
    await page.locator('section[aria-label="services"] tr[data-service="asr"]').waitFor()
    expect(urls.filter((u) => u.includes(h.backend.token))).toEqual([])
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('shows alerts with their SLO, tier and burn rates, and the webhook deliveries with their attempts', async () => {
    const { page, problems } = await openPage(h.browser)
    await signIn(page, '/alerts')
    const alerts = page.locator('section[aria-label="alerts"]')
    await expect.poll(() => alerts.getAttribute('data-state')).toBe('ready')
    const fromApi = (await api<AlertsResponse>('alerts')).alerts
    const slos = (await api<SloListResponse>('slos')).slos
    expect(fromApi.filter((a) => a.state === 'firing').length).toBeGreaterThan(0)
    const rows = alerts.locator('tbody tr')
    expect(await rows.count()).toBe(fromApi.filter((a) => a.state !== 'resolved').length)
    // Firing first.
    const states = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-state')))
    expect(states[0]).toBe('firing')
    for (const a of fromApi) {
      const tier = slos.find((s) => s.name === a.slo)!.alerts.find((t) => t.tier === a.tier)!
      const row = alerts.locator(`tr[data-alert="${a.slo}/${a.tier}"]`)
      expect(await row.getAttribute('data-state')).toBe(a.state)
      expect(await row.locator('td[data-field="long"]').textContent()).toBe(
        `${formatBurnRate(tier.longBurnRate)} over ${tier.longWindow}`,
      )
      expect(await row.locator('td[data-field="short"]').textContent()).toBe(
        `${formatBurnRate(tier.shortBurnRate)} over ${tier.shortWindow}`,
      )
      expect(await row.textContent()).toContain(tier.severity)
    }

    // Deliveries: ops took every notification (the first on its second attempt); pager refuses them, so its
    // oldest is retrying and the ones behind it wait their turn (a receiver's notifications go in order).
    const deliveries = page.locator('section[aria-label="webhook deliveries"]')
    await expect.poll(() => deliveries.getAttribute('data-state')).toBe('ready')
    const sent = await api<DeliveriesResponse>('alerts/deliveries')
    expect(sent.receivers).toEqual(['ops', 'pager'])
    expect(await deliveries.locator('tbody tr').count()).toBe(sent.deliveries.length)
    expect(sent.deliveries.filter((d) => d.receiver === 'ops').every((d) => d.status === 'delivered')).toBe(
      true,
    )
    expect(sent.deliveries.some((d) => d.receiver === 'ops' && d.attempts === 2)).toBe(true)
    for (const d of sent.deliveries) {
      const row = deliveries.locator(`tr[data-delivery="${d.seq}"]`)
      expect(await row.getAttribute('data-status')).toBe(d.status)
      expect(await row.locator('td.num').textContent()).toBe(String(d.attempts))
      if (d.status === 'retrying') expect(await row.textContent()).toContain('HTTP 503')
    }
    const pager = sent.deliveries.filter((d) => d.receiver === 'pager')
    expect(pager.at(-1)).toMatchObject({ status: 'retrying', attempts: 2, lastError: 'HTTP 503' })
    expect(pager.slice(0, -1).every((d) => d.status === 'pending' && d.attempts === 0)).toBe(true)
    expect(await deliveries.textContent()).toContain('Receivers: ops, pager')
    await screenshot(page, 'alerts')
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('creates and expires a silence with an admin token, and shows the refusal to a read token', async () => {
    const silences = async () => (await api<SilencesResponse>('silences')).silences
    const before = (await silences()).length

    // A read token: the form sends, the collector answers 403, and the page says so.
    const reader = await openPage(h.browser)
    await signIn(reader.page, '/alerts')
    const form = reader.page.locator('form[aria-label="new silence"]')
    await form.waitFor()
    await form.locator('select').first().selectOption(SLOS.availability)
    await form.locator('input').last().fill('read token try')
    await form.locator('button[type="submit"]').click()
    await expect
      .poll(() => form.locator('[role="alert"]').textContent())
      .toContain('this route needs a token with admin scope; the token given has read scope')
    expect(await silences()).toHaveLength(before)

    // An admin token: the silence is created, listed, and the silenced alert follows at the next evaluation.
    const admin = await openPage(h.browser)
    await signIn(admin.page, '/alerts', h.backend.adminToken!)
    const adminForm = admin.page.locator('form[aria-label="new silence"]')
    await adminForm.waitFor()
    // "Silence…" on a firing alert fills the form with its SLO and tier.
    const firingRow = admin.page.locator('section[aria-label="alerts"] tr[data-state="firing"]').first()
    const firingAlert = (await firingRow.getAttribute('data-alert'))!
    await firingRow.locator('button', { hasText: 'Silence' }).click()
    const [slo, tier] = [
      firingAlert.slice(0, firingAlert.lastIndexOf('/')),
      firingAlert.slice(firingAlert.lastIndexOf('/') + 1),
    ]
    expect(await adminForm.locator('select').nth(0).inputValue()).toBe(slo)
    expect(await adminForm.locator('select').nth(1).inputValue()).toBe(tier)
    await adminForm.locator('input').nth(0).fill('30m')
    await adminForm.locator('input').nth(1).fill('e2e: deploy in progress')
    await adminForm.locator('button[type="submit"]').click()
    await expect.poll(() => adminForm.locator('[role="status"]').textContent()).toContain('Silence created')
    const created = (await silences()).find((s) => s.comment === 'e2e: deploy in progress')!
    expect(created).toMatchObject({ state: 'active', matchers: { slo, tier }, createdBy: 'dashboard' })
    expect(Date.parse(created.endsAt) - Date.parse(created.startsAt)).toBe(30 * 60_000)
    const row = admin.page.locator(`tr[data-silence="${created.id}"]`)
    await expect.poll(() => row.getAttribute('data-state')).toBe('active')
    await screenshot(admin.page, 'alerts-silenced')

    // The read token cannot expire it either: the refusal is shown and the silence stays active.
    await reader.page.reload()
    const readerRow = reader.page.locator(`tr[data-silence="${created.id}"]`)
    await readerRow.locator('button', { hasText: 'Expire' }).click()
    await expect
      .poll(() => reader.page.locator('section[aria-label="silences"] > [role="alert"]').textContent())
      .toContain('admin scope')
    expect((await silences()).find((s) => s.id === created.id)!.state).toBe('active')

    // The admin expires it.
    await row.locator('button', { hasText: 'Expire' }).click()
    await expect.poll(() => row.getAttribute('data-state')).toBe('expired')
    expect((await silences()).find((s) => s.id === created.id)!.state).toBe('expired')
    expect(await row.locator('button').count()).toBe(0)
    expect(reader.problems.filter((p) => !p.includes('403'))).toEqual([])
    expect(admin.problems).toEqual([])
    await reader.page.context().close()
    await admin.page.context().close()
  })

  it('passes axe-core without serious or critical violations on every page', async () => {
    const { page, problems } = await openPage(h.browser)
    await signIn(page)
    const pages: Array<{ name: string; route: string; ready: () => Promise<unknown> }> = [
      {
        name: 'fleet',
        route: '#/',
        ready: () =>
          page.locator('section[aria-label="fleet"][data-state="ready"] .budget').first().waitFor(),
      },
      {
        name: 'services',
        route: '#/services',
        ready: () =>
          page
            .locator('section[aria-label="services"] tr[data-service] td.num >> text=/\\/s$/')
            .first()
            .waitFor(),
      },
      {
        name: 'service',
        route: `#/service/${FLEET.live.service}`,
        ready: () =>
          page
            .locator('[data-chart="latency"] svg path.recharts-line-curve')
            .first()
            .waitFor({ state: 'attached' }),
      },
      {
        name: 'slos',
        route: '#/slos',
        ready: () => page.locator('section[aria-label="slos"][data-state="ready"]').waitFor(),
      },
      {
        name: 'slo',
        route: `#/slos/${SLOS.latency}`,
        ready: () =>
          page.locator('[data-chart="burn-down"] svg path.recharts-area-area').waitFor({ state: 'attached' }),
      },
      {
        name: 'gpus',
        route: '#/gpus',
        ready: () =>
          page
            .locator('[data-chart="gpu-usage"] svg path.recharts-line-curve')
            .first()
            .waitFor({ state: 'attached' }),
      },
      {
        name: 'alerts',
        route: '#/alerts',
        ready: () => page.locator('section[aria-label="webhook deliveries"][data-state="ready"]').waitFor(),
      },
    ]
    const found: Record<string, string[]> = {}
    for (const p of pages) {
      await page.evaluate(`window.location.hash = ${JSON.stringify(p.route)}`)
      await p.ready()
      await screenshot(page, `axe-${p.name}`)
      found[p.name] = await seriousViolations(page)
    }
    expect(found).toEqual(Object.fromEntries(pages.map((p) => [p.name, []])))
    expect(problems).toEqual([])
    await page.context().close()
  })
})

/**
 * End-to-end test of the controller pages and the service page's signal panels, in real headless Chromium
 * against the built dashboard (dist/dashboard; `npm run build` first).
 *
 * The backend is the real collector app on a real SQLite store (test/helpers/dashboard.ts). Decisions, the
 * lease, setpoints and conditions are written through the real controller store API (what `tailguard
 * controller` calls); requests and live signals are recorded by the agent's recorder, as its vLLM scrape
 * adapter records them, and posted through the report route.
 */
import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { createRecorder } from '../../agent/index.js'
import { seededRandom } from '../../agent/demo/fleet.js'
import { createControllerStore } from '../../collector/index.js'
import type { ControllerCondition } from '../../collector/controllers/persistence.js'
import { createControllerRoutes } from '../../collector/routes/controllers.js'
import type {
  Controller,
  ControllersResponse,
  DecisionsResponse,
} from '../../dashboard/src/lib/controller.js'
import { formatMs, formatPercent } from '../../dashboard/src/lib/format.js'
import { formatCap } from '../../dashboard/src/lib/controller.js'
import { lastValue, shedPanel, SIGNAL_PANELS, signalRows } from '../../dashboard/src/lib/signals.js'
import type { RequestsResponse, SignalSeriesResponse } from '../../dashboard/src/lib/signals.js'
import {
  browserTestsRun,
  useBrowserAndBackend,
  openPage,
  screenshotter,
  startTestCollector,
  storedToken,
} from '../helpers/dashboard.js'
import type { TestCollector, WatchedPage } from '../helpers/dashboard.js'
import { seriousViolations } from '../helpers/dashboard.js'

const RUN = browserTestsRun('controller dashboard')
const INTERVAL_MS = 10_000
const READ = 'controller-read-token-0123456789'
const ADMIN = 'controller-admin-token-0123456789'

/** The LLM service (two vLLM replicas with signals) and a service without any signal. */
const FLEET = {
  llm: { service: 'chat', model: 'llama-3-8b', replicas: ['chat-0', 'chat-1'] },
  plain: { service: 'embed', model: 'e5', replica: 'embed-0' },
} as const

const SLOS_YAML = `version: 1
slos:
  - { name: chat-latency, kind: latency, selector: { service: chat }, thresholdMs: 450, objective: 99%, window: 30d }
  - { name: chat-ttft, kind: latency, selector: { service: chat }, phase: ttft, thresholdMs: 120, objective: 99%, window: 30d }
  - { name: chat-availability, kind: availability, selector: { service: chat }, objective: 99.5%, window: 7d }
`

/** The controlled targets: `chat` (named after its service) with four decisions, and `batch-pool` (a custom name). */
const TARGET = 'chat'
const OTHER_TARGET = 'batch-pool'
const HOLDER = 'e2e-host:4242'
const SETPOINTS = {
  batchWindowMs: 6,
  maxBatch: 16,
  admission: [
    { maxQueue: 64, maxConcurrency: 32, queueTimeoutMs: 2000 },
    { maxQueue: 16, maxConcurrency: 8 },
  ],
  // The observe-mode recommendation of the last decision (the live controller shows it as the setpoints).
  desiredReplicas: 2,
}

interface Backend {
  readonly url: string
  readonly collector: TestCollector
  close(): Promise<void>
}

async function startBackend(): Promise<Backend> {
  const collector = await startTestCollector({
    tokens: [
      { token: READ, scope: 'read' },
      { token: ADMIN, scope: 'admin' },
    ],
    agentToken: 'controller-agent-token-0123456789',
    slosYaml: SLOS_YAML,
    plugins: (store) => [createControllerRoutes(createControllerStore(store))],
  })
  const now = Date.now()
  const rand = seededRandom(7)
  const recorder = createRecorder()
  const { llm, plain } = FLEET
  // 30 minutes of reports: requests with phases (HDR) on both services, vLLM signals on the LLM replicas.
  for (let i = 180; i >= 1; i--) {
    const t = Math.floor(now / INTERVAL_MS) * INTERVAL_MS - i * INTERVAL_MS
    llm.replicas.forEach((replica, r) => {
      const labels = { service: llm.service, model: llm.model, version: '1', replica, node: `node-${r}` }
      for (let k = 0; k < 20; k++) {
        const queue = 2_000 + rand() * 8_000
        const prefill = 30_000 + rand() * 20_000
        const decode = 150_000 + rand() * 100_000
        const failed = k === 0 && i % 5 === 0
        recorder.recordRequest({
          labels,
          status: failed ? 'error' : 'ok',
          ...(failed ? { errorClass: 'timeout' } : {}),
          phasesUs: { queue, prefill, decode, total: queue + prefill + decode + 1_000 },
          ttftUs: queue + prefill,
          tpotUs: 20_000 + rand() * 5_000,
          outputTokens: 12,
        })
      }
      // What the vLLM scrape adapter records each scrape: gauges, counter increments, TTFT bucket increments.
      recorder.recordSignals(labels, {
        source: 'scrape:vllm',
        gauges: {
          running: 8 + ((i + r) % 5),
          waiting: (i * 3 + r) % 4,
          kvCacheUsage: 0.4 + 0.3 * Math.abs(Math.sin((i + r) / 10)),
          batchSize: 4 + ((i + 2 * r) % 9),
        },
        counters: {
          inputTokens: 4_000 + 10 * i,
          outputTokens: 2_400 + r * 100,
          preemptions: i % 6 === 0 ? 2 : 0,
          batches: 50,
        },
        buckets: {
          ttft: {
            boundsMs: [25, 50, 100, 250],
            counts: [1, 12, 5, 2, 0],
            sumMs: 1_350,
            source: 'scrape:vllm',
          },
        },
      })
      // What the proxy in front of the replica records: its admission control, shedding class 1 now and then.
      recorder.recordSignals(labels, {
        source: 'proxy',
        byClass: [
          { priorityClass: 0, admitted: 4 },
          {
            priorityClass: 1,
            admitted: 16,
            ...(i % 3 === 0 ? { shed: { queue_timeout: 3, concurrency: 1 } } : {}),
          },
        ],
      })
    })
    const labels = {
      service: plain.service,
      model: plain.model,
      version: '1',
      replica: plain.replica,
      node: 'n',
    }
    for (let k = 0; k < 10; k++) recorder.recordRequest({ labels, status: 'ok', phasesUs: { total: 4_000 } })
    await collector.report({ id: 'e2e', node: 'node-0' }, t, INTERVAL_MS, { series: recorder.drain().series })
  }
  const cycle = await collector.slos.evaluate(now)
  if (cycle.failed.length > 0) throw new Error(`SLO evaluation failed: ${JSON.stringify(cycle.failed)}`)

  // The controller's side, through its store: targets, the lease, four decisions and the leader's status.
  const cs = createControllerStore(collector.store)
  const t0 = now - 30 * 60_000
  await cs.ensureTarget(TARGET, { mode: 'observe', policy: 'tailguard' }, t0)
  await cs.ensureTarget(OTHER_TARGET, { mode: 'enforce', policy: 'hpa' }, t0)
  const lease = await cs.acquireLease(TARGET, HOLDER, t0, 3_600_000)
  if (!lease.held) throw new Error('the test could not take the lease')
  const base = { ...SETPOINTS, desiredReplicas: 2, batchWindowMs: 10 }
  const obs = (p99: number, ready: number) => ({
    intervalMs: 10_000,
    arrivalRps: { 10: 4 },
    latencyMs: { e2e: { p50: p99 / 3, p99, count: 400 } },
    replicas: { ready, starting: 0 },
  })
  const decisions = [
    {
      atMin: 25,
      mode: 'enforce' as const,
      before: base,
      after: { ...base, desiredReplicas: 3 },
      actions: [{ kind: 'scale', desiredReplicas: 3, reason: 'p99 612 ms is over the 450 ms objective' }],
      reason: 'scale: p99 612 ms is over the 450 ms objective',
      outcome: 'applied' as const,
      detail: null,
      observation: obs(612, 2),
    },
    {
      atMin: 18,
      mode: 'enforce' as const,
      before: { ...base, desiredReplicas: 3 },
      after: { ...base, desiredReplicas: 3, batchWindowMs: 6 },
      actions: [{ kind: 'batching', windowMs: 6, maxBatch: 16, reason: 'queue wait is half the budget' }],
      reason: 'batching: queue wait is half the budget',
      outcome: 'applied' as const,
      detail: null,
      observation: obs(480, 3),
    },
    {
      atMin: 10,
      mode: 'enforce' as const,
      before: { ...SETPOINTS, desiredReplicas: 3 },
      after: { ...SETPOINTS, desiredReplicas: 4 },
      actions: [{ kind: 'scale', desiredReplicas: 4, reason: 'arrivals up 40%' }],
      reason: 'scale: arrivals up 40%',
      outcome: 'failed' as const,
      detail: 'kubernetes: 409 Conflict on deployments/chat/scale',
      observation: obs(455, 3),
    },
    {
      atMin: 4,
      mode: 'observe' as const,
      before: { ...SETPOINTS, desiredReplicas: 3 },
      after: { ...SETPOINTS },
      actions: [{ kind: 'scale', desiredReplicas: 2, reason: 'p99 well under the objective for 5 min' }],
      reason: 'scale: p99 well under the objective for 5 min',
      outcome: 'skipped' as const,
      detail: 'observe mode: recommendation only, nothing changed',
      observation: obs(210, 3),
    },
  ]
  for (const d of decisions) {
    const timeMs = now - d.atMin * 60_000
    const stored = await cs.recordDecision(
      {
        target: TARGET,
        timeMs,
        policy: 'tailguard',
        mode: d.mode,
        observation: d.observation,
        prediction: { arrivalRps: 4, capacityRpsPerReplica: 2, utilization: 0.6, expectedP99Ms: 390 },
        actions: d.actions,
        setpointsBefore: d.before,
        setpointsAfter: d.after,
        reason: d.reason,
        outcome: 'pending',
        outcomeDetail: null,
      },
      HOLDER,
      lease.fencingToken,
      timeMs,
    )
    if (stored.kind !== 'stored') throw new Error('decision fenced')
    await cs.setOutcome(stored.id, d.outcome, d.detail)
  }
  const conditions: ControllerCondition[] = [
    {
      type: 'AbleToScale',
      status: 'False',
      reason: 'FailedUpdateScale',
      message: 'kubernetes: 409 Conflict',
      lastTransitionMs: now - 10 * 60_000,
    },
    {
      type: 'ScalingActive',
      status: 'True',
      reason: 'ObserveMode',
      message: 'observe mode: decisions are stored, nothing is changed',
      lastTransitionMs: now - 4 * 60_000,
    },
    { type: 'MetricsStale', status: 'False', reason: 'Fresh', message: 'fresh', lastTransitionMs: t0 },
  ]
  if (
    !(await cs.putStatus(TARGET, HOLDER, lease.fencingToken, {
      setpoints: SETPOINTS,
      conditions,
      nowMs: now,
    }))
  )
    throw new Error('status not written')
  const url = await collector.app.listen({ host: '127.0.0.1', port: 0 })
  return { url, collector, close: () => collector.close() }
}

describe.skipIf(!RUN)('controller and signal pages (headless Chromium)', () => {
  const ctx = useBrowserAndBackend(startBackend)
  const shot = screenshotter()
  const api = async <T>(path: string, token = READ): Promise<T> => {
    const res = await fetch(`${ctx.backend.url}/api/v1/${path}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    expect(res.status).toBe(200)
    return (await res.json()) as T
  }
  const controller = async (target: string): Promise<Controller> =>
    (await api<ControllersResponse>('controllers')).controllers.find((c) => c.target === target)!
  const signIn = async (token: string, route: string): Promise<WatchedPage> => {
    const watched = await openPage(ctx.browser)
    await watched.page.goto(`${ctx.backend.url}/#token=${encodeURIComponent(token)}&${route}`)
    return watched
  }
  const dialog = (page: Page) => page.locator('[role="dialog"]')

  it('lists the controller targets with their mode, setpoints and troubled conditions', async () => {
    const { page, problems } = await signIn(READ, '/controllers')
    await page.locator('nav[aria-label="main"] a.active', { hasText: 'Controllers' }).waitFor()
    const rows = page.locator('tr[data-target]')
    await expect.poll(() => rows.count()).toBe(2)
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-target')))).toEqual([
      OTHER_TARGET,
      TARGET,
    ])
    const chat = page.locator(`tr[data-target="${TARGET}"]`)
    expect(await chat.locator('.badge').first().textContent()).toBe('observe')
    expect(await chat.locator('td.num').textContent()).toBe(String(SETPOINTS.desiredReplicas))
    expect(await chat.textContent()).toContain('AbleToScale')
    expect(await chat.textContent()).toContain('scale: p99 well under the objective for 5 min')
    const other = page.locator(`tr[data-target="${OTHER_TARGET}"]`)
    expect(await other.textContent()).toContain('none yet')
    await shot(page, 'c1-controllers')
    expect(await seriousViolations(page)).toEqual([])
    await chat.locator('a').click()
    await page.waitForURL(/#\/controllers\/chat$/)
    await page.locator('section[aria-label="Decisions"][data-state="ready"]').waitFor()
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('shows the timeline with every decision and its reason over the p99 and SLO line, setpoints and conditions as the API has them', async () => {
    const { page, problems } = await signIn(READ, `/controllers/${TARGET}`)
    const apiDecisions = (await api<DecisionsResponse>(`decisions?target=${TARGET}&from=-1h`)).decisions
    const apiController = await controller(TARGET)
    expect(apiDecisions).toHaveLength(4)

    // The decision table: newest first, each with its reason, outcome and the detail of a failure.
    const table = page.locator('section[aria-label="Decisions"]')
    await expect.poll(() => table.getAttribute('data-state')).toBe('ready')
    expect(await seriousViolations(page)).toEqual([])
    const rows = table.locator('tr[data-decision]')
    expect(
      await rows.evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-decision')))),
    ).toEqual(apiDecisions.map((d) => d.id).reverse())
    for (const d of apiDecisions) {
      const row = table.locator(`tr[data-decision="${d.id}"]`)
      expect(await row.locator('[data-field="reason"]').textContent()).toBe(d.reason)
      expect(await row.locator('[data-field="outcome"]').textContent()).toBe(d.outcome)
      if (d.outcomeDetail) expect(await row.textContent()).toContain(d.outcomeDetail)
    }
    expect(await table.locator('tr[data-outcome="failed"]').textContent()).toContain('scale to 4 replicas')
    expect(await table.locator('tr[data-outcome="applied"]').last().textContent()).toContain(
      'p99 612 ms is over the 450 ms objective',
    )

    // The timeline chart: one mark per decision, the p99 line drawn, the SLO line at 450 ms.
    const timeline = page.locator('[data-chart="decision-timeline"]')
    await timeline.waitFor()
    expect(Number(await timeline.getAttribute('data-marks'))).toBe(apiDecisions.length)
    await expect
      .poll(() => timeline.locator('.recharts-reference-line').count())
      .toBe(apiDecisions.length + 1)
    await timeline.locator('path.recharts-line-curve').first().waitFor({ state: 'attached' })
    expect(
      (await timeline.locator('path.recharts-line-curve').first().getAttribute('d'))?.length,
    ).toBeGreaterThan(100)
    expect(await timeline.textContent()).toContain(`SLO chat-latency ${formatMs(450)}`)
    // Each decision's dot carries its outcome and reason as its title (the tooltip on hover).
    const titles = await timeline
      .locator('circle.decision-dot')
      .evaluateAll((cs) => cs.map((c) => [Number(c.getAttribute('data-decision')), c.textContent]))
    expect(titles.map(([id]) => id)).toEqual(apiDecisions.map((d) => d.id))
    for (const [id, title] of titles) {
      const d = apiDecisions.find((x) => x.id === id)!
      expect(title).toContain(`#${d.id} ${d.outcome}`)
      expect(title).toContain(d.reason)
    }

    // Request rate and the desired replicas: one step per decision that was not a failure, plus both ends.
    const rate = page.locator('[data-chart="rate-replicas"]')
    await rate.locator('path.recharts-area-area').waitFor({ state: 'attached' })
    expect(Number(await rate.getAttribute('data-replica-steps'))).toBe(
      apiDecisions.filter((d) => d.outcome !== 'failed').length + 2,
    )
    await rate.locator('path.recharts-line-curve').waitFor({ state: 'attached' })

    // Setpoints as the API has them.
    const sp = apiController.setpoints!
    expect(sp).toEqual(SETPOINTS)
    const setpoints = page.locator('section[aria-label="Setpoints"]')
    expect(await setpoints.locator('[data-field="desiredReplicas"] .tile-value').textContent()).toBe(
      String(sp.desiredReplicas),
    )
    expect(await setpoints.locator('[data-field="batchWindowMs"] .tile-value').textContent()).toBe(
      formatMs(sp.batchWindowMs),
    )
    expect(await setpoints.locator('[data-field="maxBatch"] .tile-value').textContent()).toBe(
      String(sp.maxBatch),
    )
    const admission = await setpoints
      .locator('table.admission-table tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)))
    expect(admission).toEqual(
      sp.admission.map((a, i) => [
        String(i),
        formatCap(a.maxQueue),
        formatCap(a.maxConcurrency),
        a.queueTimeoutMs !== undefined ? formatMs(a.queueTimeoutMs) : '–',
      ]),
    )

    // Conditions as the API has them.
    const conditions = page.locator('section[aria-label="Conditions"] tr[data-condition]')
    expect(
      await conditions.evaluateAll((trs) =>
        trs.map((tr) => [tr.getAttribute('data-condition'), tr.getAttribute('data-status')]),
      ),
    ).toEqual(apiController.conditions.map((k) => [k.type, k.status]))
    expect(await page.locator('[data-mode]').getAttribute('data-mode')).toBe('observe')
    await shot(page, 'c2-controller')
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('refuses the mode switch and rollback to a read token, clearly, and changes nothing', async () => {
    const { page, problems } = await signIn(READ, `/controllers/${TARGET}`)
    await page.locator('[data-mode="observe"]').waitFor()
    await page.locator('button[data-action="mode"]').click()
    await expect.poll(() => dialog(page).textContent()).toContain('Switch chat to enforce?')
    await dialog(page).locator('button[data-confirm]').click()
    const refusal = page.locator('[data-outcome="refused"]')
    await expect.poll(() => refusal.textContent()).toContain('needs an admin token')
    expect(await refusal.getAttribute('role')).toBe('alert')
    expect(await refusal.textContent()).toContain('admin scope') // the collector's own reason
    expect(await dialog(page).count()).toBe(0)
    await page.locator('button[data-action="rollback"]').click()
    await dialog(page).locator('button[data-confirm]').click()
    await expect.poll(() => refusal.textContent()).toContain('may read but not roll back chat')
    // Nothing changed, and the read token still reads (a refusal is not a sign-out).
    const after = await controller(TARGET)
    expect(after.mode).toBe('observe')
    expect(after.rollbackRequestedAt).toBeNull()
    expect(await storedToken(page)).toBe(READ)
    expect(await page.locator('form[aria-label="sign in"]').count()).toBe(0)
    await shot(page, 'c3-refused')
    // The browser logs each refused request (HTTP 403) as a console error; nothing else may appear.
    expect(problems.filter((p) => !p.includes('403'))).toEqual([])
    expect(problems.filter((p) => p.includes('403'))).toHaveLength(2)
    await page.context().close()
  })

  it('switches the mode and requests a rollback with an admin token, after the confirmation', async () => {
    const { page, problems } = await signIn(ADMIN, `/controllers/${TARGET}`)
    await page.locator('[data-mode="observe"]').waitFor()
    // Cancel leaves everything as it was.
    await page.locator('button[data-action="mode"]').click()
    await dialog(page).locator('button', { hasText: 'Cancel' }).click()
    expect(await dialog(page).count()).toBe(0)
    expect((await controller(TARGET)).mode).toBe('observe')

    await page.locator('button[data-action="mode"]').click()
    await dialog(page).locator('button[data-confirm]').click()
    await expect
      .poll(() => page.locator('[data-outcome="done"]').textContent())
      .toBe('chat is now in enforce mode.')
    await page.locator('[data-mode="enforce"]').waitFor()
    const switched = await controller(TARGET)
    expect(switched.mode).toBe('enforce')
    expect(switched.modeSource).toBe('api')
    expect(await page.locator('button[data-action="mode"]').textContent()).toBe('Switch to observe')

    await page.locator('button[data-action="rollback"]').click()
    await expect.poll(() => dialog(page).textContent()).toContain('Roll back chat?')
    await shot(page, 'c4-confirm')
    await dialog(page).locator('button[data-confirm]').click()
    await expect
      .poll(() => page.locator('[data-outcome="done"]').textContent())
      .toContain('Rollback requested')
    await expect.poll(() => page.locator('[data-mode]').textContent()).toContain('rollback requested')
    expect((await controller(TARGET)).rollbackRequestedAt).not.toBeNull()
    await shot(page, 'c4-admin')
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('draws the signal panels, TTFT and error rate of an LLM service with the points the API has', async () => {
    const { page, problems } = await signIn(READ, `/service/${FLEET.llm.service}?model=${FLEET.llm.model}`)
    const q = `service=${FLEET.llm.service}&model=${FLEET.llm.model}&from=-1h&to=now`
    const signals = await api<SignalSeriesResponse>(`signals?${q}`)
    expect(signals.series.map((s) => s.replica).sort()).toEqual([...FLEET.llm.replicas])
    for (const spec of SIGNAL_PANELS) {
      const rows = signalRows(signals, spec.lines)
      const chart = page.locator(`[data-chart="${spec.chart}"]`)
      if (rows.length === 0) {
        // Queue depth is the proxy's: vLLM's scrape has none, so the panel is not drawn.
        expect(spec.chart).toBe('queue-depth')
        expect(await chart.count()).toBe(0)
        continue
      }
      await chart.waitFor()
      expect(Number(await chart.getAttribute('data-points'))).toBe(rows.length)
      // Each line has one dot per bucket with a value: the points the API has, none more, none fewer.
      const dots = await chart
        .locator('.recharts-line-dots')
        .evaluateAll((gs) => gs.map((g) => g.querySelectorAll('circle').length))
      expect(dots).toEqual(spec.lines.map((l) => rows.filter((r) => typeof r[l.key] === 'number').length))
      const now = page.locator(`section:has([data-chart="${spec.chart}"]) .now-value`)
      expect(Number(await now.getAttribute('data-now'))).toBeCloseTo(lastValue(rows, spec.lines[0]!.key)!, 9)
    }
    // KV-cache use is the fullest replica's, as a percentage.
    const kv = signalRows(signals, SIGNAL_PANELS.find((p) => p.chart === 'kv-cache')!.lines)
    expect(await page.locator('section:has([data-chart="kv-cache"]) .now-value').textContent()).toBe(
      `KV cache now ${formatPercent(lastValue(kv, 'kv'))}`,
    )
    expect(await page.locator('[data-sources]').getAttribute('data-sources')).toBe('proxy,scrape:vllm')
    // Shed by class: class 1 only (class 0 shed nothing), one dot per bucket with shedding, the reasons named.
    const shed = shedPanel(signals)!
    expect(shed.lines.map((l) => l.label)).toEqual(['class 1'])
    const shedRows = signalRows(signals, shed.lines)
    const shedChart = page.locator('[data-chart="shed-by-class"]')
    await shedChart.waitFor()
    expect(Number(await shedChart.getAttribute('data-points'))).toBe(shedRows.length)
    expect(await page.locator('section:has([data-chart="shed-by-class"])').textContent()).toContain(
      'queue timeout',
    )

    // TTFT from the server's buckets, per replica, marked as estimates, with the TTFT SLO line.
    const imported = page.locator('section:has([data-chart="imported-ttft"])')
    expect(await imported.textContent()).toContain('precision: buckets')
    expect(await imported.textContent()).toContain(`SLO chat-ttft ${formatMs(120)}`)
    expect(await imported.locator('.recharts-line-dots').count()).toBe(FLEET.llm.replicas.length)
    // TTFT and TPOT from the HDR histograms, the latency SLO line on the total's chart.
    await page
      .locator('[data-chart="latency-ttft"] path.recharts-line-curve')
      .first()
      .waitFor({ state: 'attached' })
    await page
      .locator('[data-chart="latency-tpot"] path.recharts-line-curve')
      .first()
      .waitFor({ state: 'attached' })
    expect(await page.locator('[data-chart="latency"]').getAttribute('data-threshold')).toBe('450')
    expect(await page.locator('[data-chart="latency"]').textContent()).toContain(
      `SLO chat-latency ${formatMs(450)}`,
    )

    // The error rate: one dot per bucket with requests, the newest ratio as the API says, the allowed 0.5%.
    const requests = await api<RequestsResponse>(`requests?${q}`)
    const errors = page.locator('[data-chart="error-rate"]')
    await errors.waitFor()
    expect(Number(await errors.getAttribute('data-points'))).toBe(requests.points.length)
    expect(requests.points.some((p) => (p.errorRatio ?? 0) > 0)).toBe(true)
    const newest = requests.points[requests.points.length - 1]!
    expect(
      Number(
        await page.locator('section:has([data-chart="error-rate"]) .now-value').getAttribute('data-now'),
      ),
    ).toBeCloseTo(newest.errorRatio!, 12)
    expect(await errors.textContent()).toContain(`SLO chat-availability allows ${formatPercent(0.005)}`)
    await shot(page, 'c5-signals')
    expect(await seriousViolations(page)).toEqual([])
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('says so when a service reports no signals, and when a controller target does not exist', async () => {
    const { page, problems } = await signIn(READ, `/service/${FLEET.plain.service}`)
    const empty = page.locator('section[aria-label="Signals"]')
    await expect.poll(() => empty.getAttribute('data-state')).toBe('empty')
    expect(await empty.textContent()).toContain('No live signals in this range')
    expect(await page.locator('[data-chart="kv-cache"]').count()).toBe(0)
    await page.locator('[data-chart="error-rate"]').waitFor()

    await page.evaluate(`window.location.hash = '#/controllers/no-such-target'`)
    await expect
      .poll(() => page.locator('main[data-page="not-found"]').textContent())
      .toContain('No controller target named no-such-target')
    // A target with a custom name charts nothing until a service is chosen; its decisions table says none.
    await page.evaluate(`window.location.hash = '#/controllers/${OTHER_TARGET}'`)
    await expect
      .poll(() => page.locator('section[aria-label="Decisions"]').getAttribute('data-state'))
      .toBe('empty')
    expect(await page.locator('section[aria-label="Setpoints"]').getAttribute('data-state')).toBe('empty')
    await page.selectOption('select[aria-label="service charted"]', FLEET.llm.service)
    await page.waitForURL(/service=chat/)
    await page
      .locator('[data-chart="decision-timeline"] path.recharts-line-curve')
      .first()
      .waitFor({ state: 'attached' })
    expect(problems).toEqual([])
    await page.context().close()
  })
})

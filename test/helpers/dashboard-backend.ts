/**
 * The backend and browser harness of the dashboard's end-to-end tests (test/dashboard/*.e2e.test.ts and
 * e2e.test.ts): the real collector app on a real SQLite store, fed with interval reports made by the agent's
 * recorder and posted through the report route, as agents do; an SLO engine with real webhook receivers; and
 * headless Chromium through playwright-core.
 *
 * Set TG_SCREENSHOT_DIR to keep screenshots of each page for a look at the layout.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import type { Kysely } from 'kysely'
import { buildCollector } from '../../collector/app.js'
import { createStore, latencyThresholds } from '../../collector/index.js'
import { storeDatabase } from '../../collector/store/index.js'
import { createSloEngine } from '../../collector/slo/index.js'
import type { SloTables } from '../../collector/slo/index.js'
import { createSloRoutes } from '../../collector/routes/slos.js'
import { createRecorder } from '../../agent/index.js'
import type { Recorder } from '../../agent/index.js'
import { seededRandom } from '../../agent/demo/fleet.js'
import type { GpuReportItem } from '../../collector/index.js'

import { DIST, browserTestsRun, screenshotter, useBrowserAndBackend } from './dashboard.js'

export { CHROMIUM, DIST, openPage, launchBrowser as launchChromium } from './dashboard.js'

/** Whether the Chromium tests run (Chromium installed, or CI, where it must be). */
export const RUN = browserTestsRun('dashboard')

/**
 * Writes a full-page screenshot to `$TG_SCREENSHOT_DIR/<name>.png` when that variable is set, else does nothing.
 *
 * @example await screenshot(page, '1-list')
 */
export const screenshot = screenshotter()

/**
 * What the backend must report (the contract for whatever {@link startBackend} runs): a live LLM service on
 * two replicas that reported over the last 30 minutes, with some errors of one class, a healthy service with
 * fast requests over the same 30 minutes and no SLO, and a service that stopped reporting 2.5 hours ago after
 * reporting for 30 minutes. `phases` lists the metrics each reports,
 * in API order.
 */
export const FLEET = {
  live: {
    service: 'chat',
    model: 'llama-3-8b',
    replicas: ['chat-0', 'chat-1'],
    phases: ['queue', 'prefill', 'decode', 'total', 'ttft', 'tpot'],
    errorClass: 'timeout',
  },
  healthy: {
    service: 'asr',
    model: 'whisper-large',
    replicas: ['asr-0'],
  },
  stale: {
    service: 'embed',
    model: 'e5-large',
    replicas: ['embed-0'],
    phases: ['queue', 'h2d', 'kernel', 'total'],
    stoppedAgoMs: 150 * 60_000,
  },
} as const

/**
 * The SLOs the backend defines (from a file, as `--slos` does) over the live service, and evaluates once:
 * a latency SLO with budget left, and an availability SLO its timeouts overspend.
 */
export const SLOS = {
  latency: 'chat-latency',
  availability: 'chat-availability',
  yaml: `version: 1
slos:
  - name: chat-latency
    description: 99% of chat requests within 450 ms
    kind: latency
    selector: { service: chat }
    thresholdMs: 450
    objective: 99%
    window: 30d
  - name: chat-availability
    kind: availability
    selector: { service: chat }
    objective: 99.9%
    window: 7d
`,
} as const

/**
 * The GPUs the live service's nodes report (one agent per node, in reports of their own): node-0 has a whole
 * GPU running chat-0's server process (PID 4242) and an XID 79 three intervals ago; node-1 has a MIG instance.
 * `utilPct(i)` is the utilization reported `i` intervals ago.
 */
export const GPUS = {
  wholeGpu: {
    node: 'node-0',
    uuid: 'GPU-0000aaaa-e2e',
    name: 'NVIDIA H100 80GB HBM3',
    pid: 4242,
    powerW: 412.5,
  },
  mig: { node: 'node-1', uuid: 'GPU-1111bbbb-e2e', name: 'NVIDIA A100-SXM4-40GB', profile: '1g.5gb' },
  utilPct: (i: number) => Math.round(55 + 35 * Math.sin(i / 9)),
  xidIntervalsAgo: 3,
} as const

export interface Backend {
  readonly url: string
  /** A read-scope API token the backend accepts. */
  readonly token: string
  /** An admin-scope API token (full backend only). */
  readonly adminToken?: string
  /** A second collector on the same store whose SLO engine has no SLOs (the SLO page's empty state; full backend only). */
  readonly noSlosUrl?: string
  close(): Promise<void>
}

// ---------------------------------------------------------------------------------------------------------
// startBackend(): the real collector (buildCollector) on a real SQLite store, fed with real interval reports
// made by the agent's recorder and posted through POST /api/v1/reports.
// ---------------------------------------------------------------------------------------------------------

const INTERVAL_MS = 10_000

/**
 * A webhook receiver the backend's SLO engine notifies, as a real HTTP server: `ops` answers 500 to its first
 * request and 200 after that (so its first notification is delivered on the second attempt), `pager` answers
 * 503 to every request (its notifications keep retrying).
 */
async function startReceivers(): Promise<{ urls: { ops: string; pager: string }; close(): Promise<void> }> {
  let opsCalls = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.statusCode = req.url === '/pager' ? 503 : opsCalls++ === 0 ? 500 : 200
      res.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    urls: { ops: `${base}/ops`, pager: `${base}/pager` },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export async function startBackend(): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-dash-'))
  const store = await createStore({ url: join(dir, 'tg.db') })
  // The SLO engine as collector/run.ts builds it: on the store, with its tables from the store's migrations.
  const receivers = await startReceivers()
  const slos = createSloEngine({
    source: store,
    db: storeDatabase(store) as unknown as Kysely<SloTables>,
    random: () => 1,
    webhooks: [
      { name: 'ops', url: receivers.urls.ops, minBackoffMs: 1000 },
      { name: 'pager', url: receivers.urls.pager, minBackoffMs: 1000 },
    ],
  })
  const sloFile = join(dir, 'slos.yaml')
  writeFileSync(sloFile, SLOS.yaml)
  const loaded = await slos.useFiles(sloFile)
  if (!loaded.ok) throw new Error(`SLO fixture invalid: ${JSON.stringify(loaded.problems)}`)
  const token = 'dashboard-read-token-0123456789'
  const adminToken = 'dashboard-admin-token-0123456789'
  const agentToken = 'dashboard-agent-token-0123456789'
  const app = await buildCollector(
    {
      tokens: [
        { token, scope: 'read' },
        { token: adminToken, scope: 'admin' },
        { token: agentToken, scope: 'agent' },
      ],
      reportBodyLimitBytes: 16 << 20,
      bodyLimitBytes: 1 << 20,
      dashboardDir: DIST,
    },
    {
      store,
      figures: { pricing: {}, latencySlos: () => latencyThresholds(slos) },
      plugins: [createSloRoutes(slos)],
    },
  )
  const now = Date.now()
  const rand = seededRandom(99)
  const lognormal = (median: number, sigma: number) => {
    const z = Math.sqrt(-2 * Math.log(Math.max(rand(), 1e-12))) * Math.cos(2 * Math.PI * rand())
    return median * Math.exp(sigma * z)
  }
  let seq = 0
  const gpuSeq = new Map<string, number>()
  /** Posts one interval report of `agent` (its own seq) through the report route, as agents do. */
  const post = async (
    agent: { id: string; instance: string; node: string },
    agentSeq: number,
    startMs: number,
    body: { series: unknown[]; gpus?: GpuReportItem[] },
  ) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/reports',
      headers: { authorization: `Bearer ${agentToken}` },
      payload: {
        version: 1,
        agent,
        seq: agentSeq,
        intervalStartMs: startMs,
        intervalEndMs: startMs + INTERVAL_MS,
        ...body,
      },
    })
    if (res.statusCode !== 200) throw new Error(`report rejected: ${res.body}`)
  }
  /** One GPU-only report from the agent of `node` (its own instance and seq), as a GPU node's agent sends. */
  const sendGpus = async (node: string, startMs: number, gpus: GpuReportItem[]) => {
    const n = (gpuSeq.get(node) ?? 0) + 1
    gpuSeq.set(node, n)
    await post({ id: `e2e-${node}`, instance: `e2e-${node}-instance`, node }, n, startMs, {
      series: [],
      gpus,
    })
  }
  const send = (recorder: Recorder, startMs: number) =>
    post({ id: 'e2e', instance: 'e2e-instance', node: 'node-a' }, ++seq, startMs, {
      series: recorder.drain().series,
    })
  const recorder = createRecorder()
  const { live, stale, healthy } = FLEET
  // The live LLM service: two replicas over the last 30 minutes, with timeouts now and then.
  for (let i = 180; i >= 1; i--) {
    const t = Math.floor(now / INTERVAL_MS) * INTERVAL_MS - i * INTERVAL_MS
    live.replicas.forEach((replica, r) => {
      const labels = { service: live.service, model: live.model, version: '1', replica, node: `node-${r}` }
      for (let k = 0; k < 30; k++) {
        const queue = lognormal(3_000, 0.8)
        const prefill = lognormal(35_000, 0.2)
        const decode = lognormal(180_000, 0.3)
        const failed = k === 0 && i % 7 === 0
        recorder.recordRequest({
          labels,
          status: failed ? 'error' : 'ok',
          ...(failed ? { errorClass: live.errorClass } : {}),
          phasesUs: { queue, prefill, decode, total: queue + prefill + decode + 2_000 },
          ttftUs: queue + prefill,
          tpotUs: lognormal(22_000, 0.1),
          outputTokens: 8,
        })
      }
    })
    // The healthy service: a few fast requests per interval, no errors.
    for (let k = 0; k < 5; k++) {
      const labels = {
        service: healthy.service,
        model: healthy.model,
        version: '2',
        replica: healthy.replicas[0],
        node: 'node-a',
      }
      const total = lognormal(40_000, 0.2)
      recorder.recordRequest({ labels, status: 'ok', phasesUs: { total } })
    }
    await send(recorder, t)
    const util = GPUS.utilPct(i)
    const stat = (v: number) => ({ min: v, mean: v, max: v, last: v })
    const w = GPUS.wholeGpu
    await sendGpus(w.node, t, [
      {
        source: 'nvml',
        uuid: w.uuid,
        index: 0,
        name: w.name,
        samples: 10,
        fields: {
          gpuUtilPct: { min: util - 5, mean: util, max: util + 5, last: util },
          memUsedBytes: stat(30e9 + util * 1e8),
          memTotalBytes: stat(80e9),
          powerW: stat(w.powerW),
          temperatureC: stat(66),
          smClockMhz: stat(1980),
          memClockMhz: stat(2619),
          tensorActivePct: stat(Math.round(util * 0.6)),
        },
        ...(i === GPUS.xidIntervalsAgo
          ? { events: [{ timeMs: t + 2000, kind: 'xid', xid: 79, message: 'GPU has fallen off the bus' }] }
          : {}),
        processes: [
          {
            pid: w.pid,
            usedMemoryBytes: stat(28e9),
            smUtilPct: stat(util),
            replica: { service: live.service, model: live.model, version: '1', replica: live.replicas[0] },
          },
        ],
      },
    ])
    await sendGpus(GPUS.mig.node, t, [
      {
        source: 'nvml',
        uuid: GPUS.mig.uuid,
        index: 0,
        name: GPUS.mig.name,
        mig: { gpuInstanceId: 7, computeInstanceId: 0, profile: GPUS.mig.profile },
        samples: 10,
        fields: { gpuUtilPct: stat(20), memUsedBytes: stat(2e9), memTotalBytes: stat(4.75e9) },
      },
    ])
  }
  // The stale service: 30 minutes of data that ended 150 minutes ago.
  for (let i = 180; i >= 1; i--) {
    const t = Math.floor((now - stale.stoppedAgoMs) / INTERVAL_MS) * INTERVAL_MS - i * INTERVAL_MS
    const labels = {
      service: stale.service,
      model: stale.model,
      version: '1',
      replica: stale.replicas[0],
      node: 'node-a',
    }
    for (let k = 0; k < 20; k++) {
      const queue = lognormal(500, 0.5)
      const h2d = lognormal(300, 0.2)
      const kernel = lognormal(4_000, 0.1)
      recorder.recordRequest({
        labels,
        status: 'ok',
        phasesUs: { queue, h2d, kernel, total: queue + h2d + kernel + 200 },
      })
    }
    await send(recorder, t)
  }
  const cycle = await slos.evaluate(now)
  if (cycle.failed.length > 0) throw new Error(`SLO evaluation failed: ${JSON.stringify(cycle.failed)}`)
  // The notifications' second attempt: ops takes them now, pager still refuses.
  await slos.deliver(now + 2000)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const none = createSloEngine({ source: store, db: storeDatabase(store) as unknown as Kysely<SloTables> })
  const bare = await buildCollector(
    {
      tokens: [{ token, scope: 'read' }],
      reportBodyLimitBytes: 1 << 20,
      bodyLimitBytes: 1 << 20,
      dashboardDir: DIST,
    },
    { store, plugins: [createSloRoutes(none)] },
  )
  const noSlosUrl = await bare.listen({ host: '127.0.0.1', port: 0 })
  return {
    url,
    token,
    adminToken,
    noSlosUrl,
    async close() {
      await slos.stop()
      await bare.close()
      await app.close()
      await receivers.close()
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A collector no agent has reported to (what `tailguard start` shows on a machine without GPUs). */
export async function startEmptyBackend(): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-dash-empty-'))
  const store = await createStore({ url: join(dir, 'tg.db') })
  const token = 'dashboard-read-token-empty-0123456789'
  const app = await buildCollector(
    {
      tokens: [{ token, scope: 'read' }],
      reportBodyLimitBytes: 1 << 20,
      bodyLimitBytes: 1 << 20,
      dashboardDir: DIST,
    },
    { store },
  )
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return {
    url,
    token,
    async close() {
      await app.close()
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Starts the full backend and Chromium before a test file's tests and closes both after them (vitest
 * `beforeAll`/`afterAll`); read them through the returned getters inside tests.
 *
 * @example const h = useDashboardHarness(); it('…', async () => { const { page } = await openPage(h.browser) })
 */
export function useDashboardHarness(): { readonly backend: Backend; readonly browser: Browser } {
  return useBrowserAndBackend(startBackend)
}

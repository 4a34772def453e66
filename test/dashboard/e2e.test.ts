/**
 * End-to-end test of the built dashboard (dist/dashboard; `npm run build` first) in real headless Chromium.
 *
 * The backend lives in ONE function, {@link startBackend}. Until the SQLite store lands on this branch it is a
 * small fastify server that serves dist/dashboard and answers the query API from a synthetic fleet with the
 * same schemas, auth answers and query parameters as collector/routes/query.ts. It is meant to be replaced by
 * `buildCollector` + a real store fed with real interval reports; nothing else in this file needs to change
 * as long as the replacement reports the same two services (see FLEET).
 *
 * Set TG_SCREENSHOT_DIR to keep screenshots of each page for a look at the layout.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify from 'fastify'
import fastifyStatic from '@fastify/static'
import { chromium } from 'playwright-core'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { METRICS, PHASES } from '../../collector/index.js'

const CHROMIUM = '/usr/bin/chromium'
const DIST = fileURLToPath(new URL('../../dist/dashboard/', import.meta.url))
const RUN = existsSync(CHROMIUM) || Boolean(process.env.CI)
if (!RUN) {
  console.warn(
    `dashboard e2e test skipped: ${CHROMIUM} is missing (install it with apt-get install -y chromium; in CI it must run)`,
  )
}

/**
 * What the backend must report (the contract for whatever {@link startBackend} runs): a live LLM service on
 * two replicas that reported over the last 30 minutes, with some errors of one class, and a service that
 * stopped reporting 2.5 hours ago after reporting for 30 minutes. `phases` lists the metrics each reports,
 * in API order.
 */
const FLEET = {
  live: {
    service: 'chat',
    model: 'llama-3-8b',
    replicas: ['chat-0', 'chat-1'],
    phases: ['queue', 'prefill', 'decode', 'total', 'ttft', 'tpot'],
    errorClass: 'timeout',
  },
  stale: {
    service: 'embed',
    model: 'e5-large',
    replicas: ['embed-0'],
    phases: ['queue', 'h2d', 'kernel', 'total'],
    stoppedAgoMs: 150 * 60_000,
  },
} as const

/** The rows of the breakdown table for these phases: total first, then the others in API order. */
const tableOrder = (phases: readonly string[]) => ['total', ...phases.filter((p) => p !== 'total')]

/** The token the dashboard keeps in the page's sessionStorage (evaluated in the browser, hence the string). */
const storedToken = (page: Page) =>
  page.evaluate<string | null>("window.sessionStorage.getItem('tailguard.token')")

interface Backend {
  readonly url: string
  /** A read-scope API token the backend accepts. */
  readonly token: string
  close(): Promise<void>
}

// ---------------------------------------------------------------------------------------------------------
// startBackend(): the fixture collector. Replace with buildCollector + createStore + real reports.
// ---------------------------------------------------------------------------------------------------------

const INTERVAL_MS = 10_000
/** Phases in API order; phases (not ttft/tpot) have a share of total time. */
const PHASE_ORDER: readonly string[] = METRICS
const SHARE_PHASES: ReadonlySet<string> = new Set(PHASES.filter((p) => p !== 'total'))

/** One reported interval of one series: request outcomes and, per phase, a latency distribution. */
interface Interval {
  readonly tMs: number
  readonly ok: number
  readonly error: number
  readonly shed: number
  /** Per phase: median and tail scale (ms); the quantile q is median + tail · max(0, −ln(2(1 − q))). */
  readonly phases: Readonly<Record<string, { medianMs: number; tailMs: number }>>
}

interface Series {
  readonly service: string
  readonly model: string
  readonly version: string
  readonly replica: string
  readonly node: string
  readonly intervals: readonly Interval[]
}

/** The quantile `q` of a phase distribution (monotone in q). */
const quantileMs = (d: { medianMs: number; tailMs: number }, q: number) =>
  d.medianMs + d.tailMs * Math.max(0, -Math.log(2 * (1 - Math.min(q, 0.99999))))
/** Its mean (exponential tail above the median). */
const meanMs = (d: { medianMs: number; tailMs: number }) => d.medianMs + d.tailMs / 2

function makeFleet(nowMs: number): Series[] {
  const start = Math.floor(nowMs / INTERVAL_MS) * INTERVAL_MS
  const chat = (replica: string, node: string, skew: number): Series => {
    const intervals: Interval[] = []
    for (let i = 0; i < 180; i++) {
      const wave = 1 + 0.3 * Math.sin(i / 9 + skew)
      const queue = { medianMs: 4 * wave, tailMs: 6 * wave }
      const prefill = { medianMs: 35 + 5 * skew, tailMs: 20 }
      const decode = { medianMs: 180 * wave, tailMs: 90 }
      const total = {
        medianMs: queue.medianMs + prefill.medianMs + decode.medianMs + 3,
        tailMs: queue.tailMs + prefill.tailMs + decode.tailMs,
      }
      intervals.push({
        tMs: start - (i + 1) * INTERVAL_MS,
        ok: Math.round(40 * wave),
        error: i % 7 === 0 ? 2 : 0,
        shed: i % 11 === 0 ? 1 : 0,
        phases: {
          queue,
          prefill,
          decode,
          total,
          ttft: { medianMs: queue.medianMs + prefill.medianMs, tailMs: 25 },
          tpot: { medianMs: 12, tailMs: 4 },
        },
      })
    }
    return {
      service: FLEET.live.service,
      model: FLEET.live.model,
      version: '2026.11.1',
      replica,
      node,
      intervals,
    }
  }
  const embedIntervals: Interval[] = []
  for (let i = 0; i < 180; i++) {
    const wave = 1 + 0.2 * Math.cos(i / 15)
    embedIntervals.push({
      tMs: start - FLEET.stale.stoppedAgoMs - (i + 1) * INTERVAL_MS,
      ok: Math.round(120 * wave),
      error: 0,
      shed: 0,
      phases: {
        queue: { medianMs: 0.8, tailMs: 1.5 },
        h2d: { medianMs: 0.3, tailMs: 0.1 },
        kernel: { medianMs: 6 * wave, tailMs: 2 },
        total: { medianMs: 8 * wave, tailMs: 4 },
      },
    })
  }
  return [
    chat(FLEET.live.replicas[0], 'gpu-node-a', 0),
    chat(FLEET.live.replicas[1], 'gpu-node-b', 1),
    {
      service: FLEET.stale.service,
      model: FLEET.stale.model,
      version: '7',
      replica: FLEET.stale.replicas[0],
      node: 'gpu-node-a',
      intervals: embedIntervals,
    },
  ]
}

class HttpProblem extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

function parseTime(text: string | undefined, fallback: number, nowMs: number, field: string): number {
  if (text === undefined) return fallback
  if (text === 'now') return nowMs
  const rel = /^-(\d+)([smhd])$/.exec(text)
  if (rel) return nowMs - Number(rel[1]) * UNITS[rel[2]!]!
  const iso = Date.parse(text)
  if (/^\d{4}-\d{2}-\d{2}/.test(text) && Number.isFinite(iso)) return iso
  throw new HttpProblem(400, 'TG_ERR_BAD_REQUEST', `${field}: cannot read '${text}'`)
}

type Query = Record<string, string | undefined>

function checkKeys(q: Query, allowed: readonly string[]) {
  for (const k of Object.keys(q))
    if (!allowed.includes(k))
      throw new HttpProblem(
        400,
        'TG_ERR_BAD_REQUEST',
        `querystring must NOT have additional properties (${k})`,
      )
}

function summarize(
  intervals: ReadonlyArray<Interval>,
  phase: string,
  quantiles: readonly string[],
): {
  count: number
  min: number | null
  max: number | null
  mean: number | null
  quantiles: Record<string, number | null>
} {
  let count = 0
  let weighted = 0
  let min = Infinity
  let max = -Infinity
  const qs: Record<string, number> = {}
  for (const iv of intervals) {
    const d = iv.phases[phase]
    const n = iv.ok + iv.error
    if (!d || n === 0) continue
    count += n
    weighted += meanMs(d) * n
    min = Math.min(min, d.medianMs * 0.5)
    max = Math.max(max, quantileMs(d, 0.9999))
    for (const q of quantiles) qs[q] = Math.max(qs[q] ?? 0, quantileMs(d, Number(q)))
  }
  if (count === 0)
    return {
      count: 0,
      min: null,
      max: null,
      mean: null,
      quantiles: Object.fromEntries(quantiles.map((q) => [q, null])),
    }
  return { count, min, max, mean: weighted / count, quantiles: qs }
}

/**
 * Starts the backend the e2e test talks to, listening on 127.0.0.1 at a free port.
 *
 * The lead replaces the body with `buildCollector({ tokens, …, dashboardDir: DIST }, { store })` on a real
 * SQLite store fed by real interval reports of the FLEET services, then `app.listen({ host: '127.0.0.1', port: 0 })`.
 */
async function startBackend(): Promise<Backend> {
  const token = 'tg_read_e2e_0123456789abcdef'
  const app = Fastify({ logger: false })
  const nowMs = () => Date.now()
  const fleet = makeFleet(nowMs())

  app.addHook('onRequest', async (req, reply) => {
    if (!req.url.startsWith('/api/')) return undefined
    const header = req.headers.authorization
    if (!header?.startsWith('Bearer ')) {
      return reply.code(401).header('www-authenticate', 'Bearer').send({
        code: 'TG_ERR_UNAUTHORIZED',
        statusCode: 401,
        message: 'missing bearer token (Authorization: Bearer <token>)',
      })
    }
    if (header.slice(7) !== token) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer error="invalid_token"')
        .send({ code: 'TG_ERR_UNAUTHORIZED', statusCode: 401, message: 'invalid bearer token' })
    }
    return undefined
  })
  app.setErrorHandler((err, _req, reply) => {
    if (err instanceof HttpProblem)
      return reply
        .code(err.statusCode)
        .send({ code: err.code, statusCode: err.statusCode, message: err.message })
    return reply.code(500).send({ code: 'TG_ERR_INTERNAL', statusCode: 500, message: 'internal error' })
  })

  const SELECTOR = ['service', 'model', 'version', 'replica', 'node', 'from', 'to', 'quantiles']
  const select = (q: Query) =>
    fleet.filter(
      (s) =>
        (!q.service || s.service === q.service) &&
        (!q.model || s.model === q.model) &&
        (!q.version || s.version === q.version) &&
        (!q.replica || s.replica === q.replica) &&
        (!q.node || s.node === q.node),
    )
  const rangeOf = (q: Query) => {
    const now = nowMs()
    const toMs = parseTime(q.to, now, now, 'to')
    const fromMs = parseTime(q.from, toMs - 5 * 60_000, now, 'from')
    if (!(fromMs < toMs)) throw new HttpProblem(400, 'TG_ERR_BAD_REQUEST', 'from must be before to')
    return { fromMs, toMs }
  }
  const quantilesOf = (q: Query) => {
    const qs = q.quantiles ? q.quantiles.split(',') : ['0.5', '0.9', '0.99', '0.999']
    for (const x of qs)
      if (!(Number(x) > 0 && Number(x) <= 1))
        throw new HttpProblem(400, 'TG_ERR_BAD_REQUEST', `quantiles: '${x}' is not a number in (0, 1]`)
    return qs
  }
  const inRange = (series: readonly Series[], fromMs: number, toMs: number) =>
    series.flatMap((s) => s.intervals.filter((iv) => iv.tMs >= fromMs && iv.tMs < toMs))

  app.get('/api/v1/services', async () => ({
    services: fleet.map((s) => ({
      service: s.service,
      model: s.model,
      version: s.version,
      replica: s.replica,
      node: s.node,
      firstSeen: new Date(Math.min(...s.intervals.map((i) => i.tMs))).toISOString(),
      lastSeen: new Date(Math.max(...s.intervals.map((i) => i.tMs)) + INTERVAL_MS).toISOString(),
    })),
  }))

  app.get('/api/v1/breakdown', async (req) => {
    const q = req.query as Query
    checkKeys(q, SELECTOR)
    const quantiles = quantilesOf(q)
    const { fromMs, toMs } = rangeOf(q)
    const ivs = inRange(select(q), fromMs, toMs)
    const total = summarize(ivs, 'total', quantiles)
    const totalTime = (total.mean ?? 0) * total.count
    const phases = PHASE_ORDER.filter((p) => p !== 'total')
      .map((p) => ({ phase: p, ...summarize(ivs, p, quantiles) }))
      .filter((p) => p.count > 0)
      .map((p) => ({
        ...p,
        share: SHARE_PHASES.has(p.phase) && totalTime > 0 ? ((p.mean ?? 0) * p.count) / totalTime : null,
      }))
    const errors = ivs.reduce((a, iv) => a + iv.error, 0)
    return {
      from: new Date(fromMs).toISOString(),
      to: new Date(toMs).toISOString(),
      total,
      phases,
      requests: {
        ok: ivs.reduce((a, iv) => a + iv.ok, 0),
        error: errors,
        shed: ivs.reduce((a, iv) => a + iv.shed, 0),
        errorClasses: errors > 0 ? { [FLEET.live.errorClass]: errors } : {},
        outputTokens: ivs.reduce((a, iv) => a + (iv.phases.tpot ? iv.ok * 200 : 0), 0),
      },
    }
  })

  app.get('/api/v1/timeseries', async (req) => {
    const q = req.query as Query
    checkKeys(q, [...SELECTOR, 'phase', 'step'])
    const phase = q.phase ?? 'total'
    if (!PHASE_ORDER.includes(phase))
      throw new HttpProblem(400, 'TG_ERR_BAD_REQUEST', `phase: unknown phase '${phase}'`)
    const quantiles = quantilesOf(q)
    const { fromMs, toMs } = rangeOf(q)
    const stepMs = Math.max(10_000, Math.ceil((toMs - fromMs) / 60 / 10_000) * 10_000)
    const ivs = inRange(select(q), fromMs, toMs)
    const points = []
    for (let t = Math.floor(fromMs / stepMs) * stepMs; t < toMs; t += stepMs) {
      const s = summarize(
        ivs.filter((iv) => iv.tMs >= t && iv.tMs < t + stepMs),
        phase,
        quantiles,
      )
      if (s.count === 0) continue // like the store: buckets without data are absent
      points.push({
        t: new Date(t).toISOString(),
        count: s.count,
        ratePerSecond: s.count / (stepMs / 1000),
        quantiles: s.quantiles,
      })
    }
    return {
      from: new Date(fromMs).toISOString(),
      to: new Date(toMs).toISOString(),
      phase,
      stepMs,
      quantiles,
      points,
    }
  })

  await app.register(fastifyStatic, { root: DIST, prefix: '/', index: ['index.html'] })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  return { url: address, token, close: () => app.close() }
}

// ---------------------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------------------

describe.skipIf(!RUN)('dashboard end to end (headless Chromium)', () => {
  let backend: Backend
  let browser: Browser
  const shotDir = process.env.TG_SCREENSHOT_DIR
  const shot = async (page: Page, name: string) => {
    if (!shotDir) return
    mkdirSync(shotDir, { recursive: true })
    await page.screenshot({ path: join(shotDir, `${name}.png`), fullPage: true })
  }
  /** A new page that records every URL it requests and every console error it logs. */
  const openPage = async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    context.setDefaultTimeout(15_000)
    const page = await context.newPage()
    const urls: string[] = []
    const problems: string[] = []
    page.on('request', (r) => urls.push(r.url()))
    page.on('pageerror', (e) => problems.push(e.message))
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().includes('401')) problems.push(m.text())
    })
    return { page, urls, problems }
  }

  beforeAll(async () => {
    if (!existsSync(join(DIST, 'index.html')))
      throw new Error(`${DIST}index.html is missing: run npm run build before this test`)
    backend = await startBackend()
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
  })

  afterAll(async () => {
    await browser?.close()
    await backend?.close()
  })

  it('takes the token from the fragment, lists services, and shows a service with charts', async () => {
    const { page, urls, problems } = await openPage()
    await page.goto(`${backend.url}/#token=${encodeURIComponent(backend.token)}`)

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
    expect(page.url()).not.toContain(backend.token)
    expect(page.url()).not.toContain('token')
    await expect.poll(() => storedToken(page)).toBe(backend.token)
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
    expect(await tiles.textContent()).toMatch(/errors\d/)
    expect(await tiles.textContent()).toContain(`${FLEET.live.errorClass}:`)
    await shot(page, '2-detail')

    // Pickers: phase and quantiles change the chart and the address.
    await page.selectOption('select[aria-label="phase"]', 'decode')
    await page.waitForURL(/phase=decode/)
    await expect.poll(() => page.locator('section[aria-label="Latency: decode"]').count()).toBe(1)
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
    expect(urls.filter((u) => u.includes(backend.token))).toEqual([])
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('shows the empty state for a range without data, and the chart for one with data', async () => {
    const { page, problems } = await openPage()
    await page.goto(`${backend.url}/#token=${encodeURIComponent(backend.token)}`)
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

  it('asks for a token when there is none, and shows the error for a bad one', async () => {
    const { page } = await openPage()
    await page.goto(`${backend.url}/`)
    const form = page.locator('form[aria-label="sign in"]')
    await form.waitFor()
    expect(await page.locator('tr[data-service]').count()).toBe(0)
    await shot(page, '4-login')

    await form.locator('input#token').fill('not-the-token')
    await form.locator('button[type="submit"]').click()
    await expect.poll(() => form.locator('[role="alert"]').textContent()).toContain('invalid bearer token')
    expect(await storedToken(page)).toBeNull()
    await shot(page, '5-bad-token')

    await form.locator('input#token').fill(backend.token)
    await form.locator('button[type="submit"]').click()
    await page.locator(`tr[data-service="${FLEET.live.service}"]`).waitFor()
    await page.context().close()
  })

  it('shows the error for a bad token in the fragment', async () => {
    const { page } = await openPage()
    await page.goto(`${backend.url}/#token=wrong`)
    const alert = page.locator('form[aria-label="sign in"] [role="alert"]')
    await expect.poll(() => alert.textContent()).toBe('The collector refused the token: invalid bearer token')
    expect(page.url()).not.toContain('wrong')
    await page.context().close()
  })
})

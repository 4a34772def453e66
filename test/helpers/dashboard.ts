/**
 * The shared harness of the dashboard's end-to-end tests: headless Chromium (playwright-core) and the real
 * collector app on a real SQLite store in a temporary directory, fed through the report route as agents do.
 * `npm run build` must have built dist/dashboard first.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { buildCollector } from '../../collector/app.js'
import { createStore, latencyThresholds } from '../../collector/index.js'
import type { GpuPricing, GpuReportItem, ReportSeries, Store } from '../../collector/index.js'
import { storeDatabase } from '../../collector/store/index.js'
import { createSloEngine } from '../../collector/slo/index.js'
import type { SloEngine, SloTables } from '../../collector/slo/index.js'
import { createSloRoutes } from '../../collector/routes/slos.js'

/** The Chromium the tests drive. */
export const CHROMIUM = '/usr/bin/chromium'
/** The built dashboard the collector serves. */
export const DIST = fileURLToPath(new URL('../../dist/dashboard/', import.meta.url))

/**
 * Whether the browser tests run: Chromium is installed (in CI it must be). Warns once when they are skipped.
 *
 * @example describe.skipIf(!browserTestsRun('controller'))('…', () => { … })
 */
export function browserTestsRun(name: string): boolean {
  const run = existsSync(CHROMIUM) || Boolean(process.env.CI)
  if (!run)
    console.warn(
      `${name} e2e test skipped: ${CHROMIUM} is missing (install it with apt-get install -y chromium; in CI it must run)`,
    )
  return run
}

/** Launches headless Chromium; fails clearly when the dashboard is not built. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(join(DIST, 'index.html')))
    throw new Error(`${DIST}index.html is missing: run npm run build before this test`)
  return chromium.launch({
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
}

/**
 * A backend from `start` and a launched Chromium for the tests of the enclosing `describe` (started in
 * `beforeAll`, within `startTimeoutMs` when given; closed in `afterAll`). Read `backend` and `browser` inside the
 * tests.
 *
 * @example const ctx = useBrowserAndBackend(startBackend); it('…', async () => { await openPage(ctx.browser) })
 */
export function useBrowserAndBackend<B extends { close(): Promise<void> }>(
  start: () => Promise<B>,
  startTimeoutMs?: number,
): { readonly backend: B; readonly browser: Browser } {
  let backend: B | undefined
  let browser: Browser | undefined
  beforeAll(async () => {
    backend = await start()
    browser = await launchBrowser()
  }, startTimeoutMs)
  afterAll(async () => {
    await browser?.close()
    await backend?.close()
  })
  return {
    get backend() {
      return backend!
    },
    get browser() {
      return browser!
    },
  }
}

/** A page with what it requested and every console error and page error it logged. */
export interface WatchedPage {
  readonly page: Page
  readonly urls: string[]
  readonly problems: string[]
}

/**
 * A new page (its own context, 1280×900) that records every URL it requests and every console or page error
 * (console errors about a 401 are the sign-in tests' expected answers and are left out).
 *
 * @example const { page, problems } = await openPage(browser)
 */
export async function openPage(browser: Browser): Promise<WatchedPage> {
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

/**
 * Screenshots of whole pages into `TG_SCREENSHOT_DIR` when it is set (for a look at the layout), else nothing.
 *
 * @example const shot = screenshotter(); await shot(page, '1-list')
 */
export function screenshotter(): (page: Page, name: string) => Promise<void> {
  const dir = process.env.TG_SCREENSHOT_DIR
  return async (page, name) => {
    if (!dir) return
    mkdirSync(dir, { recursive: true })
    await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true })
  }
}

/** The token the dashboard keeps in the page's sessionStorage (evaluated in the browser, hence the string). */
export const storedToken = (page: Page) =>
  page.evaluate<string | null>("window.sessionStorage.getItem('tailguard.token')")

/** A collector on a fresh SQLite store in a temporary directory (not listening yet). */
export interface TestCollector {
  readonly app: FastifyInstance
  readonly store: Store
  /** The SLO engine, with the SLOs of `slosYaml` loaded as from a file. */
  readonly slos: SloEngine
  readonly dir: string
  /** Posts one interval report as the agent `agent` (its own seq per instance); throws unless stored. */
  report(
    agent: { readonly id: string; readonly node: string },
    startMs: number,
    intervalMs: number,
    content: { readonly series?: readonly ReportSeries[]; readonly gpus?: readonly GpuReportItem[] },
  ): Promise<void>
  close(): Promise<void>
}

/**
 * The real collector app (buildCollector) on a real SQLite store, with the SLO engine as collector/run.ts
 * builds it (its SLOs from a file, as `--slos` gives) and any more route plugins made from the store.
 *
 * @example const c = await startTestCollector({ tokens: [{ token, scope: 'read' }], agentToken, slosYaml })
 */
export async function startTestCollector(opts: {
  readonly tokens: ReadonlyArray<{ readonly token: string; readonly scope: 'read' | 'admin' }>
  readonly agentToken: string
  readonly slosYaml?: string
  readonly plugins?: (store: Store) => ReadonlyArray<(app: FastifyInstance) => Promise<void>>
  readonly clock?: () => number
  /** GPU-hour prices for cost per million requests (collector.pricing); none by default. */
  readonly pricing?: Partial<GpuPricing>
}): Promise<TestCollector> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-dash-'))
  const store = await createStore({ url: join(dir, 'tg.db') })
  const slos = createSloEngine({ source: store, db: storeDatabase(store) as unknown as Kysely<SloTables> })
  if (opts.slosYaml !== undefined) {
    const file = join(dir, 'slos.yaml')
    writeFileSync(file, opts.slosYaml)
    const loaded = await slos.useFiles(file)
    if (!loaded.ok) throw new Error(`SLO fixture invalid: ${JSON.stringify(loaded.problems)}`)
  }
  const app = await buildCollector(
    {
      tokens: [...opts.tokens, { token: opts.agentToken, scope: 'agent' }],
      reportBodyLimitBytes: 16 << 20,
      bodyLimitBytes: 1 << 20,
      dashboardDir: DIST,
    },
    {
      store,
      // As collector/run.ts wires them: goodput against the engine's latency SLOs, cost from the prices.
      figures: { pricing: opts.pricing ?? {}, latencySlos: () => latencyThresholds(slos) },
      plugins: [createSloRoutes(slos), ...(opts.plugins?.(store) ?? [])],
      ...(opts.clock ? { clock: opts.clock } : {}),
    },
  )
  const seqs = new Map<string, number>()
  return {
    app,
    store,
    slos,
    dir,
    async report(agent, startMs, intervalMs, content) {
      const seq = (seqs.get(agent.id) ?? 0) + 1
      seqs.set(agent.id, seq)
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/reports',
        headers: { authorization: `Bearer ${opts.agentToken}` },
        payload: {
          version: 1,
          agent: { id: agent.id, instance: `${agent.id}-instance`, node: agent.node },
          seq,
          intervalStartMs: startMs,
          intervalEndMs: startMs + intervalMs,
          series: content.series ?? [],
          ...(content.gpus ? { gpus: content.gpus } : {}),
        },
      })
      if (res.statusCode !== 200) throw new Error(`report rejected: ${res.body}`)
    },
    async close() {
      await slos.stop()
      await app.close()
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: Array<{ target: unknown[]; failureSummary?: string }>
}

/**
 * Runs axe-core on the page as it is and returns its serious and critical violations, described (empty when
 * the page passes).
 *
 * @example expect(await seriousViolations(page)).toEqual([])
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE_SOURCE })
  const violations = await page.evaluate<AxeViolation[]>(
    `window.axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)`,
  )
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.impact} ${v.id} (${v.help}): ${v.nodes
          .slice(0, 3)
          .map((n) => `${JSON.stringify(n.target)} ${n.failureSummary ?? ''}`)
          .join(' | ')}`,
    )
}

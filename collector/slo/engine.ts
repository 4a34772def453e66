/**
 * The SLO engine: evaluates every SLO each cycle from cached bucket series, steps the alert state
 * machines, writes state and notifications in one transaction, and delivers the outbox.
 */
import { watch } from 'node:fs'
import type { FSWatcher } from 'node:fs'
import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import { matchSilence } from './alerts.js'
import type { AlertRecord, AlertState, Silence, SilenceMatchers } from './alerts.js'
import { sloToRaw, validateSlo, windowLengthMs, windowStartMs, windowText } from './definition.js'
import type { FieldProblem, SloDefinition, SloSelector } from './definition.js'
import { stepAlert } from './alerts.js'
import { formatProblems, loadSloFiles } from './loader.js'
import type { SloLoadResult } from './loader.js'
import { HOUR_MS, burnRate, errorBudget, forecastExhaustion } from './math.js'
import type { BudgetForecast, BurnTier, ErrorBudget } from './math.js'
import { createSloPersistence } from './persistence.js'
import type { OutboxEntry } from './persistence.js'
import { SloSeries } from './series.js'
import type { SloDataSource } from './series.js'
import type { SloTables } from './tables.js'
import { deliverDue, formatFor } from './webhooks.js'
import type { AlertNotification, DeliveryResult, SloLogger, WebhookReceiver } from './webhooks.js'

/** Options of {@link createSloEngine}. */
export interface SloEngineOptions {
  /** Where SLIs come from: the collector's `Store` satisfies this. */
  readonly source: SloDataSource
  /** The database holding the SLO tables (migration 2026-11-21T2200_slo). */
  readonly db: Kysely<SloTables>
  readonly clock?: () => number
  readonly logger?: SloLogger
  /** How often `start()` evaluates; default 60 s. */
  readonly evaluationIntervalMs?: number
  /** How often `start()` retries due webhook deliveries between evaluations; default 5 s. */
  readonly deliveryIntervalMs?: number
  readonly webhooks?: readonly WebhookReceiver[]
  /** The collector's public URL, used in notification links. */
  readonly externalUrl?: string
  /** Jitter source for retry delays; default Math.random. */
  readonly random?: () => number
  readonly fetch?: typeof fetch
  /** Fine buckets this recent are re-read each cycle (late reports); default 2 min. */
  readonly settleMs?: number
  /** SLOs whose data is read at once; default 16. */
  readonly concurrency?: number
  /**
   * Most series one SLO's selector may match (default {@link DEFAULT_MAX_SERIES_PER_SLO}): an API SLO over it
   * is refused when it is defined, and any SLO over it (a file SLO, or one whose series grew) is not evaluated
   * and reported as failed with the reason, so one broad selector cannot make a cycle unbounded.
   */
  readonly maxSeriesPerSlo?: number
}

/** Default of {@link SloEngineOptions.maxSeriesPerSlo}. @example createSloEngine({ source, db, maxSeriesPerSlo: DEFAULT_MAX_SERIES_PER_SLO }) */
export const DEFAULT_MAX_SERIES_PER_SLO = 1000

/** The series list a source may offer (the collector's Store does), to bound the cost of a selector. */
type SeriesLister = {
  services(): Promise<ReadonlyArray<{ service: string; model: string; version: string }>>
}

function matches(sel: SloSelector, s: { service: string; model: string; version: string }): boolean {
  return (
    (sel.service === undefined || sel.service === s.service) &&
    (sel.model === undefined || sel.model === s.model) &&
    (sel.version === undefined || sel.version === s.version)
  )
}

/** One tier's view at the last evaluation. */
export interface TierStatus {
  readonly tier: string
  readonly severity: BurnTier['severity']
  readonly factor: number
  readonly longWindow: string
  readonly shortWindow: string
  readonly longBurnRate: number
  readonly shortBurnRate: number
  readonly longEvents: number
  /** Both windows above the factor and the minimum event count met. */
  readonly condition: boolean
  readonly state: AlertState
  readonly firedAtMs: number | null
  readonly resolvedAtMs: number | null
  readonly silenceId: string | null
}

/** The result of evaluating one SLO. */
export interface SloEvaluation {
  readonly slo: SloDefinition
  readonly source: 'file' | 'api'
  readonly evaluatedAtMs: number
  readonly windowStartMs: number
  readonly windowEndMs: number
  readonly good: number
  readonly total: number
  /** good / total over the window; null without events. */
  readonly sli: number | null
  readonly budget: ErrorBudget
  /** Burn rate per window text ('5m', '1h', …, and the SLO window, e.g. '30d'). */
  readonly burnRates: Readonly<Record<string, number>>
  readonly forecast: BudgetForecast
  readonly tiers: readonly TierStatus[]
}

/** What one cycle did. */
export interface CycleResult {
  readonly evaluated: number
  readonly failed: ReadonlyArray<{ readonly slo: string; readonly error: string }>
  readonly notifications: number
  readonly delivery: DeliveryResult
}

const quiet: SloLogger = { info() {}, warn() {}, error() {} }

/**
 * A window length as the API names it: `5m`, `1h`, `3d`, `1.5m`, and for scaled windows `5.6h` or `2.8d`.
 *
 * @example durationText(3_600_000) // '1h'
 */
export function durationText(ms: number): string {
  // What people say: the largest unit that is at least 1, to two significant digits, so a scaled window reads
  // `2.8d` or `22h` rather than `2d19h12m` or `22h24m`.
  const seconds = Math.abs(ms) / 1000
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const n = seconds / size
    if (n < 1 && unit !== 's') continue
    if (n === 0) return '0s'
    const rounded = n >= 10 ? Math.round(n) : Math.round(n * 10) / 10
    return `${ms < 0 ? '-' : ''}${rounded}${unit}`
  }
  return '0s'
}

const seriesKeyOf = (s: SloDefinition) => JSON.stringify([s.selector, s.sli, s.budgeting])

async function mapLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!)
  })
  await Promise.all(workers)
}

/**
 * Creates the SLO engine. Call `useFiles(path)` for `--slos`, mount `plugin` through `createSloRoutes`
 * (collector/routes/slos.ts), then `start()`; `evaluate(nowMs)` runs one cycle (tests drive it with a
 * controlled clock).
 *
 * @example
 * ```ts
 * const engine = createSloEngine({ source: store, db, clock: Date.now, logger, webhooks: [{ name: 'ops', url, secret }] })
 * const loaded = await engine.useFiles('./slos')
 * if (!loaded.ok) throw new ConfigInvalid(formatProblems(loaded.problems))
 * engine.start()
 * ```
 */
export function createSloEngine(opts: SloEngineOptions) {
  const clock = opts.clock ?? Date.now
  const logger = opts.logger ?? quiet
  const persistence = createSloPersistence(opts.db)
  const receivers = opts.webhooks ?? []
  const externalUrl = (opts.externalUrl ?? 'http://localhost:8080').replace(/\/$/, '')
  const random = opts.random ?? Math.random
  let fileSlos: SloDefinition[] = []
  let apiSlos = new Map<string, SloDefinition>()
  const series = new Map<string, { key: string; series: SloSeries }>()
  const latest = new Map<string, SloEvaluation>()
  let timers: NodeJS.Timeout[] = []
  let watcher: FSWatcher | undefined
  let running: Promise<unknown> = Promise.resolve()

  async function refreshApiSlos(): Promise<void> {
    const next = new Map<string, SloDefinition>()
    for (const row of await persistence.listDefinitions()) {
      const r = validateSlo(JSON.parse(row.spec))
      if (r.ok) next.set(row.name, r.slo)
      else
        logger.error(
          { slo: row.name, problems: r.problems },
          'stored SLO definition no longer valid; skipped',
        )
    }
    apiSlos = next
  }

  function definitions(): Array<{ slo: SloDefinition; source: 'file' | 'api' }> {
    const out: Array<{ slo: SloDefinition; source: 'file' | 'api' }> = fileSlos.map((slo) => ({
      slo,
      source: 'file',
    }))
    const names = new Set(fileSlos.map((s) => s.name))
    for (const slo of apiSlos.values()) if (!names.has(slo.name)) out.push({ slo, source: 'api' })
    return out
  }

  function spanOf(s: SloDefinition): number {
    const windowSpan = s.window.kind === 'rolling' ? s.window.days * 86_400_000 : 31 * 86_400_000
    return Math.max(windowSpan, ...s.tiers.map((t) => t.longWindowMs))
  }

  async function evaluateOne(
    def: { slo: SloDefinition; source: 'file' | 'api' },
    nowMs: number,
    alerts: Map<string, AlertRecord>,
  ): Promise<SloEvaluation> {
    const s = def.slo
    const key = seriesKeyOf(s)
    let entry = series.get(s.name)
    if (!entry || entry.key !== key) {
      entry = { key, series: new SloSeries(s.selector, s.sli, s.budgeting, opts.settleMs) }
      series.set(s.name, entry)
    }
    const ser = entry.series
    await ser.advance(opts.source, nowMs, spanOf(s))
    const end = ser.endMs
    const start = windowStartMs(s.window, end)
    const lengthMs = windowLengthMs(s.window, end)
    const { good, total } = ser.sum(start, end)
    const burnRates: Record<string, number> = {}
    const burnOver = (ms: number) => {
      const w = ser.sum(end - ms, end)
      const rate = burnRate(w.total - w.good, w.total, s.objective)
      burnRates[durationText(ms)] = rate
      return { rate, total: w.total }
    }
    const tiers: TierStatus[] = s.tiers.map((t) => {
      const long = burnOver(t.longWindowMs)
      const short = burnOver(t.shortWindowMs)
      const condition = long.rate > t.factor && short.rate > t.factor && long.total >= s.minEvents
      const a = alerts.get(`${s.name}\u0000${t.id}`)
      return {
        tier: t.id,
        severity: t.severity,
        factor: t.factor,
        longWindow: durationText(t.longWindowMs),
        shortWindow: durationText(t.shortWindowMs),
        longBurnRate: long.rate,
        shortBurnRate: short.rate,
        longEvents: long.total,
        condition,
        state: a?.state ?? 'inactive',
        firedAtMs: a?.firedAtMs ?? null,
        resolvedAtMs: a?.resolvedAtMs ?? null,
        silenceId: a?.silenceId ?? null,
      }
    })
    const current = burnOver(HOUR_MS).rate
    burnRates[windowText(s.window)] = burnRate(total - good, total, s.objective)
    const budget = errorBudget(good, total, s.objective, lengthMs)
    return {
      slo: s,
      source: def.source,
      evaluatedAtMs: nowMs,
      windowStartMs: start,
      windowEndMs: end,
      good,
      total,
      sli: total > 0 ? good / total : null,
      budget,
      burnRates,
      forecast:
        total > 0 ? forecastExhaustion(budget.remainingRatio, current, lengthMs, end) : { kind: 'never' },
      tiers,
    }
  }

  function notificationFor(
    e: SloEvaluation,
    t: TierStatus,
    rec: AlertRecord,
    status: 'firing' | 'resolved',
  ): AlertNotification {
    const s = e.slo
    const labels: Record<string, string> = { ...s.labels }
    for (const k of ['service', 'model', 'version'] as const) if (s.selector[k]) labels[k] = s.selector[k]!
    const tier = s.tiers.find((x) => x.id === t.tier)!
    return {
      status,
      slo: s.name,
      tier: t.tier,
      severity: t.severity,
      labels,
      summary:
        status === 'firing'
          ? `${s.name}: error budget burning at ${t.longBurnRate.toFixed(1)}× over ${t.longWindow} and ${t.shortBurnRate.toFixed(1)}× over ${t.shortWindow} (alert above ${tier.factor}×)`
          : `${s.name}: burn rate back under ${tier.factor}× over ${t.shortWindow}`,
      description: `SLO ${s.name}: objective ${(s.objective * 100).toPrecision(6).replace(/\.?0+$/, '')}% over ${windowText(s.window)}; SLI ${e.sli === null ? 'n/a' : (e.sli * 100).toFixed(4) + '%'}; budget remaining ${(e.budget.remainingRatio * 100).toFixed(2)}%.`,
      startsAtMs: rec.firedAtMs ?? e.evaluatedAtMs,
      endsAtMs: status === 'resolved' ? rec.resolvedAtMs : null,
      idempotencyKey: `${s.name}/${t.tier}/${rec.firedAtMs ?? 0}/${status}`,
    }
  }

  const maxSeries = opts.maxSeriesPerSlo ?? DEFAULT_MAX_SERIES_PER_SLO
  const warnedBroad = new Set<string>()
  /** Counts the series each selector matches, when the source can list them (null: it cannot). */
  async function seriesCounter(): Promise<((sel: SloSelector) => number) | null> {
    const lister = opts.source as Partial<SeriesLister>
    if (typeof lister.services !== 'function') return null
    const all = await lister.services()
    return (sel) => {
      let n = 0
      for (const x of all) if (matches(sel, x)) n++
      return n
    }
  }
  const broadMessage = (n: number) =>
    `selector matches ${n} series, more than the limit of ${maxSeries} (collector.sloMaxSeries); narrow it (service, model, version)`

  async function evaluateCycle(nowMs: number): Promise<CycleResult> {
    await refreshApiSlos()
    const count = await seriesCounter()
    const failed: Array<{ slo: string; error: string }> = []
    const defs = definitions().filter((d) => {
      const n = count?.(d.slo.selector) ?? 0
      if (n <= maxSeries) {
        warnedBroad.delete(d.slo.name)
        return true
      }
      failed.push({ slo: d.slo.name, error: `not evaluated: ${broadMessage(n)}` })
      if (!warnedBroad.has(d.slo.name)) {
        warnedBroad.add(d.slo.name)
        logger.warn({ slo: d.slo.name, series: n, limit: maxSeries }, `SLO not evaluated: ${broadMessage(n)}`)
      }
      return false
    })
    const alertList = await persistence.listAlerts()
    const alerts = new Map(alertList.map((a) => [`${a.slo}\u0000${a.tier}`, a]))
    const silences = await persistence.listSilences()
    const evaluations: SloEvaluation[] = []
    await mapLimit(defs, opts.concurrency ?? 16, async (d) => {
      try {
        evaluations.push(await evaluateOne(d, nowMs, alerts))
      } catch (err) {
        failed.push({ slo: d.slo.name, error: (err as Error).message })
        logger.error({ slo: d.slo.name, err }, 'SLO evaluation failed')
      }
    })
    const changed: AlertRecord[] = []
    const outbox: OutboxEntry[] = []
    let notifications = 0
    for (const e of evaluations) {
      const tiers = e.tiers.map((t) => {
        const prev = alerts.get(`${e.slo.name}\u0000${t.tier}`)
        const silenceId = matchSilence(
          silences,
          { slo: e.slo.name, tier: t.tier, severity: t.severity },
          nowMs,
        )
        const { next, notify } = stepAlert(
          prev,
          e.slo.name,
          t.tier,
          t.condition,
          silenceId,
          e.slo.forMs,
          e.windowEndMs,
        )
        if (next !== prev && !(prev === undefined && next.state === 'inactive')) changed.push(next)
        if (notify) {
          notifications++
          const n = notificationFor(e, t, next, notify)
          for (const r of receivers)
            if (!r.severities || r.severities.includes(t.severity))
              outbox.push({
                receiver: r.name,
                idempotencyKey: n.idempotencyKey,
                body: formatFor(r, n, externalUrl),
              })
          logger.info({ slo: e.slo.name, tier: t.tier, status: notify }, `SLO alert ${notify}`)
        }
        return {
          ...t,
          state: next.state,
          firedAtMs: next.firedAtMs,
          resolvedAtMs: next.resolvedAtMs,
          silenceId: next.silenceId,
        }
      })
      latest.set(e.slo.name, { ...e, tiers })
    }
    const names = new Set(defs.map((d) => d.slo.name))
    for (const n of [...latest.keys()]) if (!names.has(n)) latest.delete(n)
    for (const n of [...series.keys()]) if (!names.has(n)) series.delete(n)
    await persistence.commitCycle(changed, outbox, nowMs)
    const delivery = await deliver(nowMs)
    return { evaluated: evaluations.length, failed, notifications, delivery }
  }

  async function deliver(nowMs: number): Promise<DeliveryResult> {
    return deliverDue(persistence, receivers, nowMs, { random, logger, fetch: opts.fetch })
  }

  /** Runs one task at a time (evaluations and deliveries never overlap). */
  function serial<T>(task: () => Promise<T>): Promise<T> {
    const p = running.then(task, task)
    running = p.catch(() => undefined)
    return p
  }

  function statusOf(name: string): SloEvaluation | undefined {
    return latest.get(name)
  }

  async function reloadFiles(path: string, first = false): Promise<SloLoadResult> {
    const r = await loadSloFiles(path)
    if (r.ok) {
      fileSlos = [...r.slos]
      logger.info({ path, slos: r.slos.length }, 'SLO definitions loaded')
    } else if (!first)
      logger.error(
        { path, problems: formatProblems(r.problems) },
        'SLO definitions invalid; keeping the previous ones',
      )
    return r
  }

  return {
    /** Runs one evaluation cycle at `nowMs` (then delivers due notifications). */
    evaluate: (nowMs: number = clock()): Promise<CycleResult> => serial(() => evaluateCycle(nowMs)),
    /** Delivers due notifications only. */
    deliver: (nowMs: number = clock()): Promise<DeliveryResult> => serial(() => deliver(nowMs)),
    /** Replaces the file-defined SLOs (what `useFiles` does on each load). */
    setFileSlos(slos: readonly SloDefinition[]): void {
      fileSlos = [...slos]
    },
    /**
     * Loads SLOs from a file or folder (either format) and reloads them when it changes. An invalid
     * reload is logged and the previous definitions stay in force; the first load's result is returned (not
     * logged: the caller reports it), and after a failed first load nothing is watched.
     */
    async useFiles(path: string): Promise<SloLoadResult> {
      const r = await reloadFiles(path, true)
      watcher?.close()
      watcher = undefined
      if (!r.ok) return r
      let debounce: NodeJS.Timeout | undefined
      try {
        watcher = watch(path, () => {
          clearTimeout(debounce)
          debounce = setTimeout(() => void reloadFiles(path), 200)
        })
        watcher.on('error', (err) => logger.warn({ err, path }, 'SLO file watch failed'))
      } catch (err) {
        logger.warn({ err, path }, 'cannot watch SLO files; changes need a restart')
      }
      return r
    },
    start(): void {
      if (timers.length > 0) return
      const evalMs = opts.evaluationIntervalMs ?? 60_000
      void serial(() => evaluateCycle(clock())).catch((err: unknown) =>
        logger.error({ err }, 'SLO cycle failed'),
      )
      timers = [
        setInterval(() => {
          void serial(() => evaluateCycle(clock())).catch((err: unknown) =>
            logger.error({ err }, 'SLO cycle failed'),
          )
        }, evalMs),
        setInterval(() => {
          void serial(() => deliver(clock())).catch((err: unknown) =>
            logger.error({ err }, 'webhook delivery failed'),
          )
        }, opts.deliveryIntervalMs ?? 5000),
      ]
      for (const t of timers) t.unref()
    },
    async stop(): Promise<void> {
      for (const t of timers) clearInterval(t)
      timers = []
      watcher?.close()
      watcher = undefined
      await running
    },
    /** Every SLO with its latest evaluation (undefined before the first cycle). */
    list(): Array<{ slo: SloDefinition; source: 'file' | 'api'; evaluation: SloEvaluation | undefined }> {
      return definitions().map((d) => ({ ...d, evaluation: statusOf(d.slo.name) }))
    },
    get(
      name: string,
    ): { slo: SloDefinition; source: 'file' | 'api'; evaluation: SloEvaluation | undefined } | undefined {
      const d = definitions().find((x) => x.slo.name === name)
      return d ? { ...d, evaluation: statusOf(name) } : undefined
    },
    /** Remaining budget ratio over the current window, zoomed to the data, from the cached series. */
    burnDown(name: string): Array<{ tMs: number; remainingRatio: number }> {
      const e = latest.get(name)
      const entry = series.get(name)
      if (!e || !entry) return []
      const allowed = 1 - e.slo.objective
      return entry.series.burnDown(e.windowStartMs).map((p) => ({
        tMs: p.tMs,
        remainingRatio: p.total > 0 ? 1 - (p.total - p.good) / (allowed * p.total) : 1,
      }))
    },
    /** Creates or replaces an API SLO. */
    async putSlo(
      raw: unknown,
    ): Promise<
      | { ok: true; created: boolean; slo: SloDefinition }
      | { ok: false; problems: FieldProblem[] }
      | { ok: false; conflict: string }
    > {
      const r = validateSlo(raw)
      if (!r.ok) return r
      const count = await seriesCounter()
      const n = count?.(r.slo.selector) ?? 0
      if (n > maxSeries) return { ok: false, problems: [{ path: ['selector'], message: broadMessage(n) }] }
      if (fileSlos.some((s) => s.name === r.slo.name))
        return { ok: false, conflict: `SLO '${r.slo.name}' is defined in a file; change it there` }
      const { created } = await persistence.saveDefinition(
        r.slo.name,
        JSON.stringify(sloToRaw(r.slo)),
        clock(),
      )
      await refreshApiSlos()
      return { ok: true, created, slo: r.slo }
    },
    async deleteSlo(name: string): Promise<'deleted' | 'not-found' | 'file'> {
      if (fileSlos.some((s) => s.name === name)) return 'file'
      const deleted = await persistence.deleteDefinition(name)
      await refreshApiSlos()
      latest.delete(name)
      series.delete(name)
      return deleted ? 'deleted' : 'not-found'
    },
    alerts: () => persistence.listAlerts(),
    silences: () => persistence.listSilences(),
    async createSilence(input: {
      matchers: SilenceMatchers
      startsAtMs?: number
      endsAtMs: number
      createdBy: string
      comment: string
    }): Promise<Silence> {
      const now = clock()
      const s: Silence = {
        id: randomUUID(),
        matchers: input.matchers,
        startsAtMs: input.startsAtMs ?? now,
        endsAtMs: input.endsAtMs,
        createdBy: input.createdBy,
        comment: input.comment,
        createdMs: now,
      }
      await persistence.saveSilence(s)
      return s
    },
    /** Changes a silence's matchers, times or comment; undefined when no silence has this id. */
    async updateSilence(
      id: string,
      change: { matchers?: SilenceMatchers; startsAtMs?: number; endsAtMs?: number; comment?: string },
    ): Promise<Silence | undefined> {
      const s = (await persistence.listSilences()).find((x) => x.id === id)
      if (!s) return undefined
      const next: Silence = {
        ...s,
        matchers: change.matchers ?? s.matchers,
        startsAtMs: change.startsAtMs ?? s.startsAtMs,
        endsAtMs: change.endsAtMs ?? s.endsAtMs,
        comment: change.comment ?? s.comment,
      }
      await persistence.saveSilence(next)
      return next
    },
    /** Expires a silence now (it stays listed, as in Alertmanager). */
    async expireSilence(id: string): Promise<Silence | undefined> {
      const s = (await persistence.listSilences()).find((x) => x.id === id)
      if (!s) return undefined
      const now = clock()
      const next = { ...s, endsAtMs: Math.min(s.endsAtMs, now), startsAtMs: Math.min(s.startsAtMs, now) }
      await persistence.saveSilence(next)
      return next
    },
    outbox: () => persistence.listOutbox(),
    /** The names of the webhook receivers notifications go to (never their URLs or secrets). */
    receiverNames: (): string[] => receivers.map((r) => r.name),
    clock,
  }
}

/** The engine object {@link createSloEngine} returns. */
export type SloEngine = ReturnType<typeof createSloEngine>

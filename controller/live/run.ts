import { createStore } from '../../collector/index.js'
import type { SignalGauge, SloEngine, Store, TailguardConfig } from '../../collector/index.js'
import { createActuator } from './actuators/index.js'
import type { Actuator } from './actuators/index.js'
import { createLiveController, targetName } from './controller.js'
import type { ControllerLogger, LiveController, LiveTarget, TargetView } from './controller.js'
import { recommendationFromView } from '../autoscale/from-view.js'
import type { RecommendationBoard } from '../autoscale/recommendation.js'
import { httpJson } from './http.js'
import type { ObservationReader } from './observe.js'
import { createTargetPolicy, DEFAULT_LIVE_POLICY } from './policies.js'
import { tailguardOptionsFromConfig } from '../policies/tailguard/options.js'

/** A controller started by {@link runController}. */
export interface RunningController {
  readonly controller: LiveController
  readonly targets: readonly string[]
  stop(): Promise<void>
}

/** Where error budgets come from: the SLO engine in this process, or a collector's API. */
export type BudgetSource =
  | { readonly kind: 'engine'; readonly engine: SloEngine }
  | { readonly kind: 'http'; readonly url: string; readonly token?: string }

/**
 * Reads budget remaining (min over the named SLOs) from an SLO engine in this process or from a collector's
 * `GET /api/v1/slos`, cached for a second so one control round asks once.
 *
 * @example const budget = budgetReader({ kind: 'http', url: 'http://collector:7070', token })
 */
export function budgetReader(src: BudgetSource): (slos: readonly string[]) => Promise<number | null> {
  let cache: { atMs: number; byName: Map<string, number> } | null = null
  const load = async (): Promise<Map<string, number>> => {
    if (cache && Date.now() - cache.atMs < 1000) return cache.byName
    const byName = new Map<string, number>()
    if (src.kind === 'engine') {
      for (const d of src.engine.list())
        if (d.evaluation) byName.set(d.slo.name, d.evaluation.budget.remainingRatio)
    } else {
      const r = await httpJson(`${src.url.replace(/\/$/, '')}/api/v1/slos`, {
        ...(src.token ? { token: src.token } : {}),
      })
      if (r.ok && r.status === 200)
        for (const s of (r.json as { slos?: Array<{ name: string; budgetRemaining: number | null }> }).slos ??
          [])
          if (typeof s.budgetRemaining === 'number') byName.set(s.name, s.budgetRemaining)
    }
    cache = { atMs: Date.now(), byName }
    return byName
  }
  return async (slos) => {
    const m = await load()
    const v = slos.map((n) => m.get(n)).filter((x): x is number => x !== undefined)
    return v.length > 0 ? Math.min(...v) : null
  }
}

/**
 * GPU utilization of a target: the mean `gpuUtilPct` (newest report) of the GPUs running a process the agent
 * attributed to one of the target's replicas, 0..1; null when no GPU is attributed. The inventory is read at
 * most once a second, so one control round reads it once.
 *
 * @example const util = gpuUtilizationReader(store); await util({ service: 'chat' }, range) // 0.72
 */
export function gpuUtilizationReader(
  store: Pick<Store, 'gpus'>,
): NonNullable<ObservationReader['gpuUtilization']> {
  let cache: { atMs: number; gpus: Awaited<ReturnType<Store['gpus']>> } | null = null
  return async (sel) => {
    if (!cache || Date.now() - cache.atMs >= 1000) cache = { atMs: Date.now(), gpus: await store.gpus() }
    const util: number[] = []
    for (const g of cache.gpus) {
      const mine = g.processes.some(
        (p) =>
          p.replica !== null &&
          p.replica.service === sel.service &&
          (sel.model === undefined || p.replica.model === sel.model) &&
          (sel.version === undefined || p.replica.version === sel.version),
      )
      const u = g.fields.gpuUtilPct
      if (mine && u) util.push(u.mean / 100)
    }
    return util.length > 0 ? Math.min(1, util.reduce((a, b) => a + b, 0) / util.length) : null
  }
}

/**
 * Live signals of a target summed over its series (contract 1): requests in service (an LLM server's running
 * sequences, else the proxy's in-flight) and queued (the proxy's queue plus the requests waiting inside the
 * server), each last and mean over the range; queued per priority class; mean and max batch size; and an LLM
 * server's running sequences, tokens, KV use and preemptions when one reports them. Null when no source reports any.
 *
 * @example const signals = signalsReader(store); await signals({ service: 'chat' }, range) // { inFlight: { last: 12, mean: 9.5 }, … }
 */
export function signalsReader(store: Pick<Store, 'signals'>): NonNullable<ObservationReader['signals']> {
  return async (sel, range) => {
    const series = await store.signals(sel, range, Math.max(10_000, range.toMs - range.fromMs))
    // A replica can have two series: the proxy's in front of it (in flight, queued) and the server's own
    // scraped gauges (running, waiting). They are combined per replica (node + replica) before summing, so
    // what the proxy sent and what the server runs are not counted twice.
    const perReplica = new Map<string, Partial<Record<SignalGauge, Stat>>>()
    const byClass: number[] = []
    let batchSum = 0
    let batchN = 0
    let batchMax = 0
    let seen = false
    const tokens = { inputTokens: 0, outputTokens: 0, preemptions: 0 }
    let llmSeen = false
    for (const s of series) {
      for (const q of s.points)
        for (const c of ['inputTokens', 'outputTokens', 'preemptions'] as const) {
          const v = q.counters[c]
          if (v === undefined) continue
          tokens[c] += v
          llmSeen = true
        }
      const p = s.points[s.points.length - 1]
      if (p === undefined) continue
      const key = `${s.labels.node}\u0000${s.labels.replica}`
      const into = perReplica.get(key) ?? {}
      perReplica.set(key, into)
      for (const name of ['inFlight', 'running', 'waiting', 'queued', 'kvCacheUsage', 'busy'] as const) {
        const g = p.gauges[name]
        if (!g) continue
        const had = into[name]
        into[name] = had
          ? { last: had.last + g.last, mean: had.mean + g.mean }
          : { last: g.last, mean: g.mean }
      }
      for (const c of p.byClass)
        byClass[c.priorityClass] = (byClass[c.priorityClass] ?? 0) + (c.queued?.last ?? 0)
      if (p.gauges.batchSize) {
        batchSum += p.gauges.batchSize.mean
        batchN++
        batchMax = Math.max(batchMax, p.gauges.batchSize.max)
        seen = true
      }
    }
    const inFlight = { last: 0, mean: 0 }
    const queued = { last: 0, mean: 0 }
    let running = 0
    let kvSum = 0
    let kvN = 0
    let busyMean: number | null = null
    for (const g of perReplica.values()) {
      if (g.busy) busyMean = (busyMean ?? 0) + g.busy.mean
      if (g.running) {
        running += g.running.mean
        llmSeen = true
      }
      if (g.kvCacheUsage) {
        kvSum += g.kvCacheUsage.mean
        kvN++
      }
      // In service: what the server runs when it says so, else what the proxy has sent it. Waiting: the
      // proxy's queue plus what waits inside the server, which it reports (`waiting`), or which is the part of
      // the proxy's in-flight that the server is not running. A proxy in front of a server that queues
      // internally has an empty queue of its own while hundreds of requests wait behind it.
      const busy = g.running ?? g.inFlight
      const insideServer =
        g.waiting ??
        (g.inFlight && g.running
          ? {
              last: Math.max(0, g.inFlight.last - g.running.last),
              mean: Math.max(0, g.inFlight.mean - g.running.mean),
            }
          : undefined)
      if (busy) {
        inFlight.last += busy.last
        inFlight.mean += busy.mean
        seen = true
      }
      for (const waiting of [g.queued, insideServer]) {
        if (!waiting) continue
        queued.last += waiting.last
        queued.mean += waiting.mean
        seen = true
      }
    }
    if (!seen) return null
    return {
      inFlight,
      queued,
      queuedByClass: Array.from(byClass, (v) => v ?? 0),
      batchSize: { mean: batchN > 0 ? batchSum / batchN : 0, max: batchMax },
      ...(busyMean !== null ? { busyMean } : {}),
      ...(llmSeen ? { llm: { running, ...tokens, kvUsage: kvN > 0 ? kvSum / kvN : 0 } } : {}),
    }
  }
}

/** A gauge's last and mean values. */
interface Stat {
  last: number
  mean: number
}

/**
 * Builds the targets of `controllers:` (policy, actuators) and starts the live controller on `store` (or on
 * the store at `cfg.collector.db`, migrated). Used by `tailguard controller` and `tailguard start`.
 *
 * @example const c = await runController(cfg, logger, { budgets: { kind: 'engine', engine: collector.slos }, store: collector.store })
 */
export async function runController(
  cfg: Readonly<TailguardConfig>,
  logger: ControllerLogger,
  opts: {
    store?: Store
    budgets?: BudgetSource
    env?: NodeJS.ProcessEnv
    holder?: string
    reader?: Partial<ObservationReader>
    /** Where each target's recommendation is published for the autoscaler front ends (KEDA, HPA, JSON). */
    board?: RecommendationBoard
    /**
     * Actuators made in this process, by target name, added to those of the target's config (the serving
     * demo's replica set in `tailguard start`).
     */
    actuators?: Readonly<Record<string, readonly Actuator[]>>
  } = {},
): Promise<RunningController> {
  const env = opts.env ?? process.env
  const own = !opts.store
  let store = opts.store
  if (!store) {
    store = await createStore({ url: cfg.collector.db })
    const m = await store.migrate()
    if (m.kind === 'failed') {
      await store.close()
      throw new Error(`migration ${m.migration} failed: ${m.error}`)
    }
  }
  const targets: LiveTarget[] = []
  const problems: string[] = []
  const tailguardOptions = tailguardOptionsFromConfig(cfg.policy.tailguard)
  cfg.controllers.forEach((t, i) => {
    const p = createTargetPolicy(t.policy ?? DEFAULT_LIVE_POLICY, t, tailguardOptions)
    if (!p.ok) {
      problems.push(`controllers.${i}.policy: ${p.error}`)
      return
    }
    targets.push({
      name: targetName(t),
      config: t,
      policy: p.policy,
      actuators: [
        ...t.actuators.map((a) =>
          createActuator(a, t, env, (line) => logger.info(`${targetName(t)}: ${line}`)),
        ),
        ...(opts.actuators?.[targetName(t)] ?? []),
      ],
    })
  })
  if (problems.length > 0) {
    if (own) await store.close()
    throw new Error(problems.join('\n'))
  }
  const budget = opts.budgets ? budgetReader(opts.budgets) : null
  const reader: ObservationReader = {
    histograms: (s, r, m) => store.histograms(s, r, m),
    counts: (s, r) => store.counts(s, r),
    signals: signalsReader(store),
    gpuUtilization: gpuUtilizationReader(store),
    ...(budget ? { budgetRemaining: budget } : {}),
    ...opts.reader,
  }
  const c = cfg.controller
  const controller = createLiveController({
    store,
    reader,
    targets,
    intervalMs: c.intervalMs,
    staleAfterIntervals: c.staleAfterIntervals,
    leaseTtlMs: c.leaseTtlMs,
    effectAfterIntervals: c.effectAfterIntervals,
    logger,
    ...(opts.holder ? { holder: opts.holder } : {}),
    ...(opts.board ? { onView: (v: TargetView) => opts.board!.publish(recommendationFromView(v)) } : {}),
  })
  controller.start()
  return {
    controller,
    targets: targets.map((t) => t.name),
    async stop() {
      await controller.stop()
      if (own) await store.close()
    },
  }
}

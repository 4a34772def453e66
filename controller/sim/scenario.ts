import type { Policy } from '../policy.js'
import { aimdPolicy } from '../policies/aimd.js'
import { hpaPolicy, kedaPolicy } from '../policies/hpa.js'
import { kpaPolicy } from '../policies/kpa.js'
import { staticPolicy } from '../policies/static.js'
import { tailguardPolicy } from '../policies/tailguard/index.js'
import type { TailguardFeatures, TailguardOptions } from '../policies/tailguard/index.js'
import type { ArrivalSpec } from './arrivals.js'
import { runSimulation } from './simulator.js'
import type { ReplicaModel, SimConfig, SimResult, SimRunOptions } from './simulator.js'

/**
 * The baseline policies, by the names the CLI takes.
 *
 * @example for (const name of BASELINE_POLICIES) createBaselinePolicy(name, opts)
 */
export const BASELINE_POLICIES = ['static', 'hpa', 'keda', 'kpa', 'aimd'] as const
export type BaselinePolicyName = (typeof BASELINE_POLICIES)[number]

/**
 * Every policy the simulator runs by name: the baselines and tailguard's own.
 *
 * @example POLICIES.includes('tailguard') // true
 */
export const POLICIES = [...BASELINE_POLICIES, 'tailguard'] as const
export type PolicyName = (typeof POLICIES)[number]

/** The parts of the tailguard policy an ablation turns off, one at a time. */
export const TAILGUARD_PARTS = ['forecast', 'batching', 'admission', 'budget'] as const

/**
 * tailguard's options for a simulation: the objective it holds (TTFT for an LLM fleet with a TTFT objective,
 * else end to end, at p99), the cold start it assumes (the simulated one unless overridden), the replica bounds
 * and kind; `overrides` (flags, config file) win.
 *
 * @example tailguardOptionsFor(cfg, { headroom: 0.2 }).metric // 'ttft' for an LLM config with slo.ttftMs
 */
export function tailguardOptionsFor(config: SimConfig, overrides: TailguardOptions = {}): TailguardOptions {
  const llm = config.replica.kind === 'llm'
  const ttft = llm && config.slo.ttftMs !== undefined
  const cold = (config.coldStart?.loadMs ?? 60_000) + (config.coldStart?.warmupMs ?? 30_000)
  return {
    sloMs: ttft ? config.slo.ttftMs! : config.slo.e2eMs,
    metric: ttft ? 'ttft' : 'e2e',
    ...(llm && config.slo.tpotMs !== undefined ? { tpotSloMs: config.slo.tpotMs } : {}),
    model: llm ? 'llm' : 'batch',
    coldStartMs: cold,
    minReplicas: Math.max(1, config.warmPoolMin ?? 1),
    maxReplicas: config.maxReplicas ?? 1000,
    objective: config.slo.objective ?? 0.99,
    ...stripUndefined(overrides),
    features: { ...overrides.features },
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>
}

/**
 * The tailguard policy for a simulation, optionally with parts turned off; the name says which
 * (`tailguard -forecast`), so ablation rows stay apart in tables and reports.
 *
 * @example createTailguardPolicy(cfg, {}, ['forecast']).name // 'tailguard -forecast'
 */
export function createTailguardPolicy(
  config: SimConfig,
  overrides: TailguardOptions = {},
  off: ReadonlyArray<(typeof TAILGUARD_PARTS)[number]> = [],
): Policy<unknown> {
  const features: Record<string, boolean> = { ...overrides.features }
  for (const part of off) features[part] = false
  const policy = tailguardPolicy(
    tailguardOptionsFor(config, { ...overrides, features: features as TailguardFeatures }),
  ) as Policy<unknown>
  return off.length === 0 ? policy : { ...policy, name: `tailguard ${off.map((p) => `-${p}`).join(' ')}` }
}

/** Knobs of the baselines that depend on the workload; everything else is the published default. */
export interface BaselineOptions {
  /** Latency objective (ms) AIMD holds batch service time under. */
  readonly sloMs: number
  readonly minReplicas: number
  readonly maxReplicas: number
  /** HPA target GPU utilization. Default 0.7. */
  readonly hpaTargetUtilization?: number
  /** KEDA queue depth per replica. Default 10. */
  readonly kedaQueueDepthTarget?: number
  /** KPA per-replica concurrency (containerConcurrency). Default: the max batch. */
  readonly kpaContainerConcurrency?: number
  readonly maxBatch: number
}

/**
 * Builds a baseline policy by name with its published defaults and the workload-specific knobs.
 *
 * @example createBaselinePolicy('hpa', { sloMs: 200, minReplicas: 1, maxReplicas: 64, maxBatch: 16 })
 */
export function createBaselinePolicy(name: BaselinePolicyName, o: BaselineOptions): Policy<unknown> {
  const bounds = { minReplicas: o.minReplicas, maxReplicas: o.maxReplicas }
  switch (name) {
    case 'static':
      return staticPolicy() as Policy<unknown>
    case 'hpa':
      return hpaPolicy({ ...bounds, targetUtilization: o.hpaTargetUtilization ?? 0.7 }) as Policy<unknown>
    case 'keda':
      return kedaPolicy({ ...bounds, queueDepthTarget: o.kedaQueueDepthTarget ?? 10 }) as Policy<unknown>
    case 'kpa':
      return kpaPolicy({
        ...bounds,
        containerConcurrency: o.kpaContainerConcurrency ?? o.maxBatch,
      }) as Policy<unknown>
    case 'aimd':
      return aimdPolicy({ sloMs: o.sloMs }) as Policy<unknown>
  }
}

/**
 * Sustained throughput of one replica at the configured max batch (req/s): B / S(B) for a batcher; for
 * continuous batching, the time a request occupies its share of a full step batch plus its prefill.
 *
 * @example replicaCapacityRps({ kind: 'batch', service: { fixedMs: 5, perItemMs: 0.6 } }, 16) // ≈ 1,096
 */
export function replicaCapacityRps(
  model: ReplicaModel,
  maxBatch: number,
  meanTokens = { input: 1000, output: 200 },
): number {
  if (model.kind === 'batch')
    return (maxBatch / (model.service.fixedMs + model.service.perItemMs * maxBatch)) * 1000
  const seqs = Math.max(
    1,
    Math.min(
      maxBatch,
      Math.floor(model.kvCapacityTokens / Math.max(1, meanTokens.input + meanTokens.output)),
    ),
  )
  const stepMs = model.decodeStepMs + model.decodeMsPerSeq * seqs
  const perRequestMs = model.prefillMsPerToken * meanTokens.input + (meanTokens.output * stepMs) / seqs
  return 1000 / perRequestMs
}

/**
 * Peak arrival rate of a workload (req/s): the busiest minute of a trace (after time scaling), or the highest
 * rate of a synthetic pattern.
 *
 * @example peakRps({ kind: 'poisson', rps: 100, durationMs: 60_000 }) // 100
 */
export function peakRps(spec: ArrivalSpec): number {
  switch (spec.kind) {
    case 'trace': {
      const scale = spec.timeScale ?? 1
      const perMinute = new Map<number, number>()
      let max = 0
      for (const t of spec.trace.arrivalMs) {
        const m = Math.floor(t / scale / 60_000)
        const n = (perMinute.get(m) ?? 0) + 1
        perMinute.set(m, n)
        if (n > max) max = n
      }
      return max / 60
    }
    case 'trace-file':
      // The busiest minute at time scale 1; a faster replay packs more into a minute (an upper bound).
      return (spec.stats.peakPerMinute * (spec.timeScale ?? 1)) / 60
    case 'poisson':
      return spec.rps
    case 'mmpp':
      return Math.max(...spec.rps)
    case 'diurnal':
      return spec.meanRps * (1 + Math.abs(spec.amplitude))
    case 'step':
      return Math.max(...spec.steps.map((s) => s.rps))
  }
}

/**
 * Mean tokens per request of a workload (trace means, or the synthetic token shape).
 *
 * @example meanTokens({ kind: 'poisson', rps: 1, durationMs: 1000 }) // { input: 1000, output: 200 }
 */
export function meanTokens(spec: ArrivalSpec): { input: number; output: number } {
  if (spec.kind === 'trace') {
    let i = 0
    let o = 0
    const n = spec.trace.inputTokens.length
    for (let k = 0; k < n; k++) {
      i += spec.trace.inputTokens[k]!
      o += spec.trace.outputTokens[k]!
    }
    return { input: i / Math.max(1, n), output: o / Math.max(1, n) }
  }
  if (spec.kind === 'trace-file')
    return { input: spec.stats.meanInputTokens, output: spec.stats.meanOutputTokens }
  const t = spec.tokens ?? { meanInputTokens: 1000, meanOutputTokens: 200 }
  return { input: t.meanInputTokens, output: t.meanOutputTokens }
}

/**
 * Replicas that static peak provisioning buys: enough that the peak runs at `targetUtilization` of each
 * replica's capacity.
 *
 * @example peakProvisionedReplicas(cfg, 0.7)
 */
export function peakProvisionedReplicas(config: SimConfig, targetUtilization = 0.7): number {
  const cap = replicaCapacityRps(config.replica, config.initial.maxBatch, meanTokens(config.arrivals))
  return Math.max(1, Math.ceil(peakRps(config.arrivals) / (cap * targetUtilization) - 1e-9))
}

/**
 * Runs several policies on the same config and seed, one after another.
 *
 * @example const results = comparePolicies(cfg, ['static', 'hpa'], opts)
 */
export function comparePolicies(
  config: SimConfig,
  names: readonly BaselinePolicyName[],
  baseline: BaselineOptions,
  run: (name: BaselinePolicyName) => SimRunOptions = () => ({}),
): SimResult[] {
  return names.map((name) => runSimulation(config, createBaselinePolicy(name, baseline), run(name)))
}

/** What {@link findReplicas} aims for: a percentile of one latency metric under a bound. */
export interface ReplicaTarget {
  readonly metric: 'e2e' | 'ttft' | 'tpot'
  /** 0.5, 0.99 or 0.999 */
  readonly percentile: 0.5 | 0.99 | 0.999
  readonly maxMs: number
  /** Shed share allowed (admission limits may shed). Default 0. */
  readonly maxShedRate?: number
}

/** One tried replica count. */
export interface ReplicaProbe {
  readonly replicas: number
  readonly valueMs: number
  readonly shedRate: number
  readonly meets: boolean
  readonly gpuHours: number
}

/** The answer of a what-if search. */
export interface ReplicaSearch {
  /** Smallest replica count that meets the target, or null when even `maxReplicas` does not. */
  readonly replicas: number | null
  readonly probes: readonly ReplicaProbe[]
  readonly best: SimResult | null
}

/**
 * What-if capacity planning: the smallest static replica count (all warm from the start) whose simulated
 * percentile meets the target, by doubling then bisection (assumes more replicas never hurt).
 *
 * @example findReplicas(cfg, { metric: 'ttft', percentile: 0.99, maxMs: 2000 }, 64).replicas
 */
export function findReplicas(
  config: SimConfig,
  target: ReplicaTarget,
  maxReplicas: number,
  onProbe: (probe: ReplicaProbe) => void = () => {},
): ReplicaSearch {
  const probes: ReplicaProbe[] = []
  const results = new Map<number, SimResult>()
  const tryN = (n: number): boolean => {
    const cfg: SimConfig = {
      ...config,
      initial: { ...config.initial, desiredReplicas: n },
      warmPoolMin: n,
      maxReplicas: Math.max(n, config.maxReplicas ?? n),
    }
    const r = runSimulation(cfg, staticPolicy())
    const stats = r.latencyMs[target.metric] ?? r.latencyMs.e2e
    const valueMs =
      target.percentile === 0.5 ? stats.p50 : target.percentile === 0.99 ? stats.p99 : stats.p999
    const shedRate = r.arrived > 0 ? r.shed / r.arrived : 0
    const meets = valueMs <= target.maxMs && shedRate <= (target.maxShedRate ?? 0)
    const probe = { replicas: n, valueMs, shedRate, meets, gpuHours: r.gpuHours }
    probes.push(probe)
    onProbe(probe)
    results.set(n, r)
    return meets
  }
  let lo = 0
  let hi = 1
  while (!tryN(hi)) {
    lo = hi
    if (hi >= maxReplicas) return { replicas: null, probes, best: null }
    hi = Math.min(maxReplicas, hi * 2)
  }
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (tryN(mid)) hi = mid
    else lo = mid
  }
  return { replicas: hi, probes, best: results.get(hi) ?? null }
}

import { CliError } from '../../collector/index.js'
import {
  createBaselinePolicy,
  createTailguardPolicy,
  peakProvisionedReplicas,
  TAILGUARD_PARTS,
} from './scenario.js'
import type { BASELINE_POLICIES, PolicyName } from './scenario.js'
import type { TailguardOptions } from '../policies/tailguard/index.js'
import type { Policy } from '../policy.js'
import type { ReplicaModel, ServiceNoise, SimConfig } from './simulator.js'
import type { ArrivalSpec } from './arrivals.js'

/**
 * The workloads and fleet configs of `tailguard sim`, shared by the CLI (controller/cli/sim.ts) and the
 * what-if API (whatif.ts), so that both simulate the same fleet for the same input.
 */
export const PATTERNS = ['poisson', 'mmpp', 'diurnal', 'step'] as const
export type Pattern = (typeof PATTERNS)[number]

/** Raw commander options (strings until validated). */
export interface SimFlags {
  trace?: string
  pattern?: string
  timeScale: string
  rps: string
  duration: string
  requests?: string
  model?: string
  serviceMs: string
  perItemMs: string
  noise: string
  prefillMsPerToken: string
  decodeStepMs: string
  decodeMsPerSeq: string
  kvTokens: string
  kv: string
  kvBlockTokens: string
  windowMs?: string
  maxBatch?: string
  replicas?: string
  minReplicas: string
  maxReplicas: string
  coldStartS: string
  warmupS: string
  classes: string
  deadlineMs?: string
  maxQueue?: string
  maxConcurrency?: string
  sloP99Ms?: string
  sloTtftMs?: string
  sloTpotMs?: string
  objective: string
  policy: string
  seed: string
  json?: boolean
  report?: string
  findReplicas?: boolean
  targetMetric: string
  hpaTarget: string
  kedaQueueTarget: string
  kpaConcurrency?: string
  gpuHourUsd?: string
  progress: boolean
  controlIntervalMs: string
  observeMissing?: string
  observeStaleS?: string
  observe?: string
  tgHeadroom?: string
  tgColdStartS?: string
  tgNPlusOne?: boolean
  tgScaleDownAfterS?: string
  tgScaleDownStepS?: string
  tgQueueShare?: string
  tgOutputTail?: string
  tgOff?: string
  tgAblation?: boolean
  config?: string
}

export function num(
  flag: string,
  raw: string | undefined,
  o: { min?: number; integer?: boolean; gt?: number; max?: number } = {},
): number {
  const v = Number(raw)
  const bad =
    raw === undefined ||
    raw.trim() === '' ||
    !Number.isFinite(v) ||
    (o.integer === true && !Number.isInteger(v)) ||
    (o.min !== undefined && v < o.min) ||
    (o.gt !== undefined && v <= o.gt) ||
    (o.max !== undefined && v > o.max)
  if (bad) {
    const what = `${o.integer ? 'an integer' : 'a number'}${o.min !== undefined ? ` ≥ ${o.min}` : ''}${o.gt !== undefined ? ` > ${o.gt}` : ''}${o.max !== undefined ? ` ≤ ${o.max.toLocaleString('en-US')}` : ''}`
    throw new CliError(`${flag}: expected ${what}, got "${raw ?? ''}"`)
  }
  return v
}

export function parseNoise(raw: string): ServiceNoise {
  if (raw === 'none') return { kind: 'none' }
  if (raw === 'exponential') return { kind: 'exponential' }
  const m = /^lognormal:(.+)$/.exec(raw)
  if (m) return { kind: 'lognormal', cv: num('--noise lognormal:CV', m[1], { min: 0 }) }
  throw new CliError(`--noise: expected none, exponential or lognormal:CV (e.g. lognormal:0.3), got "${raw}"`)
}

/** One workload to simulate: its arrival spec, name, description and attribution. */
export interface Workload {
  readonly name: string
  readonly spec: ArrivalSpec
  readonly description: string
  readonly attribution?: string
  readonly llmDefault: boolean
}

export function synthetic(
  pattern: Pattern,
  rps: number,
  durationMs: number,
  maxRequests: number | undefined,
): Workload {
  const limits = { durationMs, ...(maxRequests !== undefined ? { maxRequests } : {}) }
  const span = `${(durationMs / 60_000).toFixed(0)} min`
  switch (pattern) {
    case 'poisson':
      return {
        name: 'poisson',
        spec: { kind: 'poisson', rps, ...limits },
        description: `${rps} req/s for ${span}`,
        llmDefault: false,
      }
    case 'mmpp':
      return {
        name: 'mmpp',
        spec: { kind: 'mmpp', rps: [rps * 0.5, rps * 2.5], meanDwellMs: [60_000, 20_000], ...limits },
        description: `bursty, ${rps * 0.5} req/s (mean 60 s) ⇄ ${rps * 2.5} req/s (mean 20 s), mean ${rps} req/s, ${span}`,
        llmDefault: false,
      }
    case 'diurnal':
      return {
        name: 'diurnal',
        spec: { kind: 'diurnal', meanRps: rps, amplitude: 0.6, periodMs: durationMs, ...limits },
        description: `mean ${rps} req/s ± 60%, one cycle over ${span}`,
        llmDefault: false,
      }
    case 'step':
      return {
        name: 'step',
        spec: {
          kind: 'step',
          steps: [
            { atMs: 0, rps },
            { atMs: durationMs / 3, rps: rps * 3 },
            { atMs: (2 * durationMs) / 3, rps },
          ],
          ...limits,
        },
        description: `${rps} → ${rps * 3} req/s at ${span}/3, back at 2/3`,
        llmDefault: false,
      }
  }
}

/** Builds the simulation config for one workload from validated flags. */
export function buildConfig(w: Workload, f: SimFlags): { config: SimConfig; llm: boolean } {
  const model = f.model ?? (w.llmDefault ? 'llm' : 'batch')
  if (model !== 'llm' && model !== 'batch')
    throw new CliError(`--model: expected batch or llm, got "${model}"`)
  const llm = model === 'llm'
  const noise = parseNoise(f.noise)
  const replica: ReplicaModel = llm
    ? {
        kind: 'llm',
        prefillMsPerToken: num('--prefill-ms-per-token', f.prefillMsPerToken, { min: 0 }),
        decodeStepMs: num('--decode-step-ms', f.decodeStepMs, { gt: 0 }),
        decodeMsPerSeq: num('--decode-ms-per-seq', f.decodeMsPerSeq, { min: 0 }),
        kvCapacityTokens: num('--kv-tokens', f.kvTokens, { gt: 0 }),
        kv:
          f.kv === 'paged'
            ? {
                kind: 'paged',
                blockTokens: num('--kv-block-tokens', f.kvBlockTokens, { min: 1, integer: true }),
              }
            : { kind: 'reserve' },
        noise,
      }
    : {
        kind: 'batch',
        service: {
          fixedMs: num('--service-ms', f.serviceMs, { min: 0 }),
          perItemMs: num('--per-item-ms', f.perItemMs, { min: 0 }),
        },
        noise,
      }
  const shares = f.classes.split(',').map((s) => num('--classes', s, { gt: 0 }))
  const maxQueue =
    f.maxQueue !== undefined
      ? num('--max-queue', f.maxQueue, { min: 0, integer: true })
      : Number.MAX_SAFE_INTEGER
  const maxConcurrency =
    f.maxConcurrency !== undefined
      ? num('--max-concurrency', f.maxConcurrency, { min: 1, integer: true })
      : Number.MAX_SAFE_INTEGER
  const sloMs = f.sloP99Ms !== undefined ? num('--slo-p99-ms', f.sloP99Ms, { gt: 0 }) : llm ? 30_000 : 100
  const missing = f.observeMissing !== undefined ? num('--observe-missing', f.observeMissing, { min: 0 }) : 0
  if (missing >= 1)
    throw new CliError(`--observe-missing: expected a share below 1, got "${f.observeMissing}"`)
  const staleMs =
    f.observeStaleS !== undefined ? num('--observe-stale-s', f.observeStaleS, { min: 0 }) * 1000 : 0
  const config: SimConfig = {
    seed: num('--seed', f.seed, { integer: true, min: 0 }),
    controlIntervalMs: num('--control-interval-ms', f.controlIntervalMs, { gt: 0 }),
    ...(missing > 0 || staleMs > 0 ? { observationFaults: { missingShare: missing, staleMs } } : {}),
    ...(f.observe === 'proxy' ? { observe: 'proxy' as const } : {}),
    arrivals: w.spec,
    replica,
    initial: {
      batchWindowMs: f.windowMs !== undefined ? num('--window-ms', f.windowMs, { min: 0 }) : llm ? 0 : 10,
      maxBatch:
        f.maxBatch !== undefined ? num('--max-batch', f.maxBatch, { min: 1, integer: true }) : llm ? 64 : 16,
      admission: shares.map(() => ({ maxQueue, maxConcurrency })),
      desiredReplicas: 1,
    },
    slo: {
      e2eMs: sloMs,
      ...(f.sloTtftMs !== undefined ? { ttftMs: num('--slo-ttft-ms', f.sloTtftMs, { gt: 0 }) } : {}),
      ...(f.sloTpotMs !== undefined ? { tpotMs: num('--slo-tpot-ms', f.sloTpotMs, { gt: 0 }) } : {}),
      objective: num('--objective', f.objective, { gt: 0 }),
    },
    coldStart: {
      loadMs: num('--cold-start-s', f.coldStartS, { min: 0 }) * 1000,
      warmupMs: num('--warmup-s', f.warmupS, { min: 0 }) * 1000,
    },
    warmPoolMin: num('--min-replicas', f.minReplicas, { min: 0, integer: true }),
    maxReplicas: num('--max-replicas', f.maxReplicas, { min: 1, integer: true }),
    classShares: shares,
    ...(f.deadlineMs !== undefined ? { deadlineMs: num('--deadline-ms', f.deadlineMs, { gt: 0 }) } : {}),
  }
  if ((config.slo.objective ?? 0.99) >= 1)
    throw new CliError(`--objective: expected a share below 1, got "${f.objective}"`)
  if ((config.warmPoolMin ?? 0) > (config.maxReplicas ?? Infinity))
    throw new CliError(
      `--min-replicas: ${config.warmPoolMin} is more than --max-replicas ${config.maxReplicas}; raise --max-replicas or lower --min-replicas`,
    )
  const replicas =
    f.replicas !== undefined
      ? num('--replicas', f.replicas, { min: 1, integer: true })
      : peakProvisionedReplicas(config)
  return { config: { ...config, initial: { ...config.initial, desiredReplicas: replicas } }, llm }
}

/** One simulation run: its label and a fresh policy. */
export interface PolicyRun {
  readonly label: string
  make(): Policy<unknown>
}

/**
 * The runs that compare `policies` on one config: baselines with their knobs from `f`, tailguard with `tg`
 * (parts in `off` turned off) and, with `ablation`, tailguard with each part off in turn.
 *
 * @example policyRuns(config, ['static', 'hpa'], flags, {}, []).map((r) => runSimulation(config, r.make()))
 */
export function policyRuns(
  config: SimConfig,
  policies: readonly PolicyName[],
  f: Pick<SimFlags, 'hpaTarget' | 'kedaQueueTarget' | 'kpaConcurrency'>,
  tg: TailguardOptions,
  off: ReadonlyArray<(typeof TAILGUARD_PARTS)[number]>,
  ablation = false,
): PolicyRun[] {
  const baseline = (name: (typeof BASELINE_POLICIES)[number]) =>
    createBaselinePolicy(name, {
      sloMs: config.slo.e2eMs,
      minReplicas: Math.max(1, config.warmPoolMin ?? 1),
      maxReplicas: config.maxReplicas ?? 256,
      maxBatch: config.initial.maxBatch,
      hpaTargetUtilization: num('--hpa-target', f.hpaTarget, { gt: 0, max: 1 }),
      kedaQueueDepthTarget: num('--keda-queue-target', f.kedaQueueTarget, { gt: 0 }),
      ...(f.kpaConcurrency !== undefined
        ? { kpaContainerConcurrency: num('--kpa-concurrency', f.kpaConcurrency, { gt: 0 }) }
        : {}),
    })
  const runs: PolicyRun[] = []
  for (const name of policies) {
    if (name === 'tailguard') {
      runs.push({ label: 'tailguard', make: () => createTailguardPolicy(config, tg, [...off]) })
      if (ablation)
        for (const part of TAILGUARD_PARTS)
          runs.push({
            label: `tailguard -${part}`,
            make: () => createTailguardPolicy(config, tg, [...off, part]),
          })
      continue
    }
    runs.push({ label: name, make: () => baseline(name) })
  }
  return runs
}

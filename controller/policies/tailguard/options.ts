/**
 * Options of the `tailguard` policy, with their defaults in one constant.
 */
import type { TailguardConfig } from '../../../collector/index.js'

/** Which parts of the policy run (all by default); turning one off is how the ablation table is made. */
export interface TailguardFeatures {
  /** Forecast arrivals over the cold-start horizon (trend, burst); off: size for the current rate. */
  readonly forecast?: boolean
  /** Choose batching window and max batch; off: keep the initial batching setpoints. */
  readonly batching?: boolean
  /** Per-class admission caps and deadline-aware drops; off: never touch admission. */
  readonly admission?: boolean
  /** Error-budget term on the headroom; off: fixed headroom. */
  readonly budget?: boolean
}

/** Options of {@link tailguardPolicy}; every one has a default. */
export interface TailguardOptions {
  /** Latency objective of `metric` at `percentile`, ms. Default 200. */
  readonly sloMs?: number
  /** Which latency the objective is on: end to end, or time to first token (LLMs). Default 'e2e'. */
  readonly metric?: 'e2e' | 'ttft'
  /** Percentile the objective is stated at. Default 0.99. */
  readonly percentile?: number
  /** LLMs with a TTFT objective: the end-to-end objective as well (sizes the decode budget). Optional. */
  readonly e2eSloMs?: number
  /** LLMs: time-per-output-token objective, ms. Optional. */
  readonly tpotSloMs?: number
  /** Replica kind; default: detected from the observations (TTFT or LLM signals mean 'llm'). */
  readonly model?: 'batch' | 'llm'
  /** Cold start the policy assumes for a new replica (load + warm-up), ms: the forecast horizon. Default 90 s. */
  readonly coldStartMs?: number
  /** Warm minimum: never fewer replicas than this (at least 1). Default 1. */
  readonly minReplicas?: number
  readonly maxReplicas?: number
  /** Survive losing any one replica (survival check at the forecast). Default false. */
  readonly nPlusOne?: boolean
  /** Load headroom on the forecast before sizing (0.15 = size for 115%). Default 0.15. */
  readonly headroom?: number
  /** Scale down only below the highest need of this look-back window, ms. Default 120 s. */
  readonly scaleDownAfterMs?: number
  /** At most one replica down per this many ms. Default 30 s. */
  readonly scaleDownStepMs?: number
  /** Share of the latency objective the queue and batching window may use. Default 0.5. */
  readonly queueShare?: number
  /** Upper bound on the max batch the policy sets (batch replicas). Default 256. */
  readonly maxBatchCap?: number
  /** LLMs: a tail request generates this many times the mean output tokens (e2e budget). Default 3. */
  readonly outputTailFactor?: number
  /** Fewest (batch size, service time) observations before the S(B) fit is trusted. Default 8. */
  readonly minFitPoints?: number
  /** Lowest R² for the S(B) fit to be trusted; below it batching falls back to AIMD. Default 0.5. */
  readonly minFitR2?: number
  /** Error budget objective (share of good requests). Default 0.99. */
  readonly objective?: number
  readonly features?: TailguardFeatures
}

/** Defaults of {@link TailguardOptions}. */
export const TAILGUARD_DEFAULTS = {
  sloMs: 200,
  metric: 'e2e',
  percentile: 0.99,
  coldStartMs: 90_000,
  minReplicas: 1,
  maxReplicas: 256,
  nPlusOne: false,
  headroom: 0.15,
  scaleDownAfterMs: 120_000,
  scaleDownStepMs: 30_000,
  queueShare: 0.5,
  maxBatchCap: 256,
  outputTailFactor: 3,
  minFitPoints: 8,
  minFitR2: 0.5,
  objective: 0.99,
} as const

/** Options with every default filled in. */
export interface ResolvedTailguardOptions {
  readonly sloMs: number
  readonly metric: 'e2e' | 'ttft'
  readonly percentile: number
  readonly e2eSloMs: number | undefined
  readonly tpotSloMs: number | undefined
  readonly model: 'batch' | 'llm' | undefined
  readonly coldStartMs: number
  readonly minReplicas: number
  readonly maxReplicas: number
  readonly nPlusOne: boolean
  readonly headroom: number
  readonly scaleDownAfterMs: number
  readonly scaleDownStepMs: number
  readonly queueShare: number
  readonly maxBatchCap: number
  readonly outputTailFactor: number
  readonly minFitPoints: number
  readonly minFitR2: number
  readonly objective: number
  readonly features: Required<TailguardFeatures>
}

/**
 * Fills in defaults and checks the options (throws a RangeError naming the option on nonsense).
 *
 * @example resolveTailguardOptions({ sloMs: 2000, metric: 'ttft' }).coldStartMs // 90000
 */
export function resolveTailguardOptions(o: TailguardOptions): ResolvedTailguardOptions {
  const r: ResolvedTailguardOptions = {
    ...TAILGUARD_DEFAULTS,
    ...stripUndefined(o),
    e2eSloMs: o.e2eSloMs,
    tpotSloMs: o.tpotSloMs,
    model: o.model,
    features: {
      forecast: true,
      batching: true,
      admission: true,
      budget: true,
      ...stripUndefined(o.features ?? {}),
    },
  }
  const positive: Array<keyof ResolvedTailguardOptions> = ['sloMs', 'coldStartMs', 'scaleDownStepMs']
  for (const k of positive)
    if (!(typeof r[k] === 'number' && (r[k] as number) >= 0 && Number.isFinite(r[k])))
      throw new RangeError(`tailguard: ${k} must be a finite number ≥ 0, got ${String(r[k])}`)
  if (!(r.sloMs > 0)) throw new RangeError(`tailguard: sloMs must be > 0, got ${r.sloMs}`)
  if (!(r.percentile > 0 && r.percentile < 1))
    throw new RangeError(`tailguard: percentile must be in (0, 1), got ${r.percentile}`)
  if (!(r.queueShare > 0 && r.queueShare <= 1))
    throw new RangeError(`tailguard: queueShare must be in (0, 1], got ${r.queueShare}`)
  if (!(r.headroom >= 0)) throw new RangeError(`tailguard: headroom must be ≥ 0, got ${r.headroom}`)
  if (!(Number.isInteger(r.minReplicas) && r.minReplicas >= 0))
    throw new RangeError(`tailguard: minReplicas must be an integer ≥ 0, got ${r.minReplicas}`)
  if (!(Number.isInteger(r.maxReplicas) && r.maxReplicas >= Math.max(1, r.minReplicas)))
    throw new RangeError(`tailguard: maxReplicas must be an integer ≥ minReplicas, got ${r.maxReplicas}`)
  return r
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {}
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v
  return out
}

/**
 * The options of the config file's `policy.tailguard` section (durations in seconds there, ms here); what it
 * leaves out stays out, so the policy's defaults (or the caller's) fill it. `tailguard sim` and the live
 * controller both read the section through this.
 *
 * @example tailguardOptionsFromConfig({ headroom: 0.3, coldStartS: 60 }) // { headroom: 0.3, coldStartMs: 60000 }
 */
export function tailguardOptionsFromConfig(t: TailguardConfig['policy']['tailguard']): TailguardOptions {
  const ms = (s: number | undefined) => (s !== undefined ? s * 1000 : undefined)
  return stripUndefined({
    headroom: t.headroom,
    coldStartMs: ms(t.coldStartS),
    nPlusOne: t.nPlusOne,
    scaleDownAfterMs: ms(t.scaleDownAfterS),
    scaleDownStepMs: ms(t.scaleDownStepS),
    queueShare: t.queueShare,
    outputTailFactor: t.outputTailFactor,
    minReplicas: t.minReplicas,
    maxReplicas: t.maxReplicas,
    features: t.features,
  })
}

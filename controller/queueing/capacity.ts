import { erlangC, mmcWaitPercentile } from './multi-server.js'

/**
 * Utilization knee of an M/M/1 queue: the ρ at which the mean time in system, as a multiple of the service
 * time, 1/(1−ρ), grows by `slope` per unit of ρ (d/dρ 1/(1−ρ) = 1/(1−ρ)² = slope, so ρ = 1 − 1/√slope).
 * Beyond the knee a little more load costs a lot of latency.
 *
 * @example utilizationKnee(10) // ≈ 0.68
 */
export function utilizationKnee(slope = 10): number {
  return slope <= 1 ? 0 : 1 - 1 / Math.sqrt(slope)
}

/**
 * Utilization knee of an M/M/c pool: the highest ρ at which the mean wait stays within `maxWaitFactor` times
 * the service time (Erlang C). Larger pools run hotter at the same relative wait. Bisection on ρ.
 *
 * @example mmcUtilizationKnee(8, 0.5) // ρ at which 8 servers wait half a service time on average
 */
export function mmcUtilizationKnee(servers: number, maxWaitFactor: number): number {
  let lo = 0
  let hi = 1
  for (let i = 0; i < 60; i++) {
    const rho = (lo + hi) / 2
    const a = rho * servers
    const wait = erlangC(servers, a) / (servers - a)
    if (wait <= maxWaitFactor) lo = rho
    else hi = rho
  }
  return lo
}

/**
 * Highest utilization at which an M/M/1 server still meets a latency percentile target, using the M/M/1
 * time-in-system percentile −ln(1−p)·S/(1−ρ) ≤ target (for p99: 4.6·S/(1−ρ)), solved for ρ. Returns 0
 * when the target cannot be met at any load.
 *
 * @example maxUtilizationForPercentile(5, 50, 0.99) // ≈ 0.54
 */
export function maxUtilizationForPercentile(serviceTimeMs: number, targetMs: number, p: number): number {
  return Math.max(0, 1 - (-Math.log(1 - p) * serviceTimeMs) / targetMs)
}

/** Input to {@link planCapacity}. */
export interface CapacityPlanInput {
  /** Peak arrival rate to serve, req/s. */
  readonly peakRps: number
  /** Service time of one request on a replica (at the batch size it will run), ms. */
  readonly serviceTimeMs: number
  /** Throughput one replica sustains when fully busy, req/s (measured, or B/S(B)). */
  readonly replicaThroughputRps: number
  /** Latency target at percentile `percentile`, ms. */
  readonly targetMs: number
  /** e.g. 0.99 */
  readonly percentile: number
  /** Extra capacity on top of the need, as a fraction (0.3 = 30%). Default 0. */
  readonly headroom?: number
  /**
   * N+1: make sure the fleet survives losing any one replica (the remaining ones stay at or below the highest
   * utilization that meets the target). A survival check, not always one more: a fleet whose headroom already
   * covers the loss gets nothing added. Default false.
   */
  readonly nPlusOne?: boolean
}

/** Output of {@link planCapacity}. */
export interface CapacityPlan {
  /** Highest utilization that meets the percentile target (M/M/1 percentile approximation). */
  readonly maxUtilization: number
  /** Replicas needed at that utilization: ceil(peak / (throughput · ρmax)). */
  readonly replicas: number
  /** After headroom: ceil(replicas · (1 + headroom)). */
  readonly withHeadroom: number
  /** Final count: withHeadroom, raised with N+1 until losing one replica still meets the need. */
  readonly total: number
  /** With N+1: utilization of each remaining replica at peak after losing one (of `total`). */
  readonly utilizationAfterLoss?: number
  /** Human-readable derivation. */
  readonly reason: string
}

/**
 * Replicas for a percentile target: the highest utilization that keeps the M/M/1 percentile of time in system
 * −ln(1−p)·S/(1−ρ) under the target, the replicas that keep each one at or below it at peak, then headroom
 * (applied to the replica count, rounded up) and optional N+1 as a survival check (12 replicas that need 9 already
 * survive losing one; 9 with no headroom become 10). Returns `total: Infinity` when unreachable.
 *
 * @example planCapacity({ peakRps: 5000, serviceTimeMs: 5, replicaThroughputRps: 1143, targetMs: 50, percentile: 0.99, headroom: 0.3 }) // 9 → 12
 */
export function planCapacity(input: CapacityPlanInput): CapacityPlan {
  const rhoMax = maxUtilizationForPercentile(input.serviceTimeMs, input.targetMs, input.percentile)
  const headroom = input.headroom ?? 0
  if (rhoMax <= 0 || input.replicaThroughputRps <= 0) {
    return {
      maxUtilization: rhoMax,
      replicas: Infinity,
      withHeadroom: Infinity,
      total: Infinity,
      reason: `p${input.percentile * 100} ≤ ${input.targetMs} ms is unreachable with S = ${input.serviceTimeMs} ms`,
    }
  }
  const replicas = Math.max(1, Math.ceil(input.peakRps / (input.replicaThroughputRps * rhoMax) - 1e-9))
  const withHeadroom = Math.ceil(replicas * (1 + headroom) - 1e-9)
  // Survival check: with one replica lost, the rest must still hold the peak at ρ ≤ ρmax, i.e. total − 1 ≥ replicas.
  const total = input.nPlusOne ? Math.max(withHeadroom, replicas + 1) : withHeadroom
  const afterLoss = total > 1 ? input.peakRps / ((total - 1) * input.replicaThroughputRps) : Infinity
  const nPlusOneWhy = !input.nPlusOne
    ? ''
    : total === withHeadroom
      ? `, N+1: ${total} survive losing one (${(afterLoss * 100).toFixed(1)}% utilization after the loss)`
      : `, N+1 → ${total} (${(afterLoss * 100).toFixed(1)}% utilization after losing one)`
  return {
    maxUtilization: rhoMax,
    replicas,
    withHeadroom,
    total,
    ...(input.nPlusOne ? { utilizationAfterLoss: afterLoss } : {}),
    reason:
      `ρ ≤ ${rhoMax.toFixed(3)} for p${input.percentile * 100} ≤ ${input.targetMs} ms at S = ${input.serviceTimeMs} ms; ` +
      `${input.peakRps} req/s / (${input.replicaThroughputRps} × ${rhoMax.toFixed(3)}) → ${replicas}` +
      (headroom > 0 ? `, +${Math.round(headroom * 100)}% → ${withHeadroom}` : '') +
      nPlusOneWhy,
  }
}

/**
 * Smallest M/M/c pool whose wait percentile plus service time meets `targetMs` at `arrivalRps` (exact Erlang C
 * rather than the per-replica M/M/1 approximation of {@link planCapacity}). Returns Infinity when even
 * `maxServers` is not enough.
 *
 * @example mmcServersForPercentile(1000, 5, 50, 0.99) // servers needed for p99 ≤ 50 ms at 1,000 req/s, S = 5 ms
 */
export function mmcServersForPercentile(
  arrivalRps: number,
  serviceTimeMs: number,
  targetMs: number,
  p: number,
  maxServers = 100_000,
): number {
  if (serviceTimeMs > targetMs) return Infinity
  const load = (arrivalRps * serviceTimeMs) / 1000
  for (let c = Math.max(1, Math.floor(load) + 1); c <= maxServers; c++) {
    if (mmcWaitPercentile(c, load, serviceTimeMs, p) + serviceTimeMs <= targetMs) return c
  }
  return Infinity
}

/**
 * Cost of serving one million units (requests or tokens) on GPUs at `dollarsPerGpuHour`, each sustaining
 * `unitsPerSecondPerGpu`.
 *
 * @example costPerMillion(2.5, 1000) // $0.69 per million requests at 1,000 req/s per $2.50/h GPU
 */
export function costPerMillion(dollarsPerGpuHour: number, unitsPerSecondPerGpu: number): number {
  if (unitsPerSecondPerGpu <= 0) return Infinity
  return (dollarsPerGpuHour / (unitsPerSecondPerGpu * 3600)) * 1e6
}

/**
 * Derived live figures: goodput, cost per million requests or output tokens, energy per output token. Pure
 * functions (no I/O), checked against hand-computed worked examples in test/collector/live/figures.test.ts.
 */

/** Seconds per hour. */
const HOUR_S = 3600

/**
 * Cost of one million events (requests or output tokens) at a steady rate, from a GPU-hour price: the price of the
 * GPUs for the time a million events take. `null` when nothing is served (the cost per event is unbounded).
 *
 * @example costPerMillion(4, 1, 200) // 5.555… ($4/h GPU at 200 req/s: $5.56 per million requests)
 */
export function costPerMillion(usdPerGpuHour: number, gpus: number, eventsPerSecond: number): number | null {
  if (!(eventsPerSecond > 0) || !(usdPerGpuHour >= 0) || !(gpus >= 0)) return null
  return ((usdPerGpuHour * gpus) / HOUR_S / eventsPerSecond) * 1e6
}

/**
 * Requests per second that met the service's SLO thresholds: the throughput times the fraction that met every
 * latency SLO. With several latency SLOs, the smallest good fraction is used (exact for one SLO; an upper bound
 * for several, since per-request joint outcomes are not kept).
 *
 * @example goodputPerSecond(10_000, [0.95]) // 9500
 */
export function goodputPerSecond(requestsPerSecond: number, goodFractions: readonly number[]): number {
  if (goodFractions.length === 0) return requestsPerSecond
  return requestsPerSecond * Math.max(0, Math.min(1, Math.min(...goodFractions)))
}

/**
 * Energy per output token in joules: power over token rate (W = J/s, so J/s ÷ tokens/s = J/token). `null` when no
 * token is produced.
 *
 * @example joulesPerToken(1000, 912) // 1.0964… (1,000 W at 912 output tokens/s ≈ 1.10 J per token)
 */
export function joulesPerToken(watts: number, tokensPerSecond: number): number | null {
  if (!(tokensPerSecond > 0) || !(watts >= 0)) return null
  return watts / tokensPerSecond
}

/**
 * The fraction of observations at or under `thresholdMs` in bucket counts (`+Inf` last), interpolating linearly
 * inside the bucket the threshold falls in (the first bucket starts at 0). `null` without observations.
 *
 * @example bucketFractionAtOrBelow([10, 20], [5, 5, 0], 15) // 0.75
 */
export function bucketFractionAtOrBelow(
  boundsMs: readonly number[],
  counts: readonly number[],
  thresholdMs: number,
): number | null {
  const total = counts.reduce((a, b) => a + b, 0)
  if (total === 0) return null
  let good = 0
  for (let i = 0; i < boundsMs.length; i++) {
    const lo = i === 0 ? 0 : boundsMs[i - 1]!
    const hi = boundsMs[i]!
    if (thresholdMs >= hi) good += counts[i]!
    else {
      if (thresholdMs > lo) good += (counts[i]! * (thresholdMs - lo)) / (hi - lo)
      break
    }
  }
  return good / total
}

/** Where a GPU's price came from: its node's price, its model's, or the default. */
export type PriceSource = 'node' | 'gpuModel' | 'default'

/** Price lists, in USD per GPU-hour. */
export interface GpuPricing {
  readonly gpuHourUsd: number | null
  readonly byGpuModel: Readonly<Record<string, number>>
  readonly byNode: Readonly<Record<string, number>>
}

/**
 * A partial price list (as the config gives it) with the missing parts empty.
 *
 * @example resolvePricing({ gpuHourUsd: 4 }) // { gpuHourUsd: 4, byGpuModel: {}, byNode: {} }
 */
export function resolvePricing(p: Partial<GpuPricing> = {}): GpuPricing {
  return { gpuHourUsd: p.gpuHourUsd ?? null, byGpuModel: p.byGpuModel ?? {}, byNode: p.byNode ?? {} }
}

/**
 * The hourly price of one GPU: the node's price, else the GPU model's (matched on the exact NVML/DCGM name), else
 * the default; `null` when none applies.
 *
 * @example gpuHourPrice({ gpuHourUsd: 2, byGpuModel: { 'NVIDIA H100 80GB HBM3': 4 }, byNode: {} }, 'n1', 'NVIDIA H100 80GB HBM3') // { usd: 4, from: 'gpuModel' }
 */
export function gpuHourPrice(
  pricing: GpuPricing,
  node: string,
  gpuName: string | null,
): { readonly usd: number; readonly from: PriceSource } | null {
  const byNode = pricing.byNode[node]
  if (byNode !== undefined) return { usd: byNode, from: 'node' }
  const byModel = gpuName === null ? undefined : pricing.byGpuModel[gpuName]
  if (byModel !== undefined) return { usd: byModel, from: 'gpuModel' }
  if (pricing.gpuHourUsd !== null) return { usd: pricing.gpuHourUsd, from: 'default' }
  return null
}

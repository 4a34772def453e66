import type { SeriesLabels } from '../../../../collector/index.js'
import type { Metric } from '../../../../collector/index.js'
import type { RequestSample, SampleSink } from '../../../../agent/index.js'

/** A seeded PRNG (mulberry32), so failures reproduce. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Standard normal by Box–Muller. */
export function normal(rand: () => number): number {
  const u = 1 - rand()
  const v = rand()
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
}

/**
 * Latencies in µs (integers ≥ 1): a lognormal body (median `medianUs`, sigma 0.5) with a 1% heavy tail
 * (Pareto, alpha 1.5, starting at 10× the median).
 */
export function latencySampleUs(rand: () => number, medianUs: number): number {
  if (rand() < 0.01) return Math.max(1, Math.round(medianUs * 10 * Math.pow(1 - rand(), -1 / 1.5)))
  return Math.max(1, Math.round(medianUs * Math.exp(0.5 * normal(rand))))
}

/** Exact nearest-rank percentile (HdrHistogram's definition): the smallest value with ≥ q of values at or below it. */
export function nearestRank(sorted: readonly number[], q: number): number {
  const rank = Math.max(1, Math.ceil(q * sorted.length))
  return sorted[rank - 1]!
}

export interface Captured {
  readonly requests: RequestSample[]
  readonly latencies: { labels: SeriesLabels; metric: Metric; durationUs: number }[]
  readonly dropped: Record<string, number>
}

/** A SampleSink that keeps everything it is given, for asserting on mapping results. */
export function capturingSink(): SampleSink & Captured {
  const requests: RequestSample[] = []
  const latencies: Captured['latencies'] = []
  const dropped: Record<string, number> = {}
  return {
    requests,
    latencies,
    dropped,
    recordRequest: (s) => void requests.push(s),
    recordLatency: (labels, metric, durationUs) => void latencies.push({ labels, metric, durationUs }),
    drop: (reason, n = 1) => void (dropped[reason] = (dropped[reason] ?? 0) + n),
  }
}

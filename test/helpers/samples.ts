import { seededRandom } from '../../agent/index.js'

/** A seeded PRNG (mulberry32, the demo fleet's), so failures reproduce. */
export const prng = seededRandom

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
export function nearestRank(sorted: ArrayLike<number>, q: number): number {
  const rank = Math.max(1, Math.ceil(q * sorted.length))
  return sorted[rank - 1]!
}

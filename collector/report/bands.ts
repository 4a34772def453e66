import { TICKS_PER_US, indexTicks } from './histogram.js'
import type { Histogram } from './histogram.js'

/** The most bands per decade a heatmap may ask for. */
export const MAX_BANDS_PER_DECADE = 20

/** Rounds to 3 significant digits, so that band edges read as people write them (1.78, not 1.7782794…). */
function round3(x: number): number {
  return Number(x.toPrecision(3))
}

/**
 * Log-spaced latency band edges in ms, `perDecade` bands per decade on the grid 10^(k/perDecade) (rounded
 * to 3 significant digits), from the grid line at or below `minMs` to the one above `maxMs`: n + 1 edges
 * for n bands. Empty when there is no data (`maxMs` < `minMs` or not positive).
 *
 * @example logBandEdgesMs(1.2, 9, 2) // [1, 3.16, 10]
 */
export function logBandEdgesMs(minMs: number, maxMs: number, perDecade: number): number[] {
  if (!(maxMs > 0) || !(maxMs >= minMs)) return []
  const lo = Math.floor(Math.log10(Math.max(minMs, 1e-6)) * perDecade + 1e-9)
  let hi = Math.floor(Math.log10(maxMs) * perDecade + 1e-9) + 1
  if (hi <= lo) hi = lo + 1
  const edges: number[] = []
  for (let k = lo; k <= hi; k++) edges.push(round3(10 ** (k / perDecade)))
  return edges
}

/**
 * The counts of `h` in each band [edges[k], edges[k + 1]) (ms). Each HDR bucket counts whole in the band
 * that holds its lowest value, so every count is an integer and the counts sum to `h.totalCount`; a sample
 * within one bucket width (≤ 0.1%) above an edge may count in the band below. Samples below the first edge
 * count in the first band, samples above the last edge in the last band.
 *
 * @example bandCounts(histogramOf([1500, 2500, 7000]), [1, 3.16, 10]) // [2, 1]
 */
export function bandCounts(h: Histogram, edgesMs: readonly number[]): number[] {
  const n = edgesMs.length - 1
  const out = new Array<number>(Math.max(0, n)).fill(0)
  if (n <= 0) return out
  h.forEachBucket((i, count) => {
    const ms = indexTicks(i) / TICKS_PER_US / 1000
    // The last edge at or below ms (binary search); below the first edge: band 0.
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (edgesMs[mid]! <= ms) lo = mid
      else hi = mid - 1
    }
    out[lo]! += count
  })
  return out
}

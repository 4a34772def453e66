/**
 * Arithmetic on latency histograms imported in Prometheus bucket form (see `BucketHistogramSchema`): merging
 * intervals of one layout, and quantile estimates by linear interpolation inside a bucket, as PromQL's
 * `histogram_quantile` does. These are estimates whose error is the bucket width, never HDR-exact values.
 */

/** One imported histogram's buckets: finite upper bounds (ms, ascending) and per-bucket counts, `+Inf` last. */
export interface BucketCounts {
  readonly boundsMs: readonly number[]
  readonly counts: readonly number[]
  readonly sumMs: number
}

/** A merge of bucket histograms: the dominant layout's buckets, and what other layouts held. */
export interface MergedBuckets {
  readonly boundsMs: readonly number[]
  readonly counts: readonly number[]
  readonly sumMs: number
  readonly count: number
  /** Distinct bucket layouts seen among the inputs (more than 1: the server changed its buckets). */
  readonly layouts: number
  /** Observations in layouts other than the one returned (left out of `counts`, never re-binned). */
  readonly otherLayoutsCount: number
}

/**
 * A stable key for a bucket layout (its bounds).
 *
 * @example layoutKey([10, 25]) // '[10,25]'
 */
export const layoutKey = (boundsMs: readonly number[]): string => JSON.stringify(boundsMs)

/**
 * Merges histograms: those sharing a layout add up bucket by bucket; when layouts differ (a server restarted
 * with other buckets), the layout holding the most observations is returned and the others are counted in
 * `otherLayoutsCount`, never re-binned (that would invent values inside buckets). Returns `null` for no input.
 *
 * @example
 * ```ts
 * mergeBuckets([{ boundsMs: [10], counts: [1, 0], sumMs: 4 }, { boundsMs: [10], counts: [2, 1], sumMs: 40 }])
 * // { boundsMs: [10], counts: [3, 1], sumMs: 44, count: 4, layouts: 1, otherLayoutsCount: 0 }
 * ```
 */
export function mergeBuckets(list: readonly BucketCounts[]): MergedBuckets | null {
  const byLayout = new Map<
    string,
    { boundsMs: readonly number[]; counts: number[]; sumMs: number; count: number }
  >()
  for (const h of list) {
    const key = layoutKey(h.boundsMs)
    let m = byLayout.get(key)
    if (!m)
      byLayout.set(key, (m = { boundsMs: h.boundsMs, counts: h.counts.map(() => 0), sumMs: 0, count: 0 }))
    for (let i = 0; i < m.counts.length; i++) m.counts[i]! += h.counts[i] ?? 0
    m.sumMs += h.sumMs
    m.count += h.counts.reduce((a, b) => a + b, 0)
  }
  let best: { boundsMs: readonly number[]; counts: number[]; sumMs: number; count: number } | undefined
  let total = 0
  for (const m of byLayout.values()) {
    total += m.count
    if (best === undefined || m.count > best.count) best = m
  }
  if (best === undefined) return null
  return {
    boundsMs: best.boundsMs,
    counts: best.counts,
    sumMs: best.sumMs,
    count: best.count,
    layouts: byLayout.size,
    otherLayoutsCount: total - best.count,
  }
}

/**
 * The `q` quantile (0..1) of bucket counts, interpolated linearly inside the bucket it falls in (the first
 * bucket's lower bound is 0). When it falls in the `+Inf` bucket the highest finite bound is returned, as PromQL
 * does. `null` when there are no observations or no finite bound.
 *
 * @example bucketQuantileMs([10, 20], [5, 5, 0], 0.75) // 15
 */
export function bucketQuantileMs(
  boundsMs: readonly number[],
  counts: readonly number[],
  q: number,
): number | null {
  const total = counts.reduce((a, b) => a + b, 0)
  if (total === 0 || boundsMs.length === 0 || !(q >= 0 && q <= 1)) return null
  const rank = q * total
  let below = 0
  for (let i = 0; i < counts.length; i++) {
    const n = counts[i]!
    if (below + n >= rank && n > 0) {
      if (i >= boundsMs.length) return boundsMs[boundsMs.length - 1]!
      const lo = i === 0 ? 0 : boundsMs[i - 1]!
      const hi = boundsMs[i]!
      return lo + (hi - lo) * ((rank - below) / n)
    }
    below += n
  }
  return boundsMs[boundsMs.length - 1]!
}

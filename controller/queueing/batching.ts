/**
 * Batching math: the linear batch service-time model S(B) = a + b·B, its least-squares fit, the throughput of
 * a windowed batcher, the Poisson distribution of batch sizes, and the largest batch a latency target allows.
 */

/** Batch service time S(B) = fixedMs + perItemMs · B. */
export interface BatchServiceModel {
  /** a: the cost of running a batch at all (kernel launch, weights read), in ms. */
  readonly fixedMs: number
  /** b: the marginal cost of one more request in the batch, in ms. */
  readonly perItemMs: number
}

/**
 * S(B) in ms.
 *
 * @example batchServiceTimeMs({ fixedMs: 5, perItemMs: 0.6 }, 8) // 9.8
 */
export function batchServiceTimeMs(model: BatchServiceModel, batchSize: number): number {
  return model.fixedMs + model.perItemMs * batchSize
}

/** A fitted model with its goodness of fit. */
export interface BatchServiceFit extends BatchServiceModel {
  /** Coefficient of determination (1 = perfect line); NaN when every observation has the same time. */
  readonly r2: number
  readonly observations: number
}

/**
 * Least-squares fit of S(B) = a + b·B from observed (batch size, service time) pairs. Returns `undefined`
 * when fewer than two distinct batch sizes were observed (the slope is then unknown).
 *
 * @example fitBatchServiceTime([{ batchSize: 1, serviceMs: 5.6 }, { batchSize: 8, serviceMs: 9.8 }]) // { fixedMs: 5, perItemMs: 0.6, … }
 */
export function fitBatchServiceTime(
  observations: ReadonlyArray<{ readonly batchSize: number; readonly serviceMs: number }>,
): BatchServiceFit | undefined {
  const n = observations.length
  if (n < 2) return undefined
  let sx = 0
  let sy = 0
  for (const o of observations) {
    sx += o.batchSize
    sy += o.serviceMs
  }
  const mx = sx / n
  const my = sy / n
  let sxx = 0
  let sxy = 0
  let syy = 0
  for (const o of observations) {
    const dx = o.batchSize - mx
    const dy = o.serviceMs - my
    sxx += dx * dx
    sxy += dx * dy
    syy += dy * dy
  }
  if (sxx === 0) return undefined
  const perItemMs = sxy / sxx
  const fixedMs = my - perItemMs * mx
  let sse = 0
  for (const o of observations) sse += (o.serviceMs - fixedMs - perItemMs * o.batchSize) ** 2
  return { fixedMs, perItemMs, r2: syy === 0 ? NaN : 1 - sse / syy, observations: n }
}

/**
 * Throughput of one replica that collects a batch for the whole window T and then serves it, one cycle at a
 * time: B / (T + S(B)) requests per second. This is the definition that reproduces the familiar table for
 * S(B) = 5 + 0.6·B ms and T = 10 ms: 64, 230, 404, 650 and 936 req/s at B = 1, 4, 8, 16 and 32.
 *
 * @example windowedBatchThroughput({ fixedMs: 5, perItemMs: 0.6 }, 10, 8) // ≈ 404 req/s
 */
export function windowedBatchThroughput(
  model: BatchServiceModel,
  windowMs: number,
  batchSize: number,
): number {
  return (batchSize / (windowMs + batchServiceTimeMs(model, batchSize))) * 1000
}

/**
 * Peak throughput when batches are served back to back with no window (the replica is never idle):
 * B / S(B) requests per second.
 *
 * @example saturatedBatchThroughput({ fixedMs: 5, perItemMs: 0.6 }, 8) // ≈ 816 req/s
 */
export function saturatedBatchThroughput(model: BatchServiceModel, batchSize: number): number {
  return (batchSize / batchServiceTimeMs(model, batchSize)) * 1000
}

/**
 * Distribution of the number of arrivals in a batching window of `windowMs` at `ratePerSecond` (Poisson
 * with mean λT), truncated at `maxBatch`: entry k is P(batch = k), and the last entry holds P(N ≥ maxBatch)
 * (a full batch dispatches early). Entry 0 is the chance the window is empty.
 *
 * @example poissonBatchSizes(200, 10, 4)[0] // e^−2 ≈ 0.135: a 10 ms window at 200 QPS is empty 13.5% of the time
 */
export function poissonBatchSizes(ratePerSecond: number, windowMs: number, maxBatch: number): number[] {
  const mean = (ratePerSecond * windowMs) / 1000
  const out: number[] = []
  let pk = Math.exp(-mean)
  let cumulative = 0
  for (let k = 0; k < maxBatch; k++) {
    out.push(pk)
    cumulative += pk
    pk = (pk * mean) / (k + 1)
  }
  out.push(Math.max(0, 1 - cumulative))
  return out
}

/**
 * The largest batch size B ≤ `maxBatch` such that a request that waits the full window and is then served in
 * a batch of B still finishes within `latencyBudgetMs`: T + S(B) ≤ budget. Returns 0 when even B = 1 misses.
 *
 * @example largestBatchWithinLatency({ fixedMs: 5, perItemMs: 0.6 }, 10, 30, 128) // 25: 10 + 5 + 0.6·25 = 30
 */
export function largestBatchWithinLatency(
  model: BatchServiceModel,
  windowMs: number,
  latencyBudgetMs: number,
  maxBatch = Number.MAX_SAFE_INTEGER,
): number {
  if (model.perItemMs <= 0) return windowMs + model.fixedMs <= latencyBudgetMs ? maxBatch : 0
  // Small epsilon so that budgets that land exactly on a batch size (up to rounding) include it.
  const b = Math.floor((latencyBudgetMs - windowMs - model.fixedMs) / model.perItemMs + 1e-9)
  return Math.max(0, Math.min(maxBatch, b))
}

/**
 * The p-quantile of a Poisson distribution with mean `mean`: the smallest k with P(N ≤ k) ≥ p.
 *
 * @example poissonQuantile(5, 0.99) // 11
 */
export function poissonQuantile(mean: number, p: number): number {
  if (!(mean > 0)) return 0
  let pk = Math.exp(-mean)
  let cumulative = pk
  let k = 0
  // Guard against underflow at very large means: fall back to the normal approximation.
  if (pk === 0) return Math.ceil(mean + normalQuantile(p) * Math.sqrt(mean))
  while (cumulative < p && k < 1e7) {
    k++
    pk = (pk * mean) / k
    cumulative += pk
  }
  return k
}

function normalQuantile(p: number): number {
  // Acklam's rational approximation is overkill here; Abramowitz–Stegun 26.2.23 is within 4.5e-4.
  const q = p < 0.5 ? p : 1 - p
  const t = Math.sqrt(-2 * Math.log(q))
  const z =
    t -
    (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t ** 3)
  return p < 0.5 ? -z : z
}

/**
 * Traffic-adaptive batching window: T = min(SLO − S, √(S/λ)). √(S/λ) balances the wait for a batch to fill
 * against the service time it amortizes; SLO − S caps it so that a request that waits the whole window still
 * finishes in time. With SLO 50 ms and S 25 ms: 15.8, 7.1, 5.0 and 2.24 ms at 100, 500, 1,000 and 5,000 req/s
 * (mean batch λT = 1.6, 3.5, 5 and 11.2). Returns 0 when the SLO leaves no room or there is no traffic.
 *
 * @example adaptiveWindowMs(50, 25, 1000) // 5.0 ms
 */
export function adaptiveWindowMs(sloMs: number, serviceMs: number, ratePerSecond: number): number {
  const room = sloMs - serviceMs
  if (!(room > 0) || !(ratePerSecond > 0) || !(serviceMs > 0)) return 0
  const balanced = Math.sqrt(serviceMs / 1000 / ratePerSecond) * 1000
  return Math.min(room, balanced)
}

/**
 * Latency of a request in a windowed batcher at `ratePerSecond`: batches are Poisson(λT) (at least one, at most
 * `maxBatch`); the percentile is T + S(B at that percentile) and the mean T/2 + S(mean batch). At 500 req/s, a
 * 10 ms window and S(B) = 5 + 0.6·B: mean batch 5, p99 batch 11, p99 = 10 + S(11) = 21.6 ms, mean 13 ms.
 * Queueing behind earlier batches is not included (add an Erlang C wait for that).
 *
 * @example batchLatencyMs({ fixedMs: 5, perItemMs: 0.6 }, 500, 10, 0.99).percentileMs // 21.6
 */
export function batchLatencyMs(
  model: BatchServiceModel,
  ratePerSecond: number,
  windowMs: number,
  p: number,
  maxBatch = Number.MAX_SAFE_INTEGER,
): { meanBatch: number; percentileBatch: number; meanMs: number; percentileMs: number } {
  const mean = Math.max(1, Math.min(maxBatch, (ratePerSecond * windowMs) / 1000))
  const q = Math.max(1, Math.min(maxBatch, poissonQuantile((ratePerSecond * windowMs) / 1000, p)))
  return {
    meanBatch: mean,
    percentileBatch: q,
    meanMs: windowMs / 2 + batchServiceTimeMs(model, mean),
    percentileMs: windowMs + batchServiceTimeMs(model, q),
  }
}

/**
 * Mean wait for a batch of B to form at `ratePerSecond` with no window: (B − 1)/(2λ). At 500 req/s a batch of
 * 32 makes its requests wait 31 ms on average, which is why large batches need high traffic.
 *
 * @example batchFormationDelayMs(32, 500) // 31
 */
export function batchFormationDelayMs(batchSize: number, ratePerSecond: number): number {
  if (!(ratePerSecond > 0)) return batchSize > 1 ? Infinity : 0
  return ((Math.max(1, batchSize) - 1) / (2 * ratePerSecond)) * 1000
}

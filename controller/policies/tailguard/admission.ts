/**
 * Admission control: per priority class in-system caps from Little's law (what the ready replicas carry in
 * service plus what drains within the queue's share of the latency budget), tightened on the lower classes
 * while the predicted queue wait exceeds that share, relaxed again once it fits; and a queue timeout per class
 * (deadline-aware dropping of requests that can no longer meet the objective).
 */

/** Per-class admission setpoints. */
export interface ClassCaps {
  readonly maxQueue: number
  readonly maxConcurrency: number
  readonly queueTimeoutMs: number
}

/** Inputs of {@link chooseAdmission}. */
export interface AdmissionInput {
  readonly classes: number
  /** Throughput the ready replicas carry within the objective, req/s. */
  readonly capacityRps: number
  /** Requests the ready replicas hold in service at once (replicas × max batch or running slots). */
  readonly inServiceSlots: number
  /** Share of the latency budget the queue may use, ms. */
  readonly queueBudgetMs: number
  /** Longest a request may wait and still meet the objective, ms. */
  readonly deadlineMs: number
  readonly queueDepth: number
  readonly queueDepthByClass: readonly number[]
  /** Share of the Little's-law cap lower classes get now (1 = relaxed), from the previous step. */
  readonly lowerShare: number
}

/** The caps, the new lower-class share and the reason. */
export interface AdmissionChoice {
  readonly caps: readonly ClassCaps[]
  readonly lowerShare: number
  readonly predictedWaitMs: number
  readonly reason: string
}

/** Lower classes keep at least this share of the cap: shedding is a valve, never a wall. */
export const MIN_LOWER_SHARE = 0.05

/**
 * Chooses caps. Class 0 always gets the full Little's-law cap N = slots + capacity × queue budget; while the
 * predicted wait (queue depth / capacity) exceeds the queue budget, the lower classes' share of N halves each
 * step (down to 5%), lowest class first (class k gets share^k); once the wait fits, the share doubles back to 1.
 * Relaxed caps are 3N, so that they never bind in normal operation.
 *
 * @example chooseAdmission({ classes: 2, capacityRps: 1000, inServiceSlots: 32, queueBudgetMs: 50, deadlineMs: 90, queueDepth: 0, queueDepthByClass: [0, 0], lowerShare: 1 }).caps[1].maxConcurrency // 246
 */
export function chooseAdmission(i: AdmissionInput): AdmissionChoice {
  const n = Math.max(1, Math.floor(i.inServiceSlots + (i.capacityRps * i.queueBudgetMs) / 1000))
  const predictedWaitMs = i.capacityRps > 0 ? (i.queueDepth / i.capacityRps) * 1000 : Infinity
  const over = predictedWaitMs > i.queueBudgetMs
  let lowerShare = i.lowerShare
  if (over) lowerShare = Math.max(MIN_LOWER_SHARE, lowerShare / 2)
  else lowerShare = Math.min(1, lowerShare * 2)
  const relaxed = lowerShare >= 1
  const caps: ClassCaps[] = []
  for (let c = 0; c < i.classes; c++) {
    const share = c === 0 ? 1 : lowerShare ** c
    const maxConcurrency = relaxed ? 3 * n : Math.max(1, Math.floor(n * share))
    caps.push({
      maxQueue: Number.MAX_SAFE_INTEGER,
      maxConcurrency,
      queueTimeoutMs: Math.max(1, i.deadlineMs),
    })
  }
  const reason =
    `admission: Little's law N = ${i.inServiceSlots.toFixed(0)} in service + ${i.capacityRps.toFixed(1)} req/s × ${i.queueBudgetMs.toFixed(0)} ms = ${n}; ` +
    `predicted wait ${Number.isFinite(predictedWaitMs) ? predictedWaitMs.toFixed(0) : '∞'} ms (queue ${i.queueDepth}) ${over ? '>' : '≤'} budget ${i.queueBudgetMs.toFixed(0)} ms → ` +
    (relaxed
      ? `relaxed (caps ${3 * n})`
      : `class 0 cap ${n}, lower classes ${caps
          .slice(1)
          .map((c) => c.maxConcurrency)
          .join('/')} (share ${(lowerShare * 100).toFixed(0)}%)`) +
    `; drop after ${i.deadlineMs.toFixed(0)} ms in queue`
  return { caps, lowerShare, predictedWaitMs, reason }
}

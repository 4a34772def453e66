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
  /**
   * Requests per second offered (admitted and shed) and shed over the last interval. Optional (absent: the
   * queue alone decides, as if arrivals matched capacity).
   */
  readonly offeredRps?: number
  readonly shedRps?: number
  /** How fast the queue grew over the last seconds, req/s. Optional (default 0). */
  readonly queueGrowthRps?: number
  /** How far ahead the wait is predicted: the control interval, ms. Optional (default 0: the queue now). */
  readonly horizonMs?: number
  /**
   * What the ready replicas serve at all, req/s (above it a queue grows without bound). Optional (default:
   * `capacityRps`, the throughput within the objective, which is lower).
   */
  readonly throughputRps?: number
  /**
   * Whether the share may double back now. Optional (default true). The policy allows it once per observation
   * window: a window that still holds the shedding step shows a low admitted rate, and relaxing on it again and
   * again opens the gates before the effect of the first relax can show (seen live: 5% to relaxed in 5 s).
   */
  readonly mayRelax?: boolean
  /** Appended to the capacity part of the reason (e.g. where the capacity came from). */
  readonly note?: string
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
 * Chooses caps. Class 0 always gets the full Little's-law cap N = slots + capacity × queue budget. The
 * predicted wait is what the queue needs to drain one interval from now: (queue + growth × interval) /
 * capacity, with growth the larger of admitted − throughput and the queue's own measured growth, so arrivals
 * beyond capacity count before they have built a queue. While it exceeds the queue budget the lower classes'
 * share of N halves each step (down to 5%), lowest class first (class k gets share^k); once it fits, the
 * share doubles back, at most once per observation window (`mayRelax`).
 * Relaxed caps are 3N, so that they never bind in normal operation. While shedding, a lower class's queue
 * timeout shrinks by its share too.
 *
 * @example chooseAdmission({ classes: 2, capacityRps: 1000, inServiceSlots: 32, queueBudgetMs: 50, deadlineMs: 90, queueDepth: 0, queueDepthByClass: [0, 0], lowerShare: 1 }).caps[1].maxConcurrency // 246
 */
export function chooseAdmission(i: AdmissionInput): AdmissionChoice {
  const n = Math.max(1, Math.floor(i.inServiceSlots + (i.capacityRps * i.queueBudgetMs) / 1000))
  const offered = i.offeredRps ?? 0
  const shed = Math.min(offered, i.shedRps ?? 0)
  const admitted = offered - shed
  const throughput = i.throughputRps ?? i.capacityRps
  const growth = Math.max(i.offeredRps !== undefined ? admitted - throughput : 0, i.queueGrowthRps ?? 0, 0)
  const horizonS = (i.horizonMs ?? 0) / 1000
  const predictedWaitMs =
    i.capacityRps > 0 ? ((i.queueDepth + growth * horizonS) / i.capacityRps) * 1000 : Infinity
  const utilization = throughput > 0 ? admitted / throughput : admitted > 0 ? Infinity : 0
  const over = predictedWaitMs > i.queueBudgetMs
  // Relaxing lets what is shed back in: while the offered load (shed included) would still build a queue past the
  // budget within the horizon, doubling back only refills the queue, and the next step halves again. Then the
  // share holds, where there are lower classes to hold back. (It flipped between 50% and relaxed every second on
  // a 3× step while replicas started, and a class 0 request that arrived in a relaxed second waited past its
  // deadline behind class 1.) With one class there is no one to protect: its cap relaxes, and the replicas run
  // flat out.
  const offeredWaitMs =
    i.offeredRps !== undefined && i.capacityRps > 0
      ? ((i.queueDepth + Math.max(0, offered - throughput) * horizonS) / i.capacityRps) * 1000
      : 0
  const holds = !over && i.classes > 1 && i.lowerShare < 1 && offeredWaitMs > i.queueBudgetMs
  let lowerShare = i.lowerShare
  if (over) lowerShare = Math.max(MIN_LOWER_SHARE, lowerShare / 2)
  else if (holds && i.mayRelax !== false && admitted > 0)
    // Held, the share follows what the replicas serve: up while they serve more than is admitted, short of relaxed.
    lowerShare = Math.min(
      0.99,
      Math.max(MIN_LOWER_SHARE, lowerShare * Math.min(2, Math.max(0.5, throughput / admitted))),
    )
  else if (i.mayRelax !== false && !holds) lowerShare = Math.min(1, lowerShare * 2)
  const relaxed = lowerShare >= 1
  const caps: ClassCaps[] = []
  for (let c = 0; c < i.classes; c++) {
    const share = c === 0 ? 1 : lowerShare ** c
    const maxConcurrency = relaxed ? 3 * n : Math.max(1, Math.floor(n * share))
    // A shed class waits less, by its share: a request that waits to the deadline and is then served misses the
    // objective anyway, and one that is refused at once can go elsewhere (shed early, not late).
    caps.push({
      maxQueue: Number.MAX_SAFE_INTEGER,
      maxConcurrency,
      queueTimeoutMs: Math.max(1, Math.floor(i.deadlineMs * (relaxed ? 1 : share))),
    })
  }
  const load =
    i.offeredRps !== undefined
      ? `, admitted ${admitted.toFixed(1)} of ${offered.toFixed(1)} req/s offered (utilization ${Number.isFinite(utilization) ? utilization.toFixed(2) : '∞'})`
      : ''
  const reason =
    `admission: Little's law N = ${i.inServiceSlots.toFixed(0)} in service + ${i.capacityRps.toFixed(1)} req/s × ${i.queueBudgetMs.toFixed(0)} ms = ${n}${i.note ?? ''}; ` +
    `predicted wait ${Number.isFinite(predictedWaitMs) ? predictedWaitMs.toFixed(0) : '∞'} ms (queue ${i.queueDepth}${load}) ${over ? '>' : '≤'} budget ${i.queueBudgetMs.toFixed(0)} ms → ` +
    (relaxed
      ? `relaxed (caps ${3 * n})`
      : caps.length > 1
        ? `class 0 cap ${n}, lower classes ${caps
            .slice(1)
            .map((c) => c.maxConcurrency)
            .join('/')} (share ${(lowerShare * 100).toFixed(0)}%)`
        : `class 0 cap ${n}`) +
    (holds
      ? `, held: ${offered.toFixed(1)} req/s offered would queue ${offeredWaitMs.toFixed(0)} ms within ${horizonS.toFixed(0)} s`
      : '') +
    `; drop after ${caps.map((c) => c.queueTimeoutMs.toFixed(0)).join('/')} ms in queue`
  return { caps, lowerShare, predictedWaitMs, reason }
}

import type { Action, Policy } from '../policy.js'

/** Clipper AIMD batch sizing plus a Netflix Gradient2 concurrency limiter. */
export interface AimdOptions {
  /** Latency objective the batch service time must stay under, ms. */
  readonly sloMs: number
  /** Additive increase of the max batch per interval while under the objective. Default 1. */
  readonly additiveStep?: number
  /** Multiplicative backoff when over the objective. Default 0.1 (Clipper's 10%). */
  readonly backoff?: number
  readonly maxBatchCap?: number
  /** Gradient2 defaults (concurrency-limits Gradient2Limit): 20, 20, 200, 0.2, 1.5, 600, 4. */
  readonly initialLimit?: number
  readonly minLimit?: number
  readonly maxLimit?: number
  readonly smoothing?: number
  readonly rttTolerance?: number
  readonly longWindow?: number
  readonly queueSize?: number
}

/** AIMD + Gradient2 state. */
export interface AimdState {
  readonly maxBatch: number
  readonly windowMs: number
  /** Gradient2 estimated limit (per replica). */
  readonly limit: number
  /** Long-term RTT exponential average (ms) and how many samples it has seen. */
  readonly longRttMs: number
  readonly samples: number
  readonly appliedLimit: number
}

/**
 * Clipper's adaptive batching: grow the max batch by a fixed step while the time to process a batch (p99 of
 * service time) stays under the objective, cut it by 10% when it goes over. Admission uses Netflix's Gradient2
 * limiter per replica: gradient = clamp(tolerance · longRtt / shortRtt, 0.5, 1), newLimit = limit · gradient +
 * queueSize, smoothed by 0.2; the limit does not grow while in-flight is under half of it (app-limited), and the
 * long RTT decays when it is more than twice the short one. Replica count is left as it is.
 *
 * @example aimdPolicy({ sloMs: 200 })
 */
export function aimdPolicy(options: AimdOptions): Policy<AimdState> {
  const o = {
    additiveStep: 1,
    backoff: 0.1,
    maxBatchCap: 1024,
    initialLimit: 20,
    minLimit: 20,
    maxLimit: 200,
    smoothing: 0.2,
    rttTolerance: 1.5,
    longWindow: 600,
    queueSize: 4,
    ...options,
  }
  return {
    name: 'aimd',
    init: (initial) => ({
      maxBatch: initial.maxBatch,
      windowMs: initial.batchWindowMs,
      limit: o.initialLimit,
      longRttMs: 0,
      samples: 0,
      appliedLimit: -1,
    }),
    step(state, obs) {
      const actions: Action[] = []
      let { maxBatch, limit, longRttMs, samples } = state
      const service = obs.latencyMs.service
      if (service.count > 0 && service.p99 !== null) {
        let next = maxBatch
        if (service.p99 < o.sloMs) {
          // Only grow when batches actually fill; otherwise the cap is not what limits throughput.
          if (obs.batchSize.max >= maxBatch) next = Math.min(o.maxBatchCap, maxBatch + o.additiveStep)
        } else next = Math.max(1, Math.floor(maxBatch * (1 - o.backoff)))
        if (next !== maxBatch) {
          actions.push({
            kind: 'batching',
            windowMs: state.windowMs,
            maxBatch: next,
            reason: `aimd: batch p99 ${service.p99.toFixed(1)} ms ${service.p99 < o.sloMs ? '<' : '≥'} ${o.sloMs} ms → max batch ${next}`,
          })
          maxBatch = next
        }
      }
      const rtt = obs.latencyMs.e2e.p50
      if (rtt !== null && rtt > 0 && obs.latencyMs.e2e.count > 0) {
        samples += 1
        // Exponential average with warm-up, as Gradient2's long RTT measurement.
        const factor = samples <= 10 ? 1 / samples : 2 / (o.longWindow + 1)
        longRttMs = longRttMs + (rtt - longRttMs) * factor
        if (longRttMs / rtt > 2) longRttMs *= 0.95
        const ready = Math.max(1, obs.replicas.ready)
        const perReplicaInFlight = (obs.inFlight + obs.queueDepth) / ready
        if (!(perReplicaInFlight < limit / 2)) {
          const gradient = Math.max(0.5, Math.min(1, (o.rttTolerance * longRttMs) / rtt))
          let next = limit * gradient + o.queueSize
          next = limit * (1 - o.smoothing) + next * o.smoothing
          limit = Math.max(o.minLimit, Math.min(o.maxLimit, next))
        }
      }
      const fleetLimit = Math.max(1, Math.floor(limit * Math.max(1, obs.replicas.ready)))
      let appliedLimit = state.appliedLimit
      if (fleetLimit !== appliedLimit) {
        for (let c = 0; c < obs.queueDepthByClass.length; c++)
          actions.push({
            kind: 'admission',
            priorityClass: c,
            maxQueue: Number.MAX_SAFE_INTEGER,
            maxConcurrency: fleetLimit,
            reason: `gradient2: limit ${limit.toFixed(1)}/replica × ${Math.max(1, obs.replicas.ready)} ready`,
          })
        appliedLimit = fleetLimit
      }
      return {
        state: { maxBatch, windowMs: state.windowMs, limit, longRttMs, samples, appliedLimit },
        actions,
      }
    },
  }
}

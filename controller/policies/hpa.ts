import type { Action, FleetObservation, Policy } from '../policy.js'

/** Kubernetes HorizontalPodAutoscaler behaviour (autoscaling/v2 defaults). */
export interface HpaOptions {
  /** Target average utilization of ready replicas, 0..1 (GPU utilization here). Default 0.7. */
  readonly targetUtilization?: number
  /** Controller sync period. Default 15 s (`--horizontal-pod-autoscaler-sync-period`). */
  readonly syncPeriodMs?: number
  /** Ratios within 1 ± tolerance cause no change. Default 0.1. */
  readonly tolerance?: number
  /** Scale-down stabilization window. Default 300 s; scale-up has none. */
  readonly scaleDownStabilizationMs?: number
  /** Scale-up limits per period (default behaviour: the larger of +100% and +4 pods per 15 s). */
  readonly scaleUpPercent?: number
  readonly scaleUpPods?: number
  readonly scaleUpPeriodMs?: number
  /** Scale-down limit per period (default: 100% per 15 s). */
  readonly scaleDownPercent?: number
  readonly minReplicas?: number
  readonly maxReplicas?: number
}

/** HPA state: last sync, recommendation history (for stabilization), recent scale events (for rate limits). */
export interface HpaState {
  readonly lastSyncMs: number
  readonly desired: number
  readonly recommendations: ReadonlyArray<{ readonly atMs: number; readonly replicas: number }>
  readonly events: ReadonlyArray<{ readonly atMs: number; readonly from: number; readonly to: number }>
}

/** A metric as HPA sees it: a usage ratio (current / target) and whether unready pods should count as 0. */
export type HpaMetric = (
  obs: FleetObservation,
  current: number,
) => { ratio: number; readyBased: boolean; describe: string }

const HPA_DEFAULTS = {
  targetUtilization: 0.7,
  syncPeriodMs: 15_000,
  tolerance: 0.1,
  scaleDownStabilizationMs: 300_000,
  scaleUpPercent: 100,
  scaleUpPods: 4,
  scaleUpPeriodMs: 15_000,
  scaleDownPercent: 100,
  minReplicas: 1,
  maxReplicas: 1000,
} as const

/**
 * The HPA control loop around any metric (shared by {@link hpaPolicy} and KEDA): replica calculation with
 * tolerance, unready pods counted as 0 when scaling up on a per-pod metric, scale-down stabilization (highest
 * recommendation in the window), scale-up/down rate limits, min/max.
 *
 * @example const keda = hpaLoop('keda', {}, (obs, cur) => ({ ratio: obs.queueDepth / cur / 10, readyBased: false, describe: '…' }))
 */
export function hpaLoop(name: string, options: HpaOptions, metric: HpaMetric): Policy<HpaState> {
  const o = { ...HPA_DEFAULTS, ...options }
  return {
    name,
    init: (initial) => ({
      lastSyncMs: -Infinity,
      desired: initial.desiredReplicas,
      recommendations: [],
      events: [],
    }),
    step(state, obs, now) {
      if (now - state.lastSyncMs < o.syncPeriodMs) return { state, actions: [] }
      const current = state.desired
      const ready = obs.replicas.ready
      const m = metric(obs, Math.max(1, current))
      let recommendation = current
      let why = `${m.describe}: within tolerance ${o.tolerance}`
      if (Math.abs(m.ratio - 1) > o.tolerance) {
        if (m.readyBased) {
          let ratio = m.ratio
          let base = Math.max(1, ready)
          if (ratio > 1 && obs.replicas.starting > 0) {
            // Unready pods count as using 0 when scaling up (the HPA's conservative assumption).
            base = ready + obs.replicas.starting
            ratio = (m.ratio * ready) / base
          }
          if (Math.abs(ratio - 1) <= o.tolerance || ratio < 1 !== m.ratio < 1) recommendation = current
          else recommendation = Math.ceil(ratio * base - 1e-9)
        } else {
          recommendation = Math.ceil(m.ratio * Math.max(1, current) - 1e-9)
        }
        why = `${m.describe} → ${recommendation}`
      }
      recommendation = Math.min(o.maxReplicas, Math.max(o.minReplicas, recommendation))
      const recommendations = [
        ...state.recommendations.filter((r) => now - r.atMs < o.scaleDownStabilizationMs),
        { atMs: now, replicas: recommendation },
      ]
      let desired = recommendation
      if (recommendation < current) {
        // Scale-down stabilization: the highest recommendation in the window.
        desired = Math.min(current, Math.max(...recommendations.map((r) => r.replicas)))
        if (desired !== recommendation)
          why += `, stabilized at ${desired} (${o.scaleDownStabilizationMs / 1000} s window)`
      }
      // Rate limits, relative to the replica count at the start of the period.
      const events = state.events.filter((e) => now - e.atMs < o.scaleUpPeriodMs)
      const periodStart = events.length > 0 ? events[0]!.from : current
      if (desired > current) {
        const limit = Math.max(
          Math.ceil(periodStart * (1 + o.scaleUpPercent / 100)),
          periodStart + o.scaleUpPods,
        )
        if (desired > limit) {
          desired = limit
          why += `, scale-up limited to ${limit}`
        }
      } else if (desired < current) {
        const limit = Math.floor(periodStart * (1 - o.scaleDownPercent / 100))
        if (desired < limit) desired = limit
      }
      desired = Math.min(o.maxReplicas, Math.max(o.minReplicas, desired))
      const actions: Action[] = []
      const nextEvents = desired !== current ? [...events, { atMs: now, from: current, to: desired }] : events
      if (desired !== current)
        actions.push({ kind: 'scale', desiredReplicas: desired, reason: `${name}: ${why}` })
      return { state: { lastSyncMs: now, desired, recommendations, events: nextEvents }, actions }
    },
  }
}

/**
 * Kubernetes HPA on average GPU utilization of ready replicas: desired = ceil(ready · util / target), with
 * the defaults of autoscaling/v2 (15 s sync, 0.1 tolerance, 300 s scale-down stabilization, scale-up by the
 * larger of 100% and 4 pods per 15 s).
 *
 * @example hpaPolicy({ targetUtilization: 0.6, minReplicas: 2 })
 */
export function hpaPolicy(options: HpaOptions = {}): Policy<HpaState> {
  const target = options.targetUtilization ?? HPA_DEFAULTS.targetUtilization
  return hpaLoop('hpa', options, (obs) => ({
    ratio: obs.gpuUtilization / target,
    readyBased: true,
    describe: `utilization ${(obs.gpuUtilization * 100).toFixed(0)}% vs target ${(target * 100).toFixed(0)}%`,
  }))
}

/** Options of {@link kedaPolicy}. */
export interface KedaOptions extends HpaOptions {
  /** Queue depth per replica to aim for (AverageValue target). Default 10. */
  readonly queueDepthTarget?: number
}

/**
 * KEDA with a queue-depth trigger: an external metric with an AverageValue target, so desired =
 * ceil(queueDepth / target), run through the HPA loop (KEDA creates an HPA; same sync, tolerance and
 * stabilization). minReplicaCount ≥ 1 keeps the fleet warm (no scale to zero).
 *
 * @example kedaPolicy({ queueDepthTarget: 5, minReplicas: 1 })
 */
export function kedaPolicy(options: KedaOptions = {}): Policy<HpaState> {
  const target = options.queueDepthTarget ?? 10
  return hpaLoop('keda', options, (obs, current) => ({
    ratio: obs.queueDepth / current / target,
    readyBased: false,
    describe: `queue depth ${obs.queueDepth} over ${current} replicas vs target ${target}/replica`,
  }))
}

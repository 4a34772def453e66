import type { Action, Policy } from '../policy.js'

/** Knative Pod Autoscaler (KPA) settings, with Knative Serving's defaults. */
export interface KpaOptions {
  /** Per-replica concurrency the service is sized for (containerConcurrency / target). Default 100. */
  readonly containerConcurrency?: number
  /** Share of it to aim for. Default 0.7 (`container-concurrency-target-percentage`). */
  readonly targetUtilization?: number
  /** Stable window. Default 60 s; the panic window is 10% of it (6 s). */
  readonly stableWindowSeconds?: number
  readonly panicWindowSeconds?: number
  /** Enter panic when the panic-window demand reaches this multiple of ready capacity. Default 2 (200%). */
  readonly panicThreshold?: number
  /** Autoscaler tick. Default 2 s. */
  readonly tickMs?: number
  /** Rate limits per tick: up to ×1000 up, ÷2 down. */
  readonly maxScaleUpRate?: number
  readonly maxScaleDownRate?: number
  readonly minReplicas?: number
  readonly maxReplicas?: number
}

/** KPA state. */
export interface KpaState {
  readonly lastTickMs: number
  readonly desired: number
  /** When panic mode started (or was last extended), or null outside panic. */
  readonly panicSinceMs: number | null
  readonly maxPanicPods: number
}

/**
 * Knative KPA: averages in-system concurrency over a 60 s stable and a 6 s panic window, aims at 70% of
 * the per-replica concurrency, enters panic mode when panic-window demand is ≥ 200% of ready capacity
 * (then never scales down until 60 s without panic), limits scale-down to halving per tick.
 *
 * @example kpaPolicy({ containerConcurrency: 16 })
 */
export function kpaPolicy(options: KpaOptions = {}): Policy<KpaState> {
  const o = {
    containerConcurrency: 100,
    targetUtilization: 0.7,
    stableWindowSeconds: 60,
    panicWindowSeconds: 6,
    panicThreshold: 2,
    tickMs: 2000,
    maxScaleUpRate: 1000,
    maxScaleDownRate: 2,
    minReplicas: 1,
    maxReplicas: 1000,
    ...options,
  }
  const target = o.containerConcurrency * o.targetUtilization
  return {
    name: 'kpa',
    init: (initial) => ({
      lastTickMs: -Infinity,
      desired: initial.desiredReplicas,
      panicSinceMs: null,
      maxPanicPods: 0,
    }),
    step(state, obs, now) {
      if (now - state.lastTickMs < o.tickMs) return { state, actions: [] }
      const ready = Math.max(1, obs.replicas.ready)
      const stable = obs.concurrency[o.stableWindowSeconds] ?? 0
      const panic = obs.concurrency[o.panicWindowSeconds] ?? stable
      const maxUp = Math.ceil(o.maxScaleUpRate * ready)
      const maxDown = Math.floor(ready / o.maxScaleDownRate)
      const clamp = (n: number) => Math.min(maxUp, Math.max(maxDown, n))
      const desiredStable = clamp(Math.ceil(stable / target - 1e-9))
      const desiredPanic = clamp(Math.ceil(panic / target - 1e-9))
      const overPanic = panic / target / ready >= o.panicThreshold
      let panicSinceMs = state.panicSinceMs
      let maxPanicPods = state.maxPanicPods
      let why: string
      if (overPanic) {
        if (panicSinceMs === null) maxPanicPods = obs.replicas.ready
        panicSinceMs = now
      } else if (panicSinceMs !== null && now - panicSinceMs >= o.stableWindowSeconds * 1000) {
        panicSinceMs = null
        maxPanicPods = 0
      }
      let desired: number
      if (panicSinceMs !== null) {
        // In panic the autoscaler never scales down.
        desired = Math.max(desiredPanic, maxPanicPods)
        maxPanicPods = desired
        why = `panic: ${panic.toFixed(1)} concurrent over ${o.panicWindowSeconds} s vs ${target.toFixed(1)}/replica`
      } else {
        desired = desiredStable
        why = `stable: ${stable.toFixed(1)} concurrent over ${o.stableWindowSeconds} s vs ${target.toFixed(1)}/replica`
      }
      desired = Math.min(o.maxReplicas, Math.max(o.minReplicas, desired))
      const actions: Action[] =
        desired !== state.desired
          ? [{ kind: 'scale', desiredReplicas: desired, reason: `kpa ${why} → ${desired}` }]
          : []
      return { state: { lastTickMs: now, desired, panicSinceMs, maxPanicPods }, actions }
    },
  }
}

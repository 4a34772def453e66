/**
 * The replica recommendation that autoscalers ask tailguard for (KEDA external scaler, the Kubernetes external
 * metrics API, the JSON API): one per target, published by the controller at each decision, in observe mode too.
 */
import { closestNames } from '../../collector/index.js'

/** Which workload a recommendation is for: a service, optionally narrowed to a model and version. */
export interface AutoscaleRef {
  readonly service: string
  readonly model?: string
  readonly version?: string
}

/** A Kubernetes-style condition (type, status, reason, message), as the controller reports them. */
export interface AutoscaleCondition {
  readonly type: string
  readonly status: 'True' | 'False' | 'Unknown'
  readonly reason: string
  readonly message: string
}

/** The raw signals behind a recommendation, which an autoscaler may scale on instead (null: not observed). */
export interface AutoscaleSignals {
  /** Requests waiting in queues (proxy or server), summed over replicas. */
  readonly queueDepth: number | null
  /** Requests in the system (queued + in service), summed over replicas. */
  readonly concurrency: number | null
  /** Error-budget burn rate of the SLOs the target honours (the highest), 1 = on budget. */
  readonly burnRate: number | null
  /** Arrival rate, requests per second. */
  readonly arrivalRps: number | null
}

/** What tailguard recommends for one target now. */
export interface Recommendation {
  readonly ref: AutoscaleRef
  readonly desiredReplicas: number
  /** Replicas the actuator or the observation reports now (null when unknown). */
  readonly currentReplicas: number | null
  /** Why, with the numbers that led to it (the policy's reason). */
  readonly reason: string
  /** The stored decision this comes from (null when none was stored). */
  readonly decisionId: string | null
  readonly mode: 'observe' | 'enforce'
  /** When the decision was made and until when it may be used, epoch ms. */
  readonly decidedAtMs: number
  readonly validUntilMs: number
  readonly conditions: readonly AutoscaleCondition[]
  readonly signals: AutoscaleSignals
  /**
   * True only when the policy says scaling to zero is safe: no traffic for the configured time and the error
   * budget is not burning. Autoscalers read this as "not active".
   */
  readonly scaleToZeroSafe: boolean
}

/** Where autoscaler front ends read recommendations from. */
export interface AutoscaleSource {
  /** The newest recommendation for `ref` (exact service, model and version match; undefined when none). */
  get(ref: AutoscaleRef): Recommendation | undefined
  /** Every target with a recommendation (for "did you mean" messages and the external metrics API). */
  list(): readonly Recommendation[]
  /** Calls `listener` whenever a recommendation is published; returns the unsubscribe function. */
  subscribe(listener: (rec: Recommendation) => void): () => void
}

/** An {@link AutoscaleSource} that the controller publishes into. */
export interface RecommendationBoard extends AutoscaleSource {
  publish(rec: Recommendation): void
}

/**
 * The key of a target: service, model and version joined with a separator no label can hold (NUL).
 *
 * @example refKey({ service: 'chat', model: 'llama' }) // 'chat\u0000llama\u0000'
 */
export function refKey(ref: AutoscaleRef): string {
  return `${ref.service}\u0000${ref.model ?? ''}\u0000${ref.version ?? ''}`
}

/**
 * What a question about an unknown target is told: the close names, else the targets there are (at most five),
 * else that none is known yet.
 *
 * @example unknownTargetHint(source, { service: 'chta' }) // 'no controller target "chta"; did you mean "chat"?'
 */
export function unknownTargetHint(
  source: AutoscaleSource,
  ref: AutoscaleRef,
  prefix = 'no controller target',
): string {
  const known = [...new Set(source.list().map((r) => r.ref.service))].sort()
  const near = closestNames(ref.service, known)
  const which = [ref.service, ref.model, ref.version].filter(Boolean).join('/')
  const quote = (names: readonly string[]) => names.map((n) => `"${n}"`).join(', ')
  return (
    `${prefix} "${which}"` +
    (near.length > 0
      ? `; did you mean ${quote(near)}?`
      : known.length > 0
        ? `; the targets are ${quote(known.slice(0, 5))}${known.length > 5 ? ` and ${known.length - 5} more` : ''}`
        : '; no targets are known yet')
  )
}

/**
 * An in-memory board of the newest recommendation per target. The live controller publishes into it at every
 * decision; the KEDA scaler, the external metrics API and the JSON API read from it.
 *
 * @example
 * ```ts
 * const board = createRecommendationBoard()
 * board.publish(rec)
 * board.get({ service: 'chat' })?.desiredReplicas
 * ```
 */
export function createRecommendationBoard(): RecommendationBoard {
  const byKey = new Map<string, Recommendation>()
  const listeners = new Set<(rec: Recommendation) => void>()
  return {
    publish(rec) {
      byKey.set(refKey(rec.ref), rec)
      for (const l of [...listeners]) l(rec)
    },
    get: (ref) => byKey.get(refKey(ref)),
    list: () => [...byKey.values()],
    subscribe(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
  }
}

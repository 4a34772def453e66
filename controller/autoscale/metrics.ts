import type { AutoscaleRef, Recommendation } from './recommendation.js'

/**
 * What an autoscaler may scale on: tailguard's replica decision (`desiredReplicas`, the default) or one of the
 * raw signals behind it.
 */
export const AUTOSCALE_METRICS = ['desiredReplicas', 'queueDepth', 'concurrency', 'burnRate'] as const
export type AutoscaleMetric = (typeof AUTOSCALE_METRICS)[number]

/**
 * Default per-replica targets of the raw signals, used when the trigger's metadata sets no `targetValue`:
 * 16 queued requests or 8 requests in the system per replica, a burn rate of 1 (on budget).
 */
export const DEFAULT_SIGNAL_TARGETS: Readonly<Record<Exclude<AutoscaleMetric, 'desiredReplicas'>, number>> = {
  queueDepth: 16,
  concurrency: 8,
  burnRate: 1,
}

/** A parsed trigger: the target, the metric and its target value per replica. */
export interface AutoscaleQuery {
  readonly ref: AutoscaleRef
  readonly metric: AutoscaleMetric
  /** The autoscaler's target per replica (AverageValue). For `desiredReplicas` it is always 1. */
  readonly target: number
}

/**
 * Keys KEDA itself reads from an `external` trigger's metadata and passes along to the scaler with the rest
 * (the address, TLS settings, the fallback and activation thresholds): accepted and ignored.
 */
const KEDA_OWN_KEYS = new Set([
  'scalerAddress',
  'caCert',
  'tlsCertFile',
  'tlsClientCert',
  'tlsClientKey',
  'unsafeSsl',
  'enableTLS',
  'activationTargetValue',
  'metricType',
])

/** A problem with the trigger's metadata, naming the key. */
export class AutoscaleQueryInvalid extends Error {}

const LABEL_MAX = 256

/**
 * Parses autoscaler metadata (`service` required; `model`, `version`, `metric`, `targetValue` optional) into a
 * query, or throws {@link AutoscaleQueryInvalid} naming the key. Unknown keys other than `token`/`authToken`
 * are refused, so a misspelled key is not silently ignored.
 *
 * @example parseAutoscaleQuery({ service: 'chat' }) // { ref: { service: 'chat' }, metric: 'desiredReplicas', target: 1 }
 */
export function parseAutoscaleQuery(meta: Readonly<Record<string, string | undefined>>): AutoscaleQuery {
  const known = new Set(['service', 'model', 'version', 'metric', 'targetValue', 'token', 'authToken'])
  for (const key of Object.keys(meta))
    if (!known.has(key) && !KEDA_OWN_KEYS.has(key))
      throw new AutoscaleQueryInvalid(
        `unknown metadata key "${key}" (known: service, model, version, metric, targetValue, authToken)`,
      )
  const service = meta.service?.trim()
  if (!service) throw new AutoscaleQueryInvalid('metadata "service" is required')
  for (const key of ['service', 'model', 'version'] as const) {
    const v = meta[key]
    if (v !== undefined && (v.length > LABEL_MAX || v.includes('\u0000')))
      throw new AutoscaleQueryInvalid(`metadata "${key}" must be at most ${LABEL_MAX} characters without NUL`)
  }
  const metricRaw = meta.metric ?? 'desiredReplicas'
  const metric = AUTOSCALE_METRICS.find((m) => m.toLowerCase() === metricRaw.toLowerCase())
  if (!metric)
    throw new AutoscaleQueryInvalid(
      `metadata "metric" must be one of ${AUTOSCALE_METRICS.join(', ')}, got "${metricRaw}"`,
    )
  let target = metric === 'desiredReplicas' ? 1 : DEFAULT_SIGNAL_TARGETS[metric]
  if (meta.targetValue !== undefined) {
    if (metric === 'desiredReplicas')
      throw new AutoscaleQueryInvalid(
        'metadata "targetValue" applies to raw signals only: desiredReplicas is targeted at 1',
      )
    const t = Number(meta.targetValue)
    if (!Number.isFinite(t) || t <= 0 || t > 1e9)
      throw new AutoscaleQueryInvalid(
        `metadata "targetValue" must be a number > 0, got "${meta.targetValue}"`,
      )
    target = t
  }
  const ref: AutoscaleRef = {
    service,
    ...(meta.model ? { model: meta.model } : {}),
    ...(meta.version ? { version: meta.version } : {}),
  }
  return { ref, metric, target }
}

/**
 * The value to report for `metric`. For `desiredReplicas` it is the decision itself: with a target of 1 per
 * replica, an AverageValue autoscaler computes ceil(value / 1) = the desired replicas exactly. A raw signal
 * that was not observed reads as null.
 *
 * @example metricValue(rec, 'desiredReplicas') // rec.desiredReplicas
 */
export function metricValue(rec: Recommendation, metric: AutoscaleMetric): number | null {
  if (metric === 'desiredReplicas') return rec.desiredReplicas
  return rec.signals[metric]
}

/**
 * The metric's name as tailguard reports it: `tailguard-<service>[-<model>[-<version>]]-<metric>`, lower case,
 * with anything outside [a-z0-9-] turned into `-` (Kubernetes metric names), at most 200 characters.
 *
 * @example metricName({ service: 'Chat API' }, 'desiredReplicas') // 'tailguard-chat-api-desiredreplicas'
 */
export function metricName(ref: AutoscaleRef, metric: AutoscaleMetric): string {
  const parts = ['tailguard', ref.service, ref.model, ref.version, metric].filter((p): p is string =>
    Boolean(p),
  )
  return parts
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .slice(0, 200)
}

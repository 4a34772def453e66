import type { TLSSocket } from 'node:tls'
import Fastify from 'fastify'
import { createTokenAuth } from '../../collector/index.js'
import type { FastifyInstance } from 'fastify'
import { metricValue } from './metrics.js'
import type { AutoscaleMetric } from './metrics.js'
import type { AutoscaleSource, Recommendation } from './recommendation.js'

/** The API group and version tailguard serves for the HPA (an APIService points at it). */
export const EXTERNAL_METRICS_GROUP_VERSION = 'external.metrics.k8s.io/v1beta1'

/** The external metric names and the signal each one reads. */
export const EXTERNAL_METRICS: Readonly<Record<string, AutoscaleMetric>> = {
  tailguard_desired_replicas: 'desiredReplicas',
  tailguard_queue_depth: 'queueDepth',
  tailguard_concurrency: 'concurrency',
  tailguard_burn_rate: 'burnRate',
}

/** The default HTTPS port of the external metrics API (`--external-metrics-port`). */
export const DEFAULT_EXTERNAL_METRICS_PORT = 6443

export interface ExternalMetricsOptions {
  readonly source: AutoscaleSource
  /** Bearer tokens accepted (read scope), compared in constant time. */
  readonly tokens: readonly string[]
  /**
   * HTTPS (an APIService requires it). With `clientCa`, a client certificate signed by it (the API server's
   * front-proxy certificate) is accepted in place of a token.
   */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer; readonly clientCa?: Buffer }
  readonly clock?: () => number
}

/**
 * A Kubernetes resource.Quantity in canonical form: integers plainly ("3"), other values in milli-units
 * ("1500m"), rounded to the nearest milli-unit; a positive value under 1m reads "1m" so it is not zero.
 *
 * @example formatQuantity(3) // '3'
 * @example formatQuantity(1.5) // '1500m'
 */
export function formatQuantity(value: number): string {
  if (!Number.isFinite(value)) return '0'
  if (Number.isInteger(value)) return String(value)
  let milli = Math.round(value * 1000)
  if (milli === 0 && value > 0) milli = 1
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`
}

/**
 * Parses a Kubernetes equality-based label selector (`a=b,c==d,e!=f`) into required and excluded pairs.
 * Set-based selectors (`in`, `notin`, `exists`) are refused with a message.
 *
 * @example parseLabelSelector('service=chat,model!=old') // { equal: { service: 'chat' }, notEqual: { model: 'old' } }
 */
export function parseLabelSelector(raw: string | undefined): {
  equal: Record<string, string>
  notEqual: Record<string, string>
} {
  const equal: Record<string, string> = {}
  const notEqual: Record<string, string> = {}
  if (!raw) return { equal, notEqual }
  for (const part of raw.split(',')) {
    const term = part.trim()
    if (!term) continue
    const m = /^([A-Za-z0-9_./-]+)\s*(!=|==|=)\s*([A-Za-z0-9_.\-: ]*)$/.exec(term)
    if (!m) throw new Error(`labelSelector: "${term}" is not key=value or key!=value`)
    if (m[2] === '!=') notEqual[m[1]!] = m[3]!.trim()
    else equal[m[1]!] = m[3]!.trim()
  }
  return { equal, notEqual }
}

const labelsOf = (rec: Recommendation): Record<string, string> => ({
  service: rec.ref.service,
  ...(rec.ref.model ? { model: rec.ref.model } : {}),
  ...(rec.ref.version ? { version: rec.ref.version } : {}),
})

const rfc3339Seconds = (ms: number): string =>
  new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z')

/**
 * Builds (without listening) the Kubernetes external metrics API: `GET /apis/external.metrics.k8s.io/v1beta1`
 * (the resource list) and `GET /apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{metric}?labelSelector=…`
 * (an `ExternalMetricValueList`, one item per matching target). The namespace is accepted and not used:
 * targets are named by labels (`service`, `model`, `version`).
 *
 * @example
 * ```ts
 * const app = buildExternalMetricsApp({ source: board, tokens: [readToken], tls: { cert, key } })
 * await app.listen({ port: 6443, host: '0.0.0.0' })
 * ```
 */
export function buildExternalMetricsApp(opts: ExternalMetricsOptions): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: 1024,
    requestTimeout: 10_000,
    connectionTimeout: 10_000,
    ...(opts.tls
      ? {
          https: {
            cert: opts.tls.cert,
            key: opts.tls.key,
            ...(opts.tls.clientCa
              ? { ca: opts.tls.clientCa, requestCert: true, rejectUnauthorized: false }
              : {}),
          },
        }
      : {}),
  }) as unknown as FastifyInstance
  const auth = createTokenAuth(opts.tokens.map((token) => ({ token, scope: 'read' as const })))
  const clock = opts.clock ?? Date.now
  const status = (code: number, reason: string, message: string) => ({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  })

  app.addHook('onRequest', async (req, reply) => {
    if (req.url === '/healthz' || req.url === '/livez' || req.url === '/readyz') return
    const socket = req.raw.socket as Partial<TLSSocket>
    if (opts.tls?.clientCa && socket.authorized === true) return
    const ok = auth.check(req.headers.authorization, 'read').kind === 'ok'
    if (!ok)
      return reply
        .code(401)
        .send(
          status(
            401,
            'Unauthorized',
            'a client certificate from the API server or a bearer token is required',
          ),
        )
  })

  for (const path of ['/healthz', '/livez', '/readyz']) app.get(path, async () => 'ok')

  app.get(`/apis/${EXTERNAL_METRICS_GROUP_VERSION}`, async () => ({
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: EXTERNAL_METRICS_GROUP_VERSION,
    resources: Object.keys(EXTERNAL_METRICS).map((name) => ({
      name,
      singularName: '',
      namespaced: true,
      kind: 'ExternalMetricValueList',
      verbs: ['get'],
    })),
  }))

  app.get<{ Params: { ns: string; metric: string }; Querystring: { labelSelector?: string } }>(
    `/apis/${EXTERNAL_METRICS_GROUP_VERSION}/namespaces/:ns/:metric`,
    async (req, reply) => {
      const signal = EXTERNAL_METRICS[req.params.metric]
      if (!signal)
        return reply
          .code(404)
          .send(
            status(
              404,
              'NotFound',
              `unknown external metric "${req.params.metric}" (known: ${Object.keys(EXTERNAL_METRICS).join(', ')})`,
            ),
          )
      let selector: ReturnType<typeof parseLabelSelector>
      try {
        selector = parseLabelSelector(req.query.labelSelector)
      } catch (err) {
        return reply.code(400).send(status(400, 'BadRequest', (err as Error).message))
      }
      const items = []
      for (const rec of opts.source.list()) {
        const labels = labelsOf(rec)
        if (Object.entries(selector.equal).some(([k, v]) => labels[k] !== v)) continue
        if (Object.entries(selector.notEqual).some(([k, v]) => labels[k] === v)) continue
        const value = metricValue(rec, signal)
        if (value === null) continue
        items.push({
          metricName: req.params.metric,
          metricLabels: labels,
          timestamp: rfc3339Seconds(Math.min(rec.decidedAtMs, clock())),
          value: formatQuantity(value),
        })
      }
      return {
        kind: 'ExternalMetricValueList',
        apiVersion: EXTERNAL_METRICS_GROUP_VERSION,
        metadata: {},
        items,
      }
    },
  )
  return app
}

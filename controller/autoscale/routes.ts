import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { NotFound } from '../../collector/index.js'
import { metricName } from './metrics.js'
import { unknownTargetHint } from './recommendation.js'
import type { AutoscaleSource, Recommendation } from './recommendation.js'

const Label = Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' })
const NullableNumber = Type.Union([Type.Number(), Type.Null()])

/** The JSON form of a recommendation (`GET /api/v1/autoscale/{service}`). */
export const AutoscaleAnswerSchema = Type.Object({
  service: Type.String(),
  model: Type.Union([Type.String(), Type.Null()]),
  version: Type.Union([Type.String(), Type.Null()]),
  desiredReplicas: Type.Integer({ minimum: 0 }),
  currentReplicas: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
  reason: Type.String(),
  decisionId: Type.Union([Type.String(), Type.Null()]),
  mode: Type.Union([Type.Literal('observe'), Type.Literal('enforce')]),
  decidedAt: Type.String({ description: 'RFC 3339' }),
  validUntil: Type.String({ description: 'RFC 3339; after it the recommendation is stale (still served)' }),
  stale: Type.Boolean(),
  active: Type.Boolean({
    description: 'false only when scaling to zero is safe (what KEDA IsActive answers)',
  }),
  conditions: Type.Array(
    Type.Object({
      type: Type.String(),
      status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
      reason: Type.String(),
      message: Type.String(),
    }),
  ),
  signals: Type.Object({
    queueDepth: NullableNumber,
    concurrency: NullableNumber,
    burnRate: NullableNumber,
    arrivalRps: NullableNumber,
  }),
  keda: Type.Object(
    {
      metricName: Type.String(),
      targetSize: Type.Number(),
      metricValue: Type.Number(),
    },
    {
      description: 'what the KEDA external scaler reports: ceil(metricValue / targetSize) = desiredReplicas',
    },
  ),
})
export type AutoscaleAnswer = Static<typeof AutoscaleAnswerSchema>

/**
 * The JSON answer for one recommendation at time `now`.
 *
 * @example toAutoscaleAnswer(rec, Date.now()).desiredReplicas
 */
export function toAutoscaleAnswer(rec: Recommendation, now: number): AutoscaleAnswer {
  return {
    service: rec.ref.service,
    model: rec.ref.model ?? null,
    version: rec.ref.version ?? null,
    desiredReplicas: rec.desiredReplicas,
    currentReplicas: rec.currentReplicas,
    reason: rec.reason,
    decisionId: rec.decisionId,
    mode: rec.mode,
    decidedAt: new Date(rec.decidedAtMs).toISOString(),
    validUntil: new Date(rec.validUntilMs).toISOString(),
    stale: now > rec.validUntilMs,
    active: !rec.scaleToZeroSafe,
    conditions: rec.conditions.map((c) => ({ ...c })),
    signals: { ...rec.signals },
    keda: {
      metricName: metricName(rec.ref, 'desiredReplicas'),
      targetSize: 1,
      metricValue: rec.desiredReplicas,
    },
  }
}

/**
 * `GET /api/v1/autoscale/{service}?model=&version=` (read scope): tailguard's replica recommendation in JSON,
 * the same number the KEDA scaler's arithmetic yields, in observe mode too. For KEDA's `metrics-api` scaler,
 * the value location is `desiredReplicas`. An unknown service is 404 with the closest known names.
 *
 * @example
 * ```ts
 * await runCollector(config, logger, { plugins: [createAutoscaleRoutes(board)] })
 * // curl -H "Authorization: Bearer $TOKEN" http://localhost:7070/api/v1/autoscale/chat
 * ```
 */
export function createAutoscaleRoutes(
  source: AutoscaleSource,
  clock: () => number = Date.now,
): (app: FastifyInstance) => Promise<void> {
  return async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
    app.get(
      '/autoscale/:service',
      {
        config: { scope: 'read' },
        schema: {
          summary:
            "tailguard's replica recommendation for a service (for KEDA metrics-api or any autoscaler)",
          params: Type.Object({ service: Label }),
          querystring: Type.Object(
            { model: Type.Optional(Label), version: Type.Optional(Label) },
            { additionalProperties: false },
          ),
          response: { 200: AutoscaleAnswerSchema },
        },
      },
      async (req) => {
        const ref = {
          service: req.params.service,
          ...(req.query.model ? { model: req.query.model } : {}),
          ...(req.query.version ? { version: req.query.version } : {}),
        }
        const rec = source.get(ref)
        if (!rec) throw new NotFound(unknownTargetHint(source, ref))
        return toAutoscaleAnswer(rec, clock())
      },
    )
  }
}

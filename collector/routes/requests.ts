import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { RequestCounts } from '../store/types.js'
import { isoTime, parseRange, resolveStepMs } from '../time.js'
import { LabelQuery, selectorOf } from './query.js'

const RequestsQuery = Type.Object(
  {
    ...LabelQuery,
    from: Type.Optional(
      Type.String({ maxLength: 64, description: 'ISO time, now, relative (-1h) or epoch ms; default -1h' }),
    ),
    to: Type.Optional(
      Type.String({ maxLength: 64, description: 'ISO time, now, relative or epoch ms; default now' }),
    ),
    step: Type.Optional(
      Type.String({
        maxLength: 16,
        description: 'bucket width: 10s, 1m, 1h…; default: about 60 points aligned with the rollup levels',
      }),
    ),
  },
  { additionalProperties: false },
)

const NullableRatio = Type.Union([Type.Number(), Type.Null()])

/** The response of `GET /api/v1/requests` (also in openapi.json). */
export const RequestsResponseSchema = Type.Object({
  from: Type.String(),
  to: Type.String(),
  stepMs: Type.Integer(),
  points: Type.Array(
    Type.Object({
      t: Type.String(),
      ok: Type.Integer(),
      error: Type.Integer(),
      shed: Type.Integer(),
      errorClasses: Type.Record(Type.String(), Type.Integer()),
      errorRatio: Type.Union([NullableRatio], {
        description: 'errors out of ok + error (shed requests left out); null for a bucket without requests',
      }),
      shedRatio: Type.Union([NullableRatio], {
        description: 'shed out of all requests; null for a bucket without requests',
      }),
    }),
  ),
})

/**
 * One point of the request series: the counts of one bucket and its error and shed ratios.
 *
 * @example requestPoint(0, { ok: 99, error: 1, shed: 0, errorClasses: { timeout: 1 }, outputTokens: 0 }).errorRatio // 0.01
 */
export function requestPoint(tMs: number, c: RequestCounts) {
  const served = c.ok + c.error
  const all = served + c.shed
  return {
    t: isoTime(tMs),
    ok: c.ok,
    error: c.error,
    shed: c.shed,
    errorClasses: { ...c.errorClasses },
    errorRatio: served > 0 ? c.error / served : null,
    shedRatio: all > 0 ? c.shed / all : null,
  }
}

/**
 * `GET /api/v1/requests` (read scope): request outcomes per step-aligned bucket (ok, error, shed, error classes)
 * with the error and shed ratios, for error-rate charts. Buckets without requests are left out.
 *
 * @example
 * ```ts
 * await api.register(requestRoutes) // under /api/v1
 * const res = await app.inject({ url: '/api/v1/requests?service=chat&from=-1h', headers: { authorization: `Bearer ${readToken}` } })
 * ```
 */
export const requestRoutes: FastifyPluginAsync = async (fastify) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.get(
    '/requests',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'Request outcomes (ok, error, shed) per time bucket, with error and shed ratios',
        querystring: RequestsQuery,
        response: { 200: RequestsResponseSchema },
      },
    },
    async (req) => {
      const q = req.query
      const range = parseRange(q.from, q.to, app.clock(), 3_600_000)
      const stepMs = resolveStepMs(q.step, range, app.store.rollupStepsMs)
      const rows = await app.store.countSeries(selectorOf(q), range, stepMs)
      return {
        from: isoTime(range.fromMs),
        to: isoTime(range.toMs),
        stepMs,
        points: rows
          .filter((r) => r.counts.ok + r.counts.error + r.counts.shed > 0)
          .map((r) => requestPoint(r.tMs, r.counts)),
      }
    },
  )
}

import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { bucketQuantileMs, GpuStatSchema, SIGNAL_COUNTERS, SIGNAL_GAUGES } from '../report/index.js'
import type { ImportedHistogram, SignalSeries } from '../store/types.js'
import { alignedRange, isoTime, parseRange, resolveStepMs } from '../time.js'
import { LabelQuery, selectorOf } from './query.js'

const Str = Type.String()
const NullableNum = Type.Union([Type.Number(), Type.Null()])
const NullableStat = Type.Union([GpuStatSchema, Type.Null()])

const ImportedFields = {
  precision: Type.Union([Type.Literal('buckets'), Type.Literal('summary'), Type.Literal('mean')], {
    description:
      'buckets: Prometheus buckets, quantiles interpolated within a bucket (error up to the bucket width); summary: the server’s own quantiles; mean: count and sum only. Never HDR-exact.',
  }),
  count: Type.Number(),
  sumMs: Type.Number(),
  meanMs: NullableNum,
  p50Ms: NullableNum,
  p90Ms: NullableNum,
  p99Ms: NullableNum,
}
const ImportedHistogramResponse = Type.Object({
  ...ImportedFields,
  boundsMs: Type.Array(Type.Number()),
  counts: Type.Array(Type.Number()),
  quantilesMs: Type.Union([Type.Array(Type.Object({ q: Type.Number(), ms: Type.Number() })), Type.Null()]),
  layouts: Type.Integer({
    description: 'distinct bucket layouts in the range; more than 1 means the server changed its buckets',
  }),
  otherLayoutsCount: Type.Number({
    description: 'observations in other layouts, left out of counts (never re-binned)',
  }),
  sources: Type.Array(Str),
  points: Type.Array(Type.Object({ t: Str, ...ImportedFields })),
})

const gaugeProps = Object.fromEntries(SIGNAL_GAUGES.map((g) => [g, Type.Optional(GpuStatSchema)]))
const counterProps = Object.fromEntries(SIGNAL_COUNTERS.map((c) => [c, Type.Optional(Type.Number())]))

const SignalsQuery = Type.Object(
  {
    ...LabelQuery,
    from: Type.Optional(
      Type.String({ maxLength: 64, description: 'ISO time, now, relative (-1h) or epoch ms; default -15m' }),
    ),
    to: Type.Optional(
      Type.String({ maxLength: 64, description: 'ISO time, now, relative or epoch ms; default now' }),
    ),
    step: Type.Optional(
      Type.String({ maxLength: 16, description: 'bucket width: 10s, 1m, 1h…; default fits ~60 points' }),
    ),
  },
  { additionalProperties: false },
)

/** The response of `GET /api/v1/signals` (also in openapi.json). @example Value.Check(SignalsResponseSchema, body) // true */
export const SignalsResponseSchema = Type.Object({
  from: Str,
  to: Str,
  stepMs: Type.Integer(),
  series: Type.Array(
    Type.Object({
      service: Str,
      model: Str,
      version: Str,
      replica: Str,
      node: Str,
      sources: Type.Array(Str),
      points: Type.Array(
        Type.Object({
          t: Str,
          gauges: Type.Object(gaugeProps),
          counters: Type.Object(counterProps),
          /** Counters divided by the step, per second. */
          ratesPerS: Type.Object(counterProps),
          byClass: Type.Array(
            Type.Object({
              priorityClass: Type.Integer(),
              inFlight: NullableStat,
              queued: NullableStat,
              admitted: Type.Number(),
              shed: Type.Record(Type.String(), Type.Number()),
            }),
          ),
        }),
      ),
      histograms: Type.Record(Type.String(), ImportedHistogramResponse),
    }),
  ),
})

const DEFAULT_RANGE_MS = 15 * 60_000

/**
 * The figures an imported histogram supports: count, sum, mean, and p50/p90/p99 estimated from buckets (or the
 * server's own summary quantiles, or none for a count-and-sum histogram).
 *
 * @example importedFigures(h) // { precision: 'buckets', count: 120, sumMs: 3100, meanMs: 25.8, p50Ms: 21.2, … }
 */
export function importedFigures(h: ImportedHistogram): {
  precision: ImportedHistogram['precision']
  count: number
  sumMs: number
  meanMs: number | null
  p50Ms: number | null
  p90Ms: number | null
  p99Ms: number | null
} {
  const q = (p: number): number | null => {
    if (h.precision === 'buckets') return bucketQuantileMs(h.boundsMs, h.counts, p)
    return h.quantilesMs?.find((x) => Math.abs(x.q - p) < 1e-9)?.ms ?? null
  }
  return {
    precision: h.precision,
    count: h.count,
    sumMs: h.sumMs,
    meanMs: h.count > 0 ? h.sumMs / h.count : null,
    p50Ms: q(0.5),
    p90Ms: q(0.9),
    p99Ms: q(0.99),
  }
}

/**
 * Formats the store's signal series for the API (ISO times, per-second rates, imported histograms with their
 * precision and estimates).
 *
 * @example const body = signalsResponse(series, range, 60_000)
 */
export function signalsResponse(
  series: readonly SignalSeries[],
  range: { fromMs: number; toMs: number },
  stepMs: number,
) {
  return {
    from: isoTime(range.fromMs),
    to: isoTime(range.toMs),
    stepMs,
    series: series.map((s) => ({
      ...s.labels,
      sources: [...s.sources],
      points: s.points.map((p) => ({
        t: isoTime(p.tMs),
        gauges: { ...p.gauges },
        counters: { ...p.counters },
        ratesPerS: Object.fromEntries(
          Object.entries(p.counters).map(([k, v]) => [k, (v ?? 0) / (stepMs / 1000)]),
        ),
        byClass: p.byClass.map((c) => ({ ...c, shed: { ...c.shed } })),
      })),
      histograms: Object.fromEntries(
        Object.entries(s.histograms).map(([metric, h]) => [
          metric,
          {
            ...importedFigures(h!.total),
            boundsMs: [...h!.total.boundsMs],
            counts: [...h!.total.counts],
            quantilesMs: h!.total.quantilesMs ? h!.total.quantilesMs.map((x) => ({ ...x })) : null,
            layouts: h!.total.layouts,
            otherLayoutsCount: h!.total.otherLayoutsCount,
            sources: [...h!.total.sources],
            points: h!.points.map((p) => ({ t: isoTime(p.tMs), ...importedFigures(p) })),
          },
        ]),
      ),
    })),
  }
}

/**
 * `GET /api/v1/signals` (read scope): live saturation signals per series over time (in-flight, queued,
 * running, waiting, KV-cache use, batch size as min/mean/max/last; token, preemption, prefix-cache and batch
 * counters with per-second rates; per-class admission and shed), the sources that sent them, and the latency
 * histograms model servers export in bucket form, flagged with their precision.
 *
 * @example
 * ```ts
 * await api.register(signalRoutes) // under /api/v1
 * const res = await app.inject({ url: '/api/v1/signals?service=chat&from=-15m', headers: { authorization: `Bearer ${readToken}` } })
 * ```
 */
export const signalRoutes: FastifyPluginAsync = async (fastify) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.get(
    '/signals',
    {
      config: { scope: 'read' },
      schema: {
        summary:
          'Live saturation signals per series over time, and imported bucket histograms (precision: buckets)',
        querystring: SignalsQuery,
        response: { 200: SignalsResponseSchema },
      },
    },
    async (req) => {
      const q = req.query
      const polled = parseRange(q.from, q.to, app.clock(), DEFAULT_RANGE_MS)
      const stepMs = resolveStepMs(q.step, polled)
      const range = alignedRange(polled, q, stepMs)
      const series = await app.store.signals(selectorOf(q), range, stepMs)
      return signalsResponse(series, range, stepMs)
    },
  )
}

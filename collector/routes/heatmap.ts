import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { MAX_BANDS_PER_DECADE, METRICS, bandCounts, logBandEdgesMs } from '../report/index.js'
import { BadRequest } from '../errors.js'
import { isoTime, parseRange, resolveStepMs } from '../time.js'
import { LabelQuery, assertServiceReported, parseMetric, selectorOf } from './query.js'

const DEFAULT_BANDS_PER_DECADE = 5

const HeatmapQuery = Type.Object(
  {
    ...LabelQuery,
    phase: Type.Optional(Type.String({ maxLength: 32, description: `one of ${METRICS.join(', ')}` })),
    from: Type.Optional(
      Type.String({ maxLength: 64, description: 'ISO time, now, relative (-1h) or epoch ms; default -5m' }),
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
    bandsPerDecade: Type.Optional(
      Type.String({
        maxLength: 4,
        description: `latency bands per decade (1 to ${MAX_BANDS_PER_DECADE}); default ${DEFAULT_BANDS_PER_DECADE}`,
      }),
    ),
  },
  { additionalProperties: false },
)

/** The response of `GET /api/v1/heatmap` (also in openapi.json). */
export const HeatmapResponseSchema = Type.Object({
  from: Type.String(),
  to: Type.String(),
  phase: Type.String(),
  stepMs: Type.Integer(),
  bandsPerDecade: Type.Integer(),
  bands: Type.Array(Type.Object({ lowMs: Type.Number(), highMs: Type.Number() }), {
    description: 'log-spaced latency bands [lowMs, highMs), lowest first, covering every sample of the range',
  }),
  maxCount: Type.Integer({ description: 'the largest count of one cell (0 without data)' }),
  points: Type.Array(
    Type.Object({
      t: Type.String(),
      count: Type.Integer(),
      counts: Type.Array(Type.Integer(), { description: 'samples per band, in the order of bands' }),
    }),
    { description: 'one per step with data, oldest first; steps without samples are absent' },
  ),
})

function parseBandsPerDecade(text: string | undefined): number {
  if (text === undefined || text === '') return DEFAULT_BANDS_PER_DECADE
  const n = Number(text)
  if (!Number.isInteger(n) || n < 1 || n > MAX_BANDS_PER_DECADE)
    throw new BadRequest(
      `bandsPerDecade: expected an integer from 1 to ${MAX_BANDS_PER_DECADE}; got '${text}'`,
    )
  return n
}

/**
 * The latency heatmap (read scope): per time step, how many samples of one phase fell in each log-spaced
 * latency band, from the store's merged histograms of that step. Counts are exact integers that sum to the
 * step's sample count (each HDR bucket counts whole in one band; see {@link bandCounts}).
 */
export const heatmapRoutes: FastifyPluginAsync = async (fastify) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.get(
    '/heatmap',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'Latency histogram over time: sample counts per log-spaced band and time step',
        querystring: HeatmapQuery,
        response: { 200: HeatmapResponseSchema },
      },
    },
    async (req) => {
      const q = req.query
      const metric = parseMetric(q.phase)
      const perDecade = parseBandsPerDecade(q.bandsPerDecade)
      const range = parseRange(q.from, q.to, app.clock())
      const stepMs = resolveStepMs(q.step, range, app.store.rollupStepsMs)
      const series = await app.store.timeseries(selectorOf(q), range, metric, stepMs)
      if (series.length === 0) await assertServiceReported(app.store, q.service)
      let minMs = Infinity
      let maxMs = -Infinity
      for (const p of series) {
        if (p.histogram.totalCount === 0) continue
        minMs = Math.min(minMs, p.histogram.minValue / 1000)
        maxMs = Math.max(maxMs, p.histogram.maxValue / 1000)
      }
      const edges = logBandEdgesMs(minMs, maxMs, perDecade)
      const points = series
        .filter((p) => p.histogram.totalCount > 0)
        .map((p) => ({
          t: isoTime(p.tMs),
          count: p.histogram.totalCount,
          counts: bandCounts(p.histogram, edges),
        }))
      return {
        from: isoTime(range.fromMs),
        to: isoTime(range.toMs),
        phase: metric,
        stepMs,
        bandsPerDecade: perDecade,
        bands: edges.slice(0, -1).map((lowMs, k) => ({ lowMs, highMs: edges[k + 1]! })),
        maxCount: points.reduce((m, p) => Math.max(m, ...p.counts), 0),
        points,
      }
    },
  )
}

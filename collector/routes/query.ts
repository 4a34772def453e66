import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { METRICS, PHASES, isMetric, summarizeMs } from '../report/index.js'
import type { Metric } from '../report/index.js'
import type { Selector, Store } from '../store/types.js'
import { BadRequest, SeriesNotFound } from '../errors.js'
import { didYouMean } from './closest.js'
import { alignedRange, isoTime, parseRange, resolveStepMs } from '../time.js'

const DEFAULT_QUANTILES = ['0.5', '0.9', '0.99', '0.999']
/** The label value agents give overflow series (agent/recorder.ts OVERFLOW_LABEL; docs/limits.md). */
const OVERFLOW_LABEL = '__overflow__'

/** The label filters a series query takes (`?service=&model=&version=&replica=&node=`). */
export const LabelQuery = {
  service: Type.Optional(Type.String({ maxLength: 256 })),
  model: Type.Optional(Type.String({ maxLength: 256 })),
  version: Type.Optional(Type.String({ maxLength: 256 })),
  replica: Type.Optional(Type.String({ maxLength: 256 })),
  node: Type.Optional(Type.String({ maxLength: 256 })),
}
const SelectorQuery = {
  ...LabelQuery,
  from: Type.Optional(
    Type.String({ maxLength: 64, description: 'ISO time, now, relative (-1h) or epoch ms; default -5m' }),
  ),
  to: Type.Optional(
    Type.String({ maxLength: 64, description: 'ISO time, now, relative or epoch ms; default now' }),
  ),
  quantiles: Type.Optional(
    Type.String({
      maxLength: 256,
      description: 'comma-separated quantiles in (0,1]; default 0.5,0.9,0.99,0.999',
    }),
  ),
}
const LatencyQuery = Type.Object(
  {
    ...SelectorQuery,
    phase: Type.Optional(Type.String({ maxLength: 32, description: `one of ${METRICS.join(', ')}` })),
  },
  { additionalProperties: false },
)
const TimeseriesQuery = Type.Object(
  {
    ...SelectorQuery,
    phase: Type.Optional(Type.String({ maxLength: 32 })),
    step: Type.Optional(
      Type.String({
        maxLength: 16,
        description:
          'bucket width: 10s, 1m, 1h…; default: about 60 points, rounded up to a step aligned with the rollup levels (the answer states stepMs)',
      }),
    ),
  },
  { additionalProperties: false },
)
const Quantiles = Type.Record(Type.String(), Type.Union([Type.Number(), Type.Null()]))
const LatencySummary = Type.Object({
  count: Type.Integer(),
  min: Type.Union([Type.Number(), Type.Null()]),
  max: Type.Union([Type.Number(), Type.Null()]),
  mean: Type.Union([Type.Number(), Type.Null()]),
  quantiles: Quantiles,
})
const LatencyResponse = Type.Composite([
  LatencySummary,
  Type.Object({ phase: Type.String(), from: Type.String(), to: Type.String() }),
])
const BreakdownResponse = Type.Object({
  from: Type.String(),
  to: Type.String(),
  total: LatencySummary,
  phases: Type.Array(
    Type.Composite([
      LatencySummary,
      Type.Object({ phase: Type.String(), share: Type.Union([Type.Number(), Type.Null()]) }),
    ]),
  ),
  requests: Type.Object({
    ok: Type.Integer(),
    error: Type.Integer(),
    shed: Type.Integer(),
    errorClasses: Type.Record(Type.String(), Type.Integer()),
    outputTokens: Type.Integer(),
  }),
})
const TimeseriesResponse = Type.Object({
  from: Type.String(),
  to: Type.String(),
  phase: Type.String(),
  stepMs: Type.Integer(),
  quantiles: Type.Array(Type.String()),
  points: Type.Array(
    Type.Object({
      t: Type.String(),
      count: Type.Integer(),
      ratePerSecond: Type.Number(),
      quantiles: Quantiles,
    }),
  ),
})
const ServicesResponse = Type.Object({
  services: Type.Array(
    Type.Object({
      service: Type.String(),
      model: Type.String(),
      version: Type.String(),
      replica: Type.String(),
      node: Type.String(),
      firstSeen: Type.String(),
      lastSeen: Type.String(),
      overflow: Type.Optional(
        Type.Boolean({
          description:
            'true for an overflow series: label sets an agent folded past its cardinality limits (a label is __overflow__)',
        }),
      ),
    }),
  ),
})

/** Parses `?quantiles=0.5,0.99` into validated decimal keys. */
export function parseQuantiles(text: string | undefined): string[] {
  if (text === undefined || text.trim() === '') return DEFAULT_QUANTILES
  const out: string[] = []
  for (const part of text.split(',')) {
    const t = part.trim()
    const q = Number(t)
    if (t === '' || !Number.isFinite(q) || q <= 0 || q > 1)
      throw new BadRequest(`quantiles: '${part}' is not a number in (0, 1]; use e.g. quantiles=0.5,0.99`)
    out.push(t)
  }
  if (out.length > 20) throw new BadRequest('quantiles: at most 20 quantiles per request')
  return out
}

/** The `phase` query parameter: a known metric, `total` when absent. */
export function parseMetric(text: string | undefined): Metric {
  if (text === undefined || text === '') return 'total'
  if (!isMetric(text))
    throw new BadRequest(`phase: unknown phase '${text}'; expected one of ${METRICS.join(', ')}`)
  return text
}

/**
 * The label selector of a query string: empty values mean "any".
 *
 * @example selectorOf({ service: 'chat', replica: '' }) // { service: 'chat' }
 */
export function selectorOf(q: {
  service?: string
  model?: string
  version?: string
  replica?: string
  node?: string
}): Selector {
  const s: { -readonly [K in keyof Selector]: string } = {}
  if (q.service) s.service = q.service
  if (q.model) s.model = q.model
  if (q.version) s.version = q.version
  if (q.replica) s.replica = q.replica
  if (q.node) s.node = q.node
  return s
}

const iso = isoTime

/**
 * An empty answer for a `service` that has never reported, while others have, is a typo, not a quiet hour: 404
 * with the closest names. Asked only when a query came back empty, so answers with data cost nothing more.
 */
export async function assertServiceReported(store: Store, service: string | undefined): Promise<void> {
  if (!service) return
  const known = [...new Set((await store.services()).map((s) => s.service))]
  // Nothing has reported yet (a fresh start): nothing to compare against, so an empty answer, not a 404.
  if (known.length === 0 || known.includes(service)) return
  throw new SeriesNotFound(`service: no series named '${service}' has reported${didYouMean(service, known)}`)
}

/** The query API (read scope): latency, breakdown, timeseries, services. All durations in ms as floats. */
export const queryRoutes: FastifyPluginAsync = async (fastify) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.get(
    '/latency',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'Latency percentiles of one phase (ms)',
        querystring: LatencyQuery,
        response: { 200: LatencyResponse },
      },
    },
    async (req) => {
      const q = req.query
      const metric = parseMetric(q.phase)
      const quantiles = parseQuantiles(q.quantiles)
      const range = parseRange(q.from, q.to, app.clock())
      const hs = await app.store.histograms(selectorOf(q), range, [metric])
      if (!hs.get(metric)?.totalCount) await assertServiceReported(app.store, q.service)
      return {
        ...summarizeMs(hs.get(metric), quantiles),
        phase: metric,
        from: iso(range.fromMs),
        to: iso(range.toMs),
      }
    },
  )

  app.get(
    '/breakdown',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'Per-phase percentiles and each phase’s share of total time',
        querystring: Type.Omit(LatencyQuery, ['phase']),
        response: { 200: BreakdownResponse },
      },
    },
    async (req) => {
      const q = req.query as Static<typeof LatencyQuery>
      const quantiles = parseQuantiles(q.quantiles)
      const range = parseRange(q.from, q.to, app.clock())
      const selector = selectorOf(q)
      const [hs, counts] = await Promise.all([
        app.store.histograms(selector, range, METRICS),
        app.store.counts(selector, range),
      ])
      if (!hs.get('total')?.totalCount && counts.ok + counts.error + counts.shed === 0)
        await assertServiceReported(app.store, q.service)
      const total = hs.get('total')
      const totalTime = total ? total.mean * total.totalCount : 0
      const phases = METRICS.filter((m) => m !== 'total' && hs.has(m)).map((m) => {
        const h = hs.get(m)!
        const isPhase = (PHASES as readonly string[]).includes(m)
        return {
          phase: m,
          ...summarizeMs(h, quantiles),
          share: isPhase && totalTime > 0 ? (h.mean * h.totalCount) / totalTime : null,
        }
      })
      return {
        from: iso(range.fromMs),
        to: iso(range.toMs),
        total: summarizeMs(total, quantiles),
        phases,
        requests: { ...counts, errorClasses: { ...counts.errorClasses } },
      }
    },
  )

  app.get(
    '/timeseries',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'Quantile series of one phase for charts',
        querystring: TimeseriesQuery,
        response: { 200: TimeseriesResponse },
      },
    },
    async (req) => {
      const q = req.query
      const metric = parseMetric(q.phase)
      const quantiles = parseQuantiles(q.quantiles)
      const polled = parseRange(q.from, q.to, app.clock())
      const stepMs = resolveStepMs(q.step, polled, app.store.rollupStepsMs)
      const range = alignedRange(polled, q, stepMs)
      const series = await app.store.timeseries(selectorOf(q), range, metric, stepMs)
      if (series.length === 0) await assertServiceReported(app.store, q.service)
      return {
        from: iso(range.fromMs),
        to: iso(range.toMs),
        phase: metric,
        stepMs,
        quantiles,
        points: series.map((p) => {
          const s = summarizeMs(p.histogram, quantiles)
          return {
            t: iso(p.tMs),
            count: s.count,
            ratePerSecond: s.count / (stepMs / 1000),
            quantiles: s.quantiles,
          }
        }),
      }
    },
  )

  app.get(
    '/services',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'Series that report, with first and last seen times',
        response: { 200: ServicesResponse },
      },
    },
    async () => {
      const services = await app.store.services()
      return {
        services: services.map((s) => ({
          service: s.service,
          model: s.model,
          version: s.version,
          replica: s.replica,
          node: s.node,
          firstSeen: iso(s.firstSeenMs),
          lastSeen: iso(s.lastSeenMs),
          ...([s.model, s.version, s.replica, s.node, s.service].includes(OVERFLOW_LABEL)
            ? { overflow: true }
            : {}),
        })),
      }
    },
  )
}

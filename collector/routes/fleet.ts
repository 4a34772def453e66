import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { summarizeMs } from '../report/index.js'
import type { Metric } from '../report/index.js'
import { countAtOrBelow, withoutFloatNoise } from '../slo/math.js'
import { costPerMillion, resolvePricing } from '../live/figures.js'
import type { GpuPricing } from '../live/figures.js'
import { heldGpus, hourlyPrice, sloCovers } from '../live/service-figures.js'
import type { LatencyThreshold } from '../live/service-figures.js'
import type { Histogram } from '../report/index.js'
import type { EpochMs, GpuInfo, RequestCounts, ServiceInfo, TimeRange } from '../store/types.js'
import { alignedRange, isoTime, parseRange, resolveStepMs } from '../time.js'

/** The label value agents give overflow series (agent/recorder.ts OVERFLOW_LABEL; docs/limits.md). */
const OVERFLOW_LABEL = '__overflow__'

const NullableNumber = Type.Union([Type.Number(), Type.Null()])

const FleetService = Type.Object({
  service: Type.String(),
  models: Type.Array(Type.String()),
  versions: Type.Array(Type.String()),
  replicas: Type.Integer({ description: 'distinct replicas that reported in the range' }),
  lastSeen: Type.String(),
  requests: Type.Object({ ok: Type.Integer(), error: Type.Integer(), shed: Type.Integer() }),
  dataSeconds: Type.Union([Type.Number(), Type.Null()], {
    description: 'seconds of the range with data (first to last bucket with requests); null without requests',
  }),
  ratePerSecond: Type.Union([Type.Number(), Type.Null()], {
    description: '(ok + error + shed) / dataSeconds',
  }),
  errorRatio: NullableNumber,
  shedRatio: NullableNumber,
  goodputPerSecond: Type.Union([Type.Number(), Type.Null()], {
    description: 'ok requests per second (over dataSeconds) within every covering latency SLO threshold',
  }),
  goodputReason: Type.Optional(Type.String()),
  latencyMs: Type.Object({ count: Type.Integer(), p50: NullableNumber, p99: NullableNumber }),
  gpus: Type.Object({
    count: Type.Integer({ description: 'GPUs (or MIG instances) the replicas hold in their newest report' }),
    utilPct: Type.Union([Type.Number(), Type.Null()], {
      description: 'mean utilization of those GPUs in their newest report',
    }),
  }),
  costPerMillionRequests: Type.Object(
    {
      usd: NullableNumber,
      reason: Type.Optional(Type.String({ description: 'why usd is null' })),
    },
    {
      description:
        'the hourly price of the GPUs the replicas hold (collector pricing) ÷ (ok + error) requests per hour over the range; as costPerMillionRequests of /figures',
    },
  ),
})

const FleetResponse = Type.Object({
  from: Type.String(),
  to: Type.String(),
  stepMs: Type.Integer(),
  services: Type.Array(FleetService),
})

const FleetQuery = Type.Object(
  {
    from: Type.Optional(
      Type.String({ maxLength: 64, description: 'ISO, now, relative (-1h) or epoch ms; default -1h' }),
    ),
    to: Type.Optional(Type.String({ maxLength: 64, description: 'default now' })),
  },
  { additionalProperties: false },
)

/** What the fleet route needs besides the store: the latency SLOs that define "good" for goodput, GPU prices. */
export interface FleetRoutesOptions {
  readonly latencySlos: () => readonly LatencyThreshold[]
  /** The collector's GPU-hour prices (none: no cost). */
  readonly pricing?: Partial<GpuPricing>
}

/**
 * Seconds from the first to the end of the last step bucket with requests, clipped to the range; null when no
 * bucket has any. The same rule as the dashboard's `dataSeconds` (a service that started ten minutes ago does
 * not read at a sixth of its rate on the 1 h range).
 *
 * @example coveredSeconds([{ tMs: 20_000, n: 3 }], { fromMs: 0, toMs: 60_000 }, 10_000) // 10
 */
export function coveredSeconds(
  buckets: ReadonlyArray<{ readonly tMs: number; readonly n: number }>,
  range: TimeRange,
  stepMs: number,
): number | null {
  let first = Infinity
  let last = -Infinity
  for (const b of buckets) {
    if (b.n <= 0) continue
    first = Math.min(first, b.tMs)
    last = Math.max(last, b.tMs)
  }
  if (!Number.isFinite(first)) return null
  const start = Math.max(first, range.fromMs)
  const end = Math.min(last + stepMs, range.toMs)
  return end > start ? (end - start) / 1000 : null
}

const distinct = (xs: Iterable<string>) => [...new Set(xs)].filter((x) => x !== '').sort()

/** What one row is computed from: the service's series, its buckets and histograms (absent without data). */
interface RowInputs {
  readonly service: string
  readonly series: readonly ServiceInfo[]
  readonly buckets: ReadonlyArray<{ readonly tMs: EpochMs; readonly counts: RequestCounts }>
  readonly hs: ReadonlyMap<Metric, Histogram>
}

function fleetRow(
  { service, series, buckets, hs }: RowInputs,
  gpus: readonly GpuInfo[],
  range: TimeRange,
  stepMs: number,
  slos: readonly LatencyThreshold[],
  pricing: GpuPricing,
) {
  const sel = { service }
  const mine = slos.filter((s) => sloCovers(s.selector, sel))
  // The range's counts are the sum of its buckets (one query instead of two).
  const counts = { ok: 0, error: 0, shed: 0 }
  for (const b of buckets) {
    counts.ok += b.counts.ok
    counts.error += b.counts.error
    counts.shed += b.counts.shed
  }
  const all = counts.ok + counts.error + counts.shed
  const seconds = coveredSeconds(
    buckets.map((b) => ({ tMs: b.tMs, n: b.counts.ok + b.counts.error + b.counts.shed })),
    range,
    stepMs,
  )
  const total = summarizeMs(hs.get('total'), ['0.5', '0.99'])
  let goodputPerSecond: number | null = null
  let goodputReason: string | undefined
  if (mine.length === 0) goodputReason = 'no latency SLO covers this service'
  else if (seconds === null) goodputReason = 'no requests in the range'
  else {
    const fractions: number[] = []
    for (const s of mine) {
      const h = hs.get(s.metric)
      if (h && h.totalCount > 0)
        fractions.push(countAtOrBelow(h, Math.round(s.thresholdMs * 1000)) / h.totalCount)
    }
    if (fractions.length === 0) goodputReason = 'no latencies of the SLO phases in the range'
    else goodputPerSecond = withoutFloatNoise((counts.ok / seconds) * Math.min(...fractions))
  }
  const held = heldGpus(gpus, sel, pricing)
  const price = hourlyPrice(held)
  // As /figures computes it: served (ok + error) requests per second over the whole range.
  const servedPerSecond = (counts.ok + counts.error) / ((range.toMs - range.fromMs) / 1000)
  const costUsd = price.usdPerHour === null ? null : costPerMillion(price.usdPerHour, 1, servedPerSecond)
  const costReason = price.reason ?? (costUsd === null ? 'no requests in the range' : undefined)
  const utils: number[] = []
  for (const h of held) {
    const g = gpus.find(
      (x) => x.node === h.node && x.uuid === h.uuid && (x.mig?.gpuInstanceId ?? null) === h.migGpuInstanceId,
    )
    const u = g?.fields.gpuUtilPct?.mean
    if (u !== undefined) utils.push(u)
  }
  const inRange = series.filter((s) => s.lastSeenMs >= range.fromMs && s.firstSeenMs <= range.toMs)
  return {
    service,
    models: distinct(series.map((s) => s.model)),
    versions: distinct(series.map((s) => s.version)),
    replicas: distinct(inRange.map((s) => s.replica)).length,
    lastSeen: isoTime(Math.max(...series.map((s) => s.lastSeenMs))),
    requests: { ok: counts.ok, error: counts.error, shed: counts.shed },
    dataSeconds: seconds,
    ratePerSecond: seconds === null ? null : withoutFloatNoise(all / seconds),
    errorRatio: all > 0 ? withoutFloatNoise(counts.error / all) : null,
    shedRatio: all > 0 ? withoutFloatNoise(counts.shed / all) : null,
    goodputPerSecond,
    ...(goodputReason === undefined ? {} : { goodputReason }),
    latencyMs: {
      count: total.count,
      p50: total.quantiles['0.5'] ?? null,
      p99: total.quantiles['0.99'] ?? null,
    },
    gpus: {
      count: held.length,
      utilPct: utils.length > 0 ? withoutFloatNoise(utils.reduce((a, b) => a + b, 0) / utils.length) : null,
    },
    costPerMillionRequests: {
      usd: costUsd === null ? null : withoutFloatNoise(costUsd),
      ...(costReason === undefined ? {} : { reason: costReason }),
    },
  }
}

/**
 * `GET /api/v1/fleet?from=-1h&to=now` (read scope): one row per service with everything the dashboard's fleet
 * overview shows, in one request instead of several per service: replicas, request counts, the rate over the
 * time with data, error and shed ratios, goodput against the latency SLOs that cover it, total p50/p99, and the
 * GPUs its replicas hold with their utilization and cost per million requests. Each of these is one read of
 * the store for every service at once, not a query per service. Overflow series (`__overflow__`) are left out.
 *
 * @example
 * ```ts
 * const app = await buildCollector(opts, { store, plugins: [createFleetRoutes({ latencySlos: () => [] })] })
 * await app.inject({ url: '/api/v1/fleet?from=-1h', headers: { authorization: `Bearer ${read}` } })
 * ```
 */
export function createFleetRoutes(options: FleetRoutesOptions): (fastify: FastifyInstance) => Promise<void> {
  const pricing = resolvePricing(options.pricing)
  return async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
    app.get(
      '/fleet',
      {
        config: { scope: 'read' },
        schema: {
          summary: 'Every service with rate, goodput, error and shed ratios, p50/p99, replicas and GPU use',
          querystring: FleetQuery,
          response: { 200: FleetResponse },
        },
      },
      async (req) => {
        const now = app.clock()
        const polled = parseRange(req.query.from, req.query.to, now, 3_600_000)
        const stepMs = resolveStepMs(undefined, polled, app.store.rollupStepsMs)
        const range = alignedRange(polled, req.query, stepMs)
        const [series, gpus] = await Promise.all([app.store.services(), app.store.gpus(now)])
        const byService = new Map<string, ServiceInfo[]>()
        for (const s of series) {
          if ([s.service, s.model, s.version, s.replica, s.node].includes(OVERFLOW_LABEL)) continue
          const list = byService.get(s.service) ?? []
          list.push(s)
          byService.set(s.service, list)
        }
        const slos = options.latencySlos()
        const metrics = [...new Set<Metric>(['total', ...slos.map((s) => s.metric)])]
        // One read of every service's buckets and one of its histograms, whatever the number of services.
        const [buckets, hs] = await Promise.all([
          app.store.countSeriesByService(range, stepMs),
          app.store.histogramsByService(range, metrics),
        ])
        const names = [...byService.keys()].sort((a, b) => a.localeCompare(b))
        const services = names.map((service) =>
          fleetRow(
            {
              service,
              series: byService.get(service)!,
              buckets: buckets.get(service) ?? [],
              hs: hs.get(service) ?? new Map(),
            },
            gpus,
            range,
            stepMs,
            slos,
            pricing,
          ),
        )
        return { from: isoTime(range.fromMs), to: isoTime(range.toMs), stepMs, services }
      },
    )
  }
}

import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { Gauge } from 'prom-client'
import { BadRequest } from '../errors.js'
import { serviceFigures } from '../live/service-figures.js'
import type { LatencyThreshold, ServiceFigures } from '../live/service-figures.js'
import { resolvePricing } from '../live/figures.js'
import type { GpuPricing } from '../live/figures.js'
import {
  PROM_SERVICE_COST_PER_MILLION_REQUESTS,
  PROM_SERVICE_COST_PER_MILLION_TOKENS,
  PROM_SERVICE_ENERGY_PER_TOKEN,
  PROM_SERVICE_GOODPUT,
  PROM_SERVICE_TOKENS,
} from '../semconv.js'
import { alignedRange, isoTime, parseDurationMs, resolveStepMs } from '../time.js'
import { LabelQuery } from './query.js'

/** What the figure routes need: the GPU prices and the latency SLOs that define "good". */
export interface FigureRoutesOptions {
  readonly pricing: Partial<GpuPricing>
  /** The latency SLOs in force (the SLO engine's, or a fixed list in tests). */
  readonly latencySlos: () => readonly LatencyThreshold[]
}

const FigureSchema = Type.Object({
  value: Type.Union([Type.Number(), Type.Null()]),
  unit: Type.String(),
  reason: Type.Optional(Type.String()),
  inputs: Type.Record(Type.String(), Type.Unknown(), { description: 'what the figure was computed from' }),
})
const FIGURE_NAMES = [
  'throughput',
  'goodput',
  'inputTokensPerSecond',
  'outputTokensPerSecond',
  'costPerMillionRequests',
  'costPerMillionOutputTokens',
  'energyPerOutputToken',
] as const
const FiguresResponse = Type.Object({
  from: Type.String(),
  to: Type.String(),
  windowSeconds: Type.Number(),
  services: Type.Array(
    Type.Object({
      service: Type.String(),
      model: Type.Union([Type.String(), Type.Null()]),
      version: Type.Union([Type.String(), Type.Null()]),
      ...Object.fromEntries(FIGURE_NAMES.map((n) => [n, FigureSchema])),
    }),
  ),
})
const FiguresQuery = Type.Object(
  {
    ...LabelQuery,
    window: Type.Optional(
      Type.String({ maxLength: 16, description: 'window ending now: 1m, 5m (default), 1h…' }),
    ),
  },
  { additionalProperties: false },
)

const DEFAULT_WINDOW_MS = 5 * 60_000
const MAX_WINDOW_MS = 7 * 24 * 3600_000

/** The services (and, when asked, models/versions) that reported since `sinceMs`. */
async function activeServices(
  app: FastifyInstance,
  sinceMs: number,
  q: { service?: string; model?: string; version?: string },
) {
  const out = new Map<string, { service: string; model?: string; version?: string }>()
  for (const s of await app.store.services()) {
    if (s.lastSeenMs < sinceMs) continue
    if (q.service && s.service !== q.service) continue
    if (q.model && s.model !== q.model) continue
    if (q.version && s.version !== q.version) continue
    const sel = {
      service: s.service,
      ...(q.model ? { model: q.model } : {}),
      ...(q.version ? { version: q.version } : {}),
    }
    out.set(JSON.stringify(sel), sel)
  }
  return [...out.values()].sort((a, b) => a.service.localeCompare(b.service))
}

/**
 * `GET /api/v1/figures` (read scope): per service over a window ending now, goodput next to throughput, tokens per
 * second in and out, cost per million requests and per million output tokens, and energy per output token, each
 * with the inputs it was computed from (docs/signals.md). The same figures, over the last 5 minutes, go to
 * `/metrics` as `tailguard_service_*` gauges.
 *
 * @example
 * ```ts
 * const app = await buildCollector(opts, { store, plugins: [createFigureRoutes({ pricing: { gpuHourUsd: 4 }, latencySlos: () => [] })] })
 * ```
 */
export function createFigureRoutes(
  options: FigureRoutesOptions,
): (fastify: FastifyInstance) => Promise<void> {
  const pricing = resolvePricing(options.pricing)
  return async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
    const compute = async (
      q: { service?: string; model?: string; version?: string },
      windowMs: number,
      aligned: boolean,
    ): Promise<{ range: { fromMs: number; toMs: number }; figures: ServiceFigures[] }> => {
      const now = app.clock()
      const polled = { fromMs: now - windowMs, toMs: now }
      // The route's window ends at the last whole 10 s (as the chart routes' relative ranges do); /metrics' at now.
      const range = aligned
        ? alignedRange(polled, {}, resolveStepMs(undefined, polled, app.store.rollupStepsMs))
        : polled
      const figures: ServiceFigures[] = []
      for (const sel of await activeServices(app, range.fromMs, q))
        figures.push(await serviceFigures(app.store, sel, range, pricing, options.latencySlos(), now))
      return { range, figures }
    }

    app.get(
      '/figures',
      {
        config: { scope: 'read' },
        schema: {
          summary:
            'Live figures per service: goodput, tokens/s, cost per million requests and output tokens, J per token',
          querystring: FiguresQuery,
          response: { 200: FiguresResponse },
        },
      },
      async (req) => {
        const q = req.query
        const windowMs = q.window === undefined ? DEFAULT_WINDOW_MS : parseDurationMs(q.window)
        if (windowMs === undefined || windowMs < 10_000 || windowMs > MAX_WINDOW_MS)
          throw new BadRequest(`window: expected a duration from 10s to 7d like 5m, got '${q.window}'`)
        const { range, figures } = await compute(q, windowMs, true)
        return {
          from: isoTime(range.fromMs),
          to: isoTime(range.toMs),
          windowSeconds: windowMs / 1000,
          services: figures.map((f) => ({ ...f })),
        }
      },
    )

    const registry = app.promRegistry
    // One /metrics call collects every gauge at once; they share one computation of the figures.
    let refreshing: Promise<void> | null = null
    const refresh = (): Promise<void> =>
      (refreshing ??= (async () => {
        for (const g of Object.values(gauges)) g.reset()
        const { figures } = await compute({}, DEFAULT_WINDOW_MS, false)
        for (const f of figures) {
          const service = f.service
          const set = (g: Gauge<'service'>, v: number | null) => {
            if (v !== null) g.set({ service }, v)
          }
          set(gauges.goodput, f.goodput.value)
          set(gauges.costRequests, f.costPerMillionRequests.value)
          set(gauges.costTokens, f.costPerMillionOutputTokens.value)
          set(gauges.energy, f.energyPerOutputToken.value)
          if (f.inputTokensPerSecond.value !== null)
            gauges.tokens.set({ service, direction: 'input' }, f.inputTokensPerSecond.value)
          if (f.outputTokensPerSecond.value !== null)
            gauges.tokens.set({ service, direction: 'output' }, f.outputTokensPerSecond.value)
        }
      })().finally(() => setTimeout(() => (refreshing = null), 0)))
    const gauge = (name: string, help: string) =>
      new Gauge({ name, help, labelNames: ['service'] as const, registers: [registry], collect: refresh })
    const gauges = {
      goodput: gauge(
        PROM_SERVICE_GOODPUT,
        'Requests per second that met the service’s latency SLOs, last 5 minutes',
      ),
      tokens: new Gauge({
        name: PROM_SERVICE_TOKENS,
        help: 'Tokens per second, by direction, last 5 minutes',
        labelNames: ['service', 'direction'] as const,
        registers: [registry],
        collect: refresh,
      }),
      costRequests: gauge(
        PROM_SERVICE_COST_PER_MILLION_REQUESTS,
        'USD per million requests from the GPUs the service holds, last 5 minutes',
      ),
      costTokens: gauge(
        PROM_SERVICE_COST_PER_MILLION_TOKENS,
        'USD per million output tokens from the GPUs the service holds, last 5 minutes',
      ),
      energy: gauge(PROM_SERVICE_ENERGY_PER_TOKEN, 'GPU energy per output token (J), last 5 minutes'),
    }
  }
}

import type { FastifyPluginAsync } from 'fastify'
import { Gauge, collectDefaultMetrics } from 'prom-client'
import { PROM_SERVICE_LATENCY, PROM_SERVICE_THROUGHPUT } from '../semconv.js'

const WINDOW_MS = 60_000
const QUANTILES = [0.5, 0.9, 0.99, 0.999]

/**
 * `/metrics` (read scope unless configured public): the collector's own health (process, reports,
 * ingest time) and, per service and model, rolling 1-minute latency quantiles and throughput.
 */
export const metricsRoutes: FastifyPluginAsync = async (app) => {
  const registry = app.promRegistry
  collectDefaultMetrics({ register: registry, prefix: 'tailguard_collector_' })
  const store = app.store
  const clock = app.clock

  const throughput = new Gauge({
    name: PROM_SERVICE_THROUGHPUT,
    help: 'Requests per second over the last minute, by status',
    labelNames: ['service', 'model', 'status'] as const,
    registers: [registry],
  })
  new Gauge({
    name: PROM_SERVICE_LATENCY,
    help: 'End-to-end request latency quantiles over the last minute, from merged HDR histograms (seconds)',
    labelNames: ['service', 'model', 'phase', 'quantile'] as const,
    registers: [registry],
    async collect() {
      this.reset()
      throughput.reset()
      const now = clock()
      const range = { fromMs: now - WINDOW_MS, toMs: now }
      const pairs = new Map<string, { service: string; model: string }>()
      for (const s of await store.services()) {
        if (s.lastSeenMs < range.fromMs) continue
        pairs.set(`${s.service}\u0000${s.model}`, { service: s.service, model: s.model })
      }
      for (const { service, model } of pairs.values()) {
        const selector = { service, model }
        const [hs, counts] = await Promise.all([
          store.histograms(selector, range, ['total']),
          store.counts(selector, range),
        ])
        const h = hs.get('total')
        if (h && h.totalCount > 0)
          for (const q of QUANTILES)
            this.set(
              { service, model, phase: 'total', quantile: String(q) },
              h.getValueAtPercentile(q * 100) / 1e6,
            )
        for (const status of ['ok', 'error', 'shed'] as const)
          throughput.set({ service, model, status }, counts[status] / (WINDOW_MS / 1000))
      }
    },
  })

  app.get('/metrics', { config: { scope: 'read' }, schema: { hide: true } }, async (_req, reply) => {
    const body = await registry.metrics()
    return reply.header('content-type', registry.contentType).send(body)
  })
}

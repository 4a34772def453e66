import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Counter, Histogram as PromHistogram } from 'prom-client'
import { IntervalReportSchema, ReportAckSchema } from '../report/index.js'
import { strictBodyCompiler } from '../report/validate.js'
import { BadRequest, ReportUnprocessable, StoreUnavailable, TailguardError } from '../errors.js'
import { isStoreUnavailable } from '../store/failure.js'
import { PROM_INGEST_DURATION, PROM_REPORTS_INGESTED } from '../semconv.js'

const MAX_FUTURE_MS = 10 * 60_000

/**
 * `POST /api/v1/reports` (agent scope): validates an interval report strictly (no coercion, finite numbers,
 * safe integers, well-formed Unicode) and stores it durably before it answers. A retry of a stored report
 * answers `duplicate` and counts nothing twice. A bad report gets a final 4xx (400, 413, or 422 when the
 * database refused its data); 503 means only that the database is unavailable, so agents retry just that.
 */
export const reportRoutes: FastifyPluginAsync<{ bodyLimit: number }> = async (fastify, opts) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const reports = new Counter({
    name: PROM_REPORTS_INGESTED,
    help: 'Interval reports received, by outcome',
    labelNames: ['outcome'] as const,
    registers: [app.promRegistry],
  })
  const ingestSeconds = new PromHistogram({
    name: PROM_INGEST_DURATION,
    help: 'Time to store one report durably',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [app.promRegistry],
  })

  app.post(
    '/reports',
    {
      bodyLimit: opts.bodyLimit,
      config: { scope: 'agent' },
      validatorCompiler: strictBodyCompiler,
      schema: {
        summary: 'Store one interval report from an agent',
        body: IntervalReportSchema,
        response: { 200: ReportAckSchema },
      },
    },
    async (req) => {
      const r = req.body
      const now = app.clock()
      if (r.intervalEndMs < r.intervalStartMs)
        throw new BadRequest(
          `intervalEndMs (${r.intervalEndMs}) is before intervalStartMs (${r.intervalStartMs})`,
        )
      if (r.intervalStartMs > now + MAX_FUTURE_MS)
        throw new BadRequest(
          `intervalStartMs ${r.intervalStartMs} is more than 10 minutes ahead of the collector's clock; check the agent's clock`,
        )
      const stop = ingestSeconds.startTimer()
      try {
        const outcome = await app.store.ingest(r, now)
        reports.inc({ outcome: outcome.kind })
        return { status: outcome.kind, seq: r.seq }
      } catch (err) {
        if (err instanceof TailguardError) {
          reports.inc({ outcome: 'rejected' })
          throw err
        }
        // Only a database that cannot take writes is worth a retry; anything else would fail again.
        if (isStoreUnavailable(err) || !(await app.store.ping().catch(() => false))) {
          reports.inc({ outcome: 'store_error' })
          req.log.error({ err }, 'storing a report failed: the store is unavailable')
          throw new StoreUnavailable('the store could not save the report; retry later')
        }
        reports.inc({ outcome: 'unprocessable' })
        req.log.error(
          { err, agent: r.agent.id, seq: r.seq },
          'storing a report failed though the store answers: refused as unprocessable',
        )
        throw new ReportUnprocessable(
          `the store refused this report (${(err as Error).message?.slice(0, 200) ?? 'unknown error'}); it will not be accepted on retry`,
        )
      } finally {
        stop()
      }
    },
  )
}

import { errorCodes } from 'fastify'
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Counter, Histogram as PromHistogram } from 'prom-client'
import { IntervalReportSchema, ReportAckSchema } from '../report/index.js'
import type { IngestPool } from '../ingest/pool.js'
import type { BodyProblem } from '../ingest/body.js'
import { BadRequest, ReportUnprocessable, StoreUnavailable, TailguardError } from '../errors.js'
import { isStoreUnavailable } from '../store/failure.js'
import { PROM_INGEST_DURATION, PROM_REPORTS_INGESTED } from '../semconv.js'

/**
 * `POST /api/v1/reports` (agent scope): validates an interval report strictly (no coercion, finite numbers,
 * safe integers, well-formed Unicode) and stores it durably before it answers. A retry of a stored report
 * answers `duplicate` and counts nothing twice. A bad report gets a final 4xx (400, 413, or 422 when the
 * database refused its data); 503 means only that the database is unavailable, so agents retry just that.
 * The body is parsed, checked and turned into rows by {@link prepareBody}: on an ingest worker thread when it is
 * large ({@link IngestPool}), else here.
 */
export const reportRoutes: FastifyPluginAsync<{ bodyLimit: number; pool: IngestPool }> = async (
  fastify,
  opts,
) => {
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
  // The body arrives as bytes (within the route's limit) and is parsed where it is prepared.
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
  const finestMs = app.store.finestStepMs

  app.post(
    '/reports',
    {
      bodyLimit: opts.bodyLimit,
      config: { scope: 'agent' },
      // The schema documents the body (OpenAPI); prepareBody checks it, with the same strict validator.
      validatorCompiler: () => () => true,
      schema: {
        summary: 'Store one interval report from an agent',
        body: IntervalReportSchema,
        response: { 200: ReportAckSchema },
      },
    },
    async (req) => {
      const stop = ingestSeconds.startTimer()
      try {
        const body = await opts.pool.prepare(req.body as unknown as Buffer, app.clock(), finestMs)
        if (!body.ok) {
          reports.inc({ outcome: 'rejected' })
          throw problemError(body.problem)
        }
        try {
          const outcome = await app.store.ingestPrepared(body.prepared)
          reports.inc({ outcome: outcome.kind })
          return { status: outcome.kind, seq: body.seq }
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
            { err, agent: body.agentId, seq: body.seq },
            'storing a report failed though the store answers: refused as unprocessable',
          )
          throw new ReportUnprocessable(
            `the store refused this report (${(err as Error).message?.slice(0, 200) ?? 'unknown error'}); it will not be accepted on retry`,
          )
        }
      } finally {
        stop()
      }
    },
  )
}

/** The error a body problem is answered with: fastify's own for a body that is not JSON, else 400 naming the field. */
function problemError(problem: BodyProblem): Error {
  switch (problem.kind) {
    case 'empty-json':
      return new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY()
    case 'invalid-json':
      return new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY()
    case 'bad-request':
      return new BadRequest(problem.message)
  }
}

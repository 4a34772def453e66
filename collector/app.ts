import { existsSync } from 'node:fs'
import Fastify, { LogController } from 'fastify'
import type { FastifyBaseLogger, FastifyError, FastifyInstance } from 'fastify'
import fastifyStatic from '@fastify/static'
import fastifySwagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Registry } from 'prom-client'
import { createTokenAuth } from './auth.js'
import { registerEtags } from './etag.js'
import type { Scope, TokenEntry } from './auth.js'
import { BadRequest, TailguardError } from './errors.js'
import { DEFAULT_SERVER_TIMEOUTS, serverTimeoutOptions } from './http-limits.js'
import { CONFIG_DEFAULTS } from './config/index.js'
import { IngestPool } from './ingest/pool.js'
import type { ServerTimeouts } from './http-limits.js'
import type { Store } from './store/types.js'
import { reportRoutes } from './routes/reports.js'
import { queryRoutes } from './routes/query.js'
import { heatmapRoutes } from './routes/heatmap.js'
import { gpuRoutes } from './routes/gpus.js'
import { signalRoutes } from './routes/signals.js'
import { requestRoutes } from './routes/requests.js'
import { createFigureRoutes } from './routes/figures.js'
import { createFleetRoutes } from './routes/fleet.js'
import type { FigureRoutesOptions } from './routes/figures.js'
import { healthRoutes } from './routes/health.js'
import { metricsRoutes } from './routes/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
    clock: () => number
    promRegistry: Registry
  }
  interface FastifyContextConfig {
    /** The token scope a route needs; routes without one are public (health probes, dashboard files). */
    scope?: Scope
  }
}

/** Options of {@link buildCollector}. Defaults live in COLLECTOR_DEFAULTS (collector/config). */
export interface CollectorAppOptions {
  readonly tokens: readonly TokenEntry[]
  /** Largest accepted report body, bytes. */
  readonly reportBodyLimitBytes: number
  /** Largest accepted body on any other route, bytes. */
  readonly bodyLimitBytes: number
  /** Folder of the built dashboard (dist/dashboard); not served when absent. */
  readonly dashboardDir?: string | null
  /** When true, /metrics needs no token (for scrapers that cannot send one). */
  readonly metricsPublic?: boolean
  /** Slow-client timeouts of the listener (default {@link DEFAULT_SERVER_TIMEOUTS}). */
  readonly timeouts?: ServerTimeouts
  /** Ingest worker threads that parse, check and prepare large report bodies (default 0: all in place). */
  readonly ingestWorkers?: number
  /** Report bodies of at least this many bytes go to an ingest worker (default: the config's). */
  readonly ingestWorkerMinBytes?: number
}

export interface CollectorDeps {
  readonly store: Store
  /** Ingest workers to use instead of the ones `ingestWorkers` starts (tests: the compiled worker); closed with the app. */
  readonly ingestPool?: IngestPool
  readonly clock?: () => number
  /** A pino-compatible logger; silent when left out. */
  readonly logger?: FastifyBaseLogger
  /** GPU prices and latency SLOs for the live figures (`GET /api/v1/figures`); default: none of either. */
  readonly figures?: FigureRoutesOptions
  /** Called by the app's route plugins that other components add (SLO engine, controller, GPU routes). */
  readonly plugins?: ReadonlyArray<(app: FastifyInstance) => Promise<void>>
}

/**
 * Builds the collector's HTTP app without listening (STYLE.md section 3): `/api/v1/*` (reports, queries,
 * OpenAPI), `/metrics`, `/healthz`, `/readyz` and the dashboard. Only `main.ts`/the CLI calls `listen`.
 *
 * @example
 * ```ts
 * const app = await buildCollector({ tokens, reportBodyLimitBytes: 8 << 20, bodyLimitBytes: 1 << 20 }, { store })
 * const res = await app.inject({ method: 'GET', url: '/api/v1/latency?service=chat', headers: { authorization: 'Bearer …' } })
 * ```
 */
export async function buildCollector(
  opts: CollectorAppOptions,
  deps: CollectorDeps,
): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: opts.bodyLimitBytes,
    logController: new LogController({ disableRequestLogging: true }),
    ajv: { customOptions: { allErrors: false, coerceTypes: 'array', removeAdditional: false } },
    schemaErrorFormatter: formatSchemaErrors,
    ...serverTimeoutOptions(opts.timeouts ?? DEFAULT_SERVER_TIMEOUTS),
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('store', deps.store)
  const ingestPool =
    deps.ingestPool ??
    new IngestPool({
      threads: opts.ingestWorkers ?? 0,
      minBytes: opts.ingestWorkerMinBytes ?? CONFIG_DEFAULTS.collector.ingestWorkerMinBytes,
    })
  app.addHook('onClose', () => ingestPool.close())
  app.decorate('clock', deps.clock ?? Date.now)
  app.decorate('promRegistry', new Registry())

  const auth = createTokenAuth(opts.tokens)
  app.addHook('onRequest', async (req, reply) => {
    let scope = req.routeOptions.config?.scope
    if (req.url === '/metrics' && opts.metricsPublic) scope = undefined
    if (!scope) return
    const result = auth.check(req.headers.authorization, scope)
    switch (result.kind) {
      case 'ok':
        return
      case 'missing':
        await reply.code(401).header('www-authenticate', 'Bearer').send({
          code: 'TG_ERR_UNAUTHORIZED',
          statusCode: 401,
          message: 'missing bearer token (Authorization: Bearer <token>)',
        })
        return reply
      case 'invalid':
        await reply
          .code(401)
          .header('www-authenticate', 'Bearer error="invalid_token"')
          .send({ code: 'TG_ERR_UNAUTHORIZED', statusCode: 401, message: 'invalid bearer token' })
        return reply
      case 'forbidden':
        await reply.code(403).send({
          code: 'TG_ERR_FORBIDDEN',
          statusCode: 403,
          message: `this route needs a token with ${scope} scope; the token given has ${result.have} scope`,
        })
        return reply
    }
  })

  // Unknown query parameters are refused by name (all of them), before the schema's first-error message; a NUL
  // in any parameter is refused too (PostgreSQL text cannot hold one, so it must not reach the store).
  app.addHook('preValidation', async (req) => {
    const query = req.query as Record<string, unknown> | undefined
    if (!query || typeof query !== 'object') return
    for (const [k, v] of Object.entries(query))
      if ((typeof v === 'string' && v.includes('\u0000')) || k.includes('\u0000'))
        throw new BadRequest(
          `query parameter '${k.split('\u0000').join('\\0').slice(0, 64)}' contains a NUL character`,
        )
    const schema = req.routeOptions.schema?.querystring as
      { properties?: Record<string, unknown>; additionalProperties?: unknown } | undefined
    if (!schema?.properties || schema.additionalProperties !== false) return
    const unknown = Object.keys(query).filter((k) => !Object.hasOwn(schema.properties!, k))
    if (unknown.length > 0)
      throw new BadRequest(
        `unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown
          .slice(0, 10)
          .map((k) => `'${k.length > 64 ? k.slice(0, 64) + '…' : k}'`)
          .join(', ')}; this route takes ${Object.keys(schema.properties).join(', ')}`,
      )
  })

  app.setErrorHandler((err: FastifyError | TailguardError, req, reply) => {
    if (err instanceof TailguardError) {
      return reply
        .code(err.statusCode)
        .send({ code: err.code, statusCode: err.statusCode, message: err.message })
    }
    const status = err.statusCode ?? 500
    if (err.validation) {
      return reply.code(400).send({ code: 'TG_ERR_BAD_REQUEST', statusCode: 400, message: err.message })
    }
    if (status >= 400 && status < 500) {
      const code =
        status === 413
          ? 'TG_ERR_PAYLOAD_TOO_LARGE'
          : status === 415
            ? 'TG_ERR_UNSUPPORTED_MEDIA_TYPE'
            : status === 404
              ? 'TG_ERR_NOT_FOUND'
              : 'TG_ERR_BAD_REQUEST'
      return reply.code(status).send({ code, statusCode: status, message: err.message })
    }
    req.log.error({ err }, 'request failed')
    return reply
      .code(500)
      .send({ code: 'TG_ERR_INTERNAL', statusCode: 500, message: 'internal error (see the collector log)' })
  })

  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({
      code: 'TG_ERR_NOT_FOUND',
      statusCode: 404,
      message: `no route ${req.method} ${req.url.split('?')[0]}`,
    }),
  )

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'tailguard API', version: '1' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  })

  await app.register(healthRoutes)
  await app.register(metricsRoutes)
  await app.register(
    async (api) => {
      await registerEtags(api)
      await api.register(reportRoutes, { bodyLimit: opts.reportBodyLimitBytes, pool: ingestPool })
      await api.register(queryRoutes)
      await api.register(gpuRoutes)
      await api.register(signalRoutes)
      await api.register(requestRoutes)
      await api.register(heatmapRoutes)
      await api.register(createFigureRoutes(deps.figures ?? { pricing: {}, latencySlos: () => [] }))
      await api.register(
        createFleetRoutes({
          latencySlos: deps.figures?.latencySlos ?? (() => []),
          pricing: deps.figures?.pricing ?? {},
        }),
      )
      for (const plugin of deps.plugins ?? []) await api.register(plugin)
      // Like every API route, the OpenAPI document needs a token (read scope): docs/limits.md.
      api.get('/openapi.json', { config: { scope: 'read' }, schema: { hide: true } }, async () =>
        app.swagger(),
      )
    },
    { prefix: '/api/v1' },
  )

  if (opts.dashboardDir && existsSync(opts.dashboardDir)) {
    await app.register(fastifyStatic, { root: opts.dashboardDir, prefix: '/', index: ['index.html'] })
  }
  return app
}

/**
 * Validation errors name the part and field at fault: `querystring/from: must be string`,
 * `body/series/0/requests/ok: must be integer`, `body: unknown field 'extra'`.
 */
function formatSchemaErrors(
  errors: ReadonlyArray<{ instancePath?: string; message?: string; keyword?: string; params?: unknown }>,
  dataVar: string,
): Error {
  const e = errors[0]
  if (!e) return new Error(`${dataVar}: invalid`)
  const path = `${dataVar}${e.instancePath ?? ''}`
  const params = (e.params ?? {}) as { additionalProperty?: string; missingProperty?: string }
  if (e.keyword === 'additionalProperties' && params.additionalProperty !== undefined)
    return new Error(`${path}: unknown field '${params.additionalProperty}'`)
  if (e.keyword === 'required' && params.missingProperty !== undefined)
    return new Error(`${path}: missing field '${params.missingProperty}'`)
  return new Error(`${path}: ${e.message ?? 'invalid'}`)
}

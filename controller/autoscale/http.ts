import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import {
  createTokenAuth,
  DEFAULT_SERVER_TIMEOUTS,
  serverTimeoutOptions,
  TailguardError,
} from '../../collector/index.js'
import type { TokenEntry } from '../../collector/index.js'
import type { AutoscaleSource } from './recommendation.js'
import { createAutoscaleRoutes } from './routes.js'

/** The default port of `tailguard controller`'s HTTP API (`--http-port`): the JSON autoscale API and /healthz. */
export const DEFAULT_CONTROLLER_HTTP_PORT = 7073

/**
 * Builds (without listening) the controller's small HTTP API: `GET /api/v1/autoscale/{service}` (read scope,
 * for KEDA's metrics-api scaler or any autoscaler) and `GET /healthz`. Errors answer `{ code, message,
 * statusCode }` as the collector's do.
 *
 * @example
 * ```ts
 * const app = await buildAutoscaleHttp({ source: board, tokens: [{ token: readToken, scope: 'read' }] })
 * await app.listen({ host: '0.0.0.0', port: 7073 })
 * ```
 */
export async function buildAutoscaleHttp(opts: {
  readonly source: AutoscaleSource
  readonly tokens: readonly TokenEntry[]
  readonly clock?: () => number
}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    bodyLimit: 1024,
    ...serverTimeoutOptions(DEFAULT_SERVER_TIMEOUTS),
  }) as unknown as FastifyInstance
  const auth = createTokenAuth(opts.tokens)
  app.addHook('onRequest', async (req, reply) => {
    if (req.url === '/healthz') return
    const r = auth.check(req.headers.authorization, 'read')
    if (r.kind === 'ok') return
    const forbidden = r.kind === 'forbidden'
    await reply.code(forbidden ? 403 : 401).send({
      code: forbidden ? 'TG_ERR_FORBIDDEN' : 'TG_ERR_UNAUTHORIZED',
      statusCode: forbidden ? 403 : 401,
      message: forbidden
        ? `this route needs a token with read scope; the token given has ${r.have} scope`
        : r.kind === 'missing'
          ? 'missing bearer token (Authorization: Bearer …)'
          : 'invalid bearer token',
    })
    return reply
  })
  app.setErrorHandler((err: Error & { statusCode?: number; validation?: unknown }, _req, reply) => {
    if (err instanceof TailguardError)
      return reply
        .code(err.statusCode)
        .send({ code: err.code, statusCode: err.statusCode, message: err.message })
    const status = err.validation ? 400 : (err.statusCode ?? 500)
    if (status < 500)
      return reply.code(status).send({ code: 'TG_ERR_BAD_REQUEST', statusCode: status, message: err.message })
    return reply.code(500).send({ code: 'TG_ERR_INTERNAL', statusCode: 500, message: 'internal error' })
  })
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({
      code: 'TG_ERR_NOT_FOUND',
      statusCode: 404,
      message: `no route ${req.method} ${req.url.split('?')[0]}`,
    }),
  )
  app.get('/healthz', async () => ({ status: 'ok' }))
  await app.register(createAutoscaleRoutes(opts.source, opts.clock), { prefix: '/api/v1' })
  return app
}

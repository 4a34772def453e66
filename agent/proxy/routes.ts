import { createHash, timingSafeEqual } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import type { Proxy } from './proxy.js'
import { SetpointsPutSchema } from './setpoints.js'
import type { SetpointsPut } from './setpoints.js'
import { parseUpstreamUrl } from './upstreams.js'
import type { UpstreamState } from './upstreams.js'

/** The body of `PUT /v1/upstreams`: the new set (a URL left out drains and goes). */
export const UpstreamsPutSchema = Type.Object(
  {
    upstreams: Type.Array(
      Type.Object(
        {
          url: Type.String({ minLength: 1, maxLength: 2048 }),
          state: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('draining')])),
        },
        { additionalProperties: false },
      ),
      { maxItems: 256 },
    ),
  },
  { additionalProperties: false },
)

/**
 * Options of {@link setpointsRoutes}.
 *
 * @example
 * ```ts
 * await app.register(setpointsRoutes, { proxy, adminToken: process.env.TAILGUARD_AGENT_ADMIN_TOKEN ?? null })
 * ```
 */
export interface SetpointsRoutesOptions {
  /** The proxy, or only setpoints (a group of proxies, as the demo's): then `/v1/upstreams` is not served. */
  readonly proxy: Pick<Proxy, 'setpoints'> & { readonly upstreams?: Proxy['upstreams'] }
  /** Admin bearer token; null refuses every call (the API is never open). */
  readonly adminToken: string | null
  readonly bodyLimitBytes?: number
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest()

function fail(reply: FastifyReply, statusCode: number, code: string, message: string) {
  return reply.code(statusCode).send({ code, statusCode, message })
}

function firstProblem(schema: TSchema, body: unknown): string | null {
  for (const e of Value.Errors(schema, body)) {
    const field = e.path.split('/').filter(Boolean).join('.') || '(body)'
    return `${field}: ${e.message}${e.value !== undefined && typeof e.value !== 'object' ? ` (got ${JSON.stringify(e.value)})` : ''}`
  }
  return null
}

/**
 * The agent setpoints API (contract 2), on the agent's HTTP port, admin bearer token required:
 * `GET|PUT /v1/setpoints` (admission caps per class, with fencing) and `GET|PUT /v1/upstreams` (the
 * proxy's upstream set, with draining). Errors are `{ code, message, statusCode }`.
 *
 * @example
 * ```ts
 * await app.register(setpointsRoutes, { proxy, adminToken })
 * // curl -X PUT -H "authorization: Bearer $T" localhost:4318/v1/setpoints -d '{"admission":[…],"fencingToken":3}'
 * ```
 */
export const setpointsRoutes: FastifyPluginAsync<SetpointsRoutesOptions> = async (app, opts) => {
  const want = opts.adminToken ? digest(opts.adminToken) : null
  const bodyLimit = opts.bodyLimitBytes ?? 64 * 1024
  const proxy = opts.proxy

  app.setErrorHandler((err: { statusCode?: number; code?: string; message?: string }, _req, reply) => {
    const status =
      typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500
        ? err.statusCode
        : 500
    if (status === 413)
      return fail(reply, 413, 'TG_ERR_PAYLOAD_TOO_LARGE', `request body is larger than ${bodyLimit} bytes`)
    if (status === 415) return fail(reply, 415, 'TG_ERR_UNSUPPORTED_MEDIA_TYPE', 'send application/json')
    if (status < 500)
      return fail(reply, status, 'TG_ERR_BAD_REQUEST', `invalid request: ${err.message ?? 'bad input'}`)
    return fail(reply, 500, 'TG_ERR_INTERNAL', 'internal error')
  })

  app.addHook('onRequest', async (req, reply) => {
    if (!want)
      return fail(
        reply,
        401,
        'TG_ERR_UNAUTHORIZED',
        'the setpoints API needs an admin token: set TAILGUARD_AGENT_ADMIN_TOKEN (agent.adminToken)',
      )
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')
    if (!m || !timingSafeEqual(digest(m[1]!), want))
      return fail(
        reply.header('www-authenticate', 'Bearer'),
        401,
        'TG_ERR_UNAUTHORIZED',
        'missing or invalid admin bearer token',
      )
    return undefined
  })

  app.get('/v1/setpoints', async () => proxy.setpoints.view())

  app.put('/v1/setpoints', { bodyLimit }, async (req, reply) => {
    const problem = firstProblem(SetpointsPutSchema, req.body)
    if (problem) return fail(reply, 400, 'TG_ERR_BAD_REQUEST', problem)
    const out = proxy.setpoints.put(req.body as SetpointsPut)
    if (out.kind === 'fenced')
      return fail(
        reply,
        409,
        'TG_ERR_SETPOINTS_FENCED',
        `fencingToken ${(req.body as SetpointsPut).fencingToken} is lower than ${out.highest}, the highest accepted: a newer controller owns these setpoints`,
      )
    if (out.kind === 'invalid') return fail(reply, 400, 'TG_ERR_BAD_REQUEST', out.message)
    return out.view
  })

  const upstreams = proxy.upstreams
  if (!upstreams) return
  app.get('/v1/upstreams', async () => ({ upstreams: upstreams.view() }))

  app.put('/v1/upstreams', { bodyLimit }, async (req, reply) => {
    const problem = firstProblem(UpstreamsPutSchema, req.body)
    if (problem) return fail(reply, 400, 'TG_ERR_BAD_REQUEST', problem)
    const specs = (req.body as { upstreams: { url: string; state?: UpstreamState }[] }).upstreams
    for (const [i, s] of specs.entries()) {
      try {
        parseUpstreamUrl(s.url)
      } catch (err) {
        return fail(reply, 400, 'TG_ERR_BAD_REQUEST', `upstreams.${i}.url: ${(err as Error).message}`)
      }
    }
    upstreams.replace(specs)
    return { upstreams: upstreams.view() }
  })
}

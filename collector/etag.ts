import fastifyEtag from '@fastify/etag'
import type { FastifyInstance } from 'fastify'

/**
 * True when an `If-None-Match` header value matches `etag` by RFC 9110's weak comparison (section 13.1.2): `*`, or
 * any entity tag of the comma-separated list that equals `etag` once `W/` is dropped from both.
 *
 * @example ifNoneMatchHits('"a", W/"b"', '"b"') // true
 * @example ifNoneMatchHits('"a"', '"b"') // false
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '')
  const want = opaque(etag)
  return header.split(',').some((tag) => tag.trim() === '*' || opaque(tag) === want)
}

/**
 * Gives the `GET` (and `HEAD`) answers of the plugin scope `api` an `ETag` (SHA-1 of the body, from
 * `@fastify/etag`), and answers a request whose `If-None-Match` matches with `304 Not Modified` and no body. Only
 * a 200 is ever turned into a 304, so authentication (the root's `onRequest` hook) always answers first: a request
 * with a missing, wrong or under-scoped token gets its 401/403 whatever `If-None-Match` it sends. Other methods and
 * error answers get no `ETag` at all. Register it before the routes of `api`.
 *
 * The plugin is registered with `replyWith304: false` because on its own it answers 304 to any method and any
 * status whose body hash matches (the 401 body included), and compares `If-None-Match` as one exact string.
 *
 * @example
 * ```ts
 * await app.register(async (api) => { await registerEtags(api); await api.register(queryRoutes) }, { prefix: '/api/v1' })
 * ```
 */
export async function registerEtags(api: FastifyInstance): Promise<void> {
  await api.register(fastifyEtag, { replyWith304: false })
  api.addHook('onSend', async (req, reply, payload) => {
    if (!reply.hasHeader('etag')) return payload
    if ((req.method !== 'GET' && req.method !== 'HEAD') || reply.statusCode !== 200) {
      reply.removeHeader('etag')
      return payload
    }
    if (!ifNoneMatchHits(req.headers['if-none-match'], String(reply.getHeader('etag')))) return payload
    reply.code(304)
    reply.removeHeader('content-length')
    return ''
  })
}

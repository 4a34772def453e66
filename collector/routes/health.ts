import type { FastifyPluginAsync } from 'fastify'

/** `/healthz` (the process runs) and `/readyz` (the store answers): public, for probes. */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const ok = await app.store.ping().catch(() => false)
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'store unavailable' })
  })
}

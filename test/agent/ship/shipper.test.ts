import { afterEach, describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { createRecorder, createShipper, openSpool } from '../../../agent/index.js'
import type { ShipperOptions } from '../../../agent/index.js'
import type { IntervalReport } from '../../../collector/index.js'

const labels = { service: 'chat', model: 'm', version: '1', replica: 'r0', node: 'n' }

/** A real HTTP endpoint standing in for the collector, whose failures the test controls. */
async function fakeCollector(behaviour: { fail: number; status?: number }) {
  const seen: IntervalReport[] = []
  const keys = new Set<string>()
  const app: FastifyInstance = Fastify({ bodyLimit: 16 << 20 })
  app.post('/api/v1/reports', async (req, reply) => {
    if (req.headers.authorization !== 'Bearer agent-token-123456')
      return reply.code(401).send({ message: 'no' })
    if (behaviour.fail > 0) {
      behaviour.fail--
      if (behaviour.status && behaviour.status >= 300 && behaviour.status < 400)
        return reply
          .code(behaviour.status)
          .header('location', 'https://collector.example/api/v1/reports')
          .send()
      if (behaviour.status) return reply.code(behaviour.status).send({ message: 'failing on purpose' })
      req.raw.socket.destroy()
      return reply
    }
    const r = req.body as IntervalReport
    const key = `${r.agent.instance}/${r.seq}`
    const duplicate = keys.has(key)
    keys.add(key)
    if (!duplicate) seen.push(r)
    return { status: duplicate ? 'duplicate' : 'stored', seq: r.seq }
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const addr = app.server.address() as { port: number }
  return { app, seen, url: `http://127.0.0.1:${addr.port}` }
}

const closers: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of closers.splice(0)) await c()
})

/** A fake collector with the given behaviour, and a shipper (manual flushes only) sending to it. */
async function setup(behaviour: { fail: number; status?: number }, extra: Partial<ShipperOptions> = {}) {
  const c = await fakeCollector(behaviour)
  closers.push(() => c.app.close())
  const recorder = createRecorder()
  const spool = openSpool({ dir: null, maxBytes: 1 << 20 })
  const shipper = createShipper({
    collectorUrl: c.url,
    token: 'agent-token-123456',
    agentId: 'a',
    node: 'n',
    intervalMs: 60_000,
    recorder,
    spool,
    ...extra,
  })
  return { c, recorder, spool, shipper }
}

describe('shipper', () => {
  it('numbers reports, sends them in order and empties the spool on acknowledgement', async () => {
    const { c, recorder, spool, shipper } = await setup({ fail: 0 })
    for (let i = 0; i < 3; i++) {
      recorder.recordRequest({ labels, status: 'ok', phasesUs: { total: 1000 + i } })
      await shipper.flush()
    }
    await shipper.flush() // nothing recorded: no empty report is sent
    expect(c.seen.map((r) => r.seq)).toEqual([1, 2, 3])
    expect(spool.size).toBe(0)
    expect(shipper.stats.acked).toBe(3)
  })

  it('keeps reports through failures (dropped connections and 503s) and delivers each exactly once', async () => {
    for (const behaviour of [{ fail: 3 }, { fail: 3, status: 503 }]) {
      const { c, recorder, spool, shipper } = await setup(behaviour, { backoff: { baseMs: 5, maxMs: 20 } })
      let total = 0
      for (let i = 0; i < 5; i++) {
        recorder.recordRequest({ labels, status: 'ok', phasesUs: { total: 500 } })
        total++
        await shipper.flush()
      }
      for (let i = 0; i < 50 && spool.size > 0; i++) {
        await new Promise((r) => setTimeout(r, 25))
        await shipper.flush()
      }
      expect(spool.size).toBe(0)
      expect(c.seen.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5])
      expect(c.seen.reduce((n, r) => n + r.series.reduce((m, s) => m + s.requests.ok, 0), 0)).toBe(total)
      expect(shipper.stats.failures).toBeGreaterThanOrEqual(1)
    }
  })

  it('drops a report the collector rejects as invalid instead of retrying it forever', async () => {
    const logs: string[] = []
    const { recorder, spool, shipper } = await setup(
      { fail: 1, status: 400 },
      { log: (_l, m) => logs.push(m) },
    )
    recorder.recordRequest({ labels, status: 'ok', phasesUs: { total: 500 } })
    await shipper.flush()
    expect(spool.size).toBe(0)
    expect(shipper.stats.rejected).toBe(1)
    expect(logs.join('\n')).toMatch(/rejected report seq 1 \(HTTP 400\)/)
  })

  it('keeps reports and says where a redirect points, since it does not follow one', async () => {
    const logs: string[] = []
    const { c, recorder, spool, shipper } = await setup(
      { fail: 1, status: 308 },
      { log: (_l, m) => logs.push(m), backoff: { baseMs: 60_000, maxMs: 60_000 } },
    )
    recorder.recordRequest({ labels, status: 'ok', phasesUs: { total: 500 } })
    await shipper.flush()
    expect(spool.size).toBe(1)
    expect(shipper.stats.deadLettered + shipper.stats.rejected).toBe(0)
    expect(shipper.stats.lastError).toBe(
      'HTTP 308 redirect to https://collector.example/api/v1/reports (redirects are not followed: use the final URL)',
    )
    expect(logs.join('\n')).toMatch(/sending to http:\/\/127\.0\.0\.1:\d+ failed \(HTTP 308 redirect/)
    await shipper.flush()
    expect(c.seen.map((r) => r.seq)).toEqual([1])
    expect(spool.size).toBe(0)
    await shipper.stop()
  })

  it('says so, and does not crash, when the spool cannot take the halves of a report split after a 413', async () => {
    const logs: string[] = []
    const c = await fakeCollector({ fail: 1, status: 413 })
    closers.push(() => c.app.close())
    const recorder = createRecorder()
    const inner = openSpool({ dir: null, maxBytes: 1 << 20 })
    let adds = 0
    // A spool whose disk fills after the first report: the split halves cannot be written.
    const spool: typeof inner = {
      add: (r) => (++adds > 1 ? Promise.reject(new Error('ENOSPC: no space left on device')) : inner.add(r)),
      pending: () => inner.pending(),
      remove: (k) => inner.remove(k),
      get bytes() {
        return inner.bytes
      },
      get size() {
        return inner.size
      },
    }
    const shipper = createShipper({
      collectorUrl: c.url,
      token: 'agent-token-123456',
      agentId: 'a',
      node: 'n',
      intervalMs: 50,
      recorder,
      spool,
      log: (_l, m) => logs.push(m),
    })
    recorder.recordRequest({ labels, status: 'ok', phasesUs: { total: 500 } })
    recorder.recordRequest({ labels: { ...labels, replica: 'r1' }, status: 'ok', phasesUs: { total: 500 } })
    shipper.start()
    await expect.poll(() => shipper.stats.lastError, { timeout: 5000 }).toMatch(/^spooling failed: ENOSPC/)
    await shipper.stop()
    expect(logs.join('\n')).toMatch(/spooling failed: ENOSPC: no space left on device/)
  })
})

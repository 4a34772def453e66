import { afterEach, describe, expect, it } from 'vitest'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Pool } from 'undici'
import { proxyTo, upstream } from './helpers.js'

const closers: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

function heapMb(): number {
  gc()
  gc()
  return process.memoryUsage().heapUsed / 2 ** 20
}

/** `n` requests, `concurrency` at a time, through one keep-alive pool; every one must be a 200. */
async function drive(pool: Pool, n: number, concurrency: number): Promise<void> {
  let next = 0
  let bad = 0
  const worker = async () => {
    while (next < n) {
      next++
      const r = await pool.request({
        path: '/v1/x',
        method: next % 2 ? 'GET' : 'POST',
        body: next % 2 ? null : '{"model":"m"}',
      })
      await r.body.dump()
      if (r.statusCode !== 200) bad++
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  expect(bad).toBe(0)
}

describe('proxy: soak', () => {
  it('serves 100k requests with no growth in open sockets or memory', async () => {
    const up = await upstream((req, res) => {
      req.resume()
      req.on('end', () => res.end('ok'))
    })
    closers.push(up.close)
    const p = await proxyTo([up.url], { connectionsPerUpstream: 16 })
    closers.push(() => p.proxy.close())
    const pool = new Pool(p.url, { connections: 16, pipelining: 1 })
    closers.push(() => pool.close())
    const upstreamSockets = () => new Promise<number>((r) => up.server.getConnections((_e, n) => r(n)))

    await drive(pool, 10_000, 16)
    p.recorder.drain()
    const heap0 = heapMb()
    const sockets0 = p.proxy.connections
    const upSockets0 = await upstreamSockets()

    await drive(pool, 100_000, 16)
    p.recorder.drain()
    const heap1 = heapMb()
    expect(p.proxy.connections).toBeLessThanOrEqual(Math.max(sockets0, 16))
    expect(await upstreamSockets()).toBeLessThanOrEqual(Math.max(upSockets0, 16))
    expect(p.proxy.admission.inFlight).toBe(0)
    expect(p.proxy.upstreams.view()[0]!.inFlight).toBe(0)
    // A leak of even 100 bytes per request would show as 10 MB here.
    expect(heap1 - heap0).toBeLessThan(5)
    expect(p.proxy.counts.ok).toBe(110_000)
  }, 600_000)
})

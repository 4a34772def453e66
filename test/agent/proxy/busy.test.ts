import { afterEach, describe, expect, it } from 'vitest'
import { createUpstreamSet } from '../../../agent/index.js'
import { proxyTo, upstream } from './helpers.js'

const POOL = {
  connections: 4,
  connectTimeoutMs: 1000,
  headersTimeoutMs: 5000,
  bodyTimeoutMs: 5000,
  drainGraceMs: 1000,
}

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0)) await c()
})

// The proxy counts its upstreams with at least one request in flight, so the policy can tell the batch a busy
// replica shares (requests in flight per busy replica) from the in-flight mean, which idle time lowers.
describe('the busy gauge: upstreams with a request in flight', () => {
  it('is folded over time as upstreams turn busy and idle, whatever their number of requests', async () => {
    let now = 0
    const set = createUpstreamSet(['http://127.0.0.1:1', 'http://127.0.0.1:2'], { ...POOL, clock: () => now })
    closers.push(() => set.close())
    const [a, b] = [set.pick()!, set.pick()!]
    expect(a).not.toBe(b)
    set.take(a)
    now = 10
    set.take(a) // a second request on a busy upstream: still one busy
    now = 20
    set.take(b)
    now = 60
    set.release(a)
    set.release(a)
    now = 80
    set.release(b)
    now = 100
    // 1 busy for 20 ms, 2 for 40, 1 for 20, none for 20: a mean of 1.2.
    expect(set.takeBusy()).toEqual({ min: 0, mean: 1.2, max: 2, last: 0 })
    now = 200
    expect(set.takeBusy()).toEqual({ min: 0, mean: 0, max: 0, last: 0 })
  })

  it("is in the proxy's signals", async () => {
    const up = await upstream((_req, res) => setTimeout(() => res.end('ok'), 30))
    closers.push(() => up.close())
    const p = await proxyTo([up.url])
    closers.push(() => p.proxy.close())
    p.proxy.takeSignals()
    await Promise.all(Array.from({ length: 4 }, () => fetch(p.url).then((r) => r.text())))
    const { signals } = p.proxy.takeSignals()
    expect(signals.gauges?.busy).toMatchObject({ min: 0, max: 1, last: 0 })
    expect(signals.gauges!.busy!.mean).toBeGreaterThan(0)
    expect(signals.gauges!.busy!.mean).toBeLessThanOrEqual(1)
  })
})

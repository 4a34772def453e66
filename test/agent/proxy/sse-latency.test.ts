import { afterEach, describe, expect, it } from 'vitest'
import { request } from 'node:http'
import type { ServerResponse } from 'node:http'
import { proxyTo, upstream } from './helpers.js'
import { nearestRank } from '../../helpers/samples.js'

const closers: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

describe('proxy: SSE first token', () => {
  // The target: the first token reaches the client ≤ 2 ms after the upstream sends it. Upstream,
  // proxy and client share this process (one clock); the upstream sends its first event 50 ms after the
  // headers, so the stream is open and idle when it goes. The median of 30 streams must be ≤ 2 ms (a
  // shared, loaded machine can stall any one of them); the worst is reported in the message.
  it('forwards the first event within 2 ms of the upstream sending it (median of 30 streams)', async () => {
    let pending: ((sentAt: number) => void) | null = null
    const up = await upstream((req, res: ServerResponse) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.flushHeaders()
      setTimeout(() => {
        const sentAt = performance.now()
        res.write('data: {"choices":[{"text":"first"}]}\n\n')
        pending?.(sentAt)
        setTimeout(() => res.end('data: [DONE]\n\n'), 5)
      }, 50)
    })
    closers.push(up.close)
    const p = await proxyTo([up.url])
    closers.push(() => p.proxy.close())
    const gaps: number[] = []
    for (let i = 0; i < 30; i++) {
      const gap = await new Promise<number>((resolve, reject) => {
        let sentAt = -1
        pending = (t) => (sentAt = t)
        const r = request(
          { host: '127.0.0.1', port: p.port, path: '/v1/completions', method: 'POST' },
          (res) => {
            let first = true
            res.on('data', (d: Buffer) => {
              if (first && d.toString().includes('first')) {
                first = false
                resolve(performance.now() - sentAt)
              }
            })
            res.on('error', reject)
          },
        )
        r.on('error', reject)
        r.end('{}')
      })
      gaps.push(gap)
    }
    gaps.sort((a, b) => a - b)
    const median = nearestRank(gaps, 0.5)
    expect(
      median,
      `gaps ms: median ${median.toFixed(3)}, worst ${gaps[gaps.length - 1]!.toFixed(3)}`,
    ).toBeLessThanOrEqual(2)
  })
})

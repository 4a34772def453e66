import { afterEach, describe, expect, it } from 'vitest'
import { request as httpRequest } from 'node:http'
import { decodeHistogram } from '../../../collector/index.js'
import { proxyTo, upstream } from './helpers.js'

const closers: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

async function setup(handler: Parameters<typeof upstream>[0], overrides = {}) {
  const up = await upstream(handler)
  closers.push(up.close)
  const p = await proxyTo([up.url], overrides)
  closers.push(() => p.proxy.close())
  return { up, ...p }
}

describe('proxy: forwarding', () => {
  it('forwards method, path, headers and body, streams the answer back, and records phases', async () => {
    const seen: { method?: string; url?: string; body?: string; traceparent?: string; rid?: string } = {}
    const { url, recorder } = await setup((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => (body += c))
      req.on('end', () => {
        Object.assign(seen, {
          method: req.method,
          url: req.url,
          body,
          traceparent: req.headers.traceparent,
          rid: req.headers['x-request-id'],
        })
        res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive' })
        res.end(JSON.stringify({ usage: { completion_tokens: 7 } }))
      })
    })
    const res = await fetch(`${url}/v1/completions?x=1`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
      body: JSON.stringify({ model: 'llama-3-8b', prompt: 'hi' }),
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ usage: { completion_tokens: 7 } })
    expect(res.headers.get('x-request-id')).toBe(seen.rid)
    expect(seen.method).toBe('POST')
    expect(seen.url).toBe('/v1/completions?x=1')
    expect(JSON.parse(seen.body!)).toEqual({ model: 'llama-3-8b', prompt: 'hi' })
    // Same trace, same flags, a new parent id (the proxy's span).
    expect(seen.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/)
    expect(seen.traceparent).not.toContain('00f067aa0ba902b7')
    const { series } = recorder.drain()
    expect(series).toHaveLength(1)
    const s = series[0]!
    expect(s.labels.model).toBe('llama-3-8b')
    expect(s.requests).toEqual({ ok: 1, error: 0, shed: 0 })
    expect(s.outputTokens).toBe(7)
    for (const m of ['queue', 'network', 'total', 'ttft'] as const) expect(s.histograms[m]).toBeTruthy()
  })

  it('creates a traceparent and a request id when the client sends none, and keeps a valid x-request-id', async () => {
    const tps: string[] = []
    const rids: string[] = []
    const { url } = await setup((req, res) => {
      tps.push(String(req.headers.traceparent))
      rids.push(String(req.headers['x-request-id']))
      res.end('ok')
    })
    await (await fetch(`${url}/a`)).text()
    await (
      await fetch(`${url}/a`, { headers: { 'x-request-id': 'client-id-1', traceparent: 'garbage' } })
    ).text()
    expect(tps[0]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    expect(tps[1]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    expect(rids[0]).toMatch(/^[0-9a-f]{12}-[0-9a-z]+$/)
    expect(rids[1]).toBe('client-id-1')
  })

  it('passes response headers on, repeated ones included, without hop-by-hop ones or those Connection names', async () => {
    const { url } = await setup((_req, res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2'])
      res.setHeader('x-model', 'm1')
      res.setHeader('x-hop', 'drop me')
      res.setHeader('connection', 'keep-alive, x-hop')
      res.setHeader('trailer', 'x-checksum')
      res.end('ok')
    })
    const raw = await new Promise<string[]>((resolve, reject) => {
      httpRequest(`${url}/h`, (res) => {
        res.resume()
        res.on('end', () => resolve(res.rawHeaders))
      })
        .on('error', reject)
        .end()
    })
    const pairs: Array<[string, string]> = []
    for (let i = 0; i < raw.length; i += 2) pairs.push([raw[i]!.toLowerCase(), raw[i + 1]!])
    const values = (k: string) => pairs.filter(([n]) => n === k).map(([, v]) => v)
    expect(values('set-cookie')).toEqual(['a=1', 'b=2'])
    expect(values('x-model')).toEqual(['m1'])
    expect(values('x-hop')).toEqual([])
    expect(values('trailer')).toEqual([])
    expect(values('x-request-id')).toHaveLength(1)
  })

  it('forwards SSE events as they arrive and measures ttft, tpot and tokens per event', async () => {
    const { url, recorder } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      let i = 0
      const t = setInterval(() => {
        if (i < 5) res.write(`data: {"text":"t${i++}"}\n\n`)
        else {
          res.end('data: [DONE]\n\n')
          clearInterval(t)
        }
      }, 40)
    })
    const res = await fetch(`${url}/v1/completions`, { method: 'POST', body: '{}' })
    const reader = res.body!.getReader()
    const arrivals: number[] = []
    let text = ''
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      arrivals.push(performance.now())
      text += Buffer.from(value).toString()
    }
    expect(text.match(/data:/g)).toHaveLength(6)
    // Streamed, not buffered: the events came spread over the ~200 ms the upstream took.
    expect(arrivals[arrivals.length - 1]! - arrivals[0]!).toBeGreaterThan(100)
    const s = recorder.drain().series[0]!
    expect(s.outputTokens).toBe(5)
    const tpot = decodeHistogram(s.histograms.tpot!)
    expect(tpot.totalCount).toBe(1)
    expect(tpot.maxValue / 1000).toBeGreaterThan(25)
    expect(tpot.maxValue / 1000).toBeLessThan(200)
  })

  it('answers 502 with a JSON error when the upstream is down, and counts it', async () => {
    const up = await upstream((_req, res) => res.end())
    await up.close()
    const p = await proxyTo([up.url])
    closers.push(() => p.proxy.close())
    const res = await fetch(`${p.url}/x`)
    expect(res.status).toBe(502)
    const body = (await res.json()) as { code: string; statusCode: number; message: string }
    expect(body.code).toBe('TG_ERR_UPSTREAM_UNAVAILABLE')
    expect(body.statusCode).toBe(502)
    expect(p.proxy.counts.upstream502).toBe(1)
    expect(p.recorder.drain().series[0]!.errorClasses).toEqual({ upstream_unavailable: 1 })
  })

  it('answers 504 when the upstream does not answer in time', async () => {
    const { url, proxy } = await setup(() => {}, { upstreamTimeoutMs: 200 })
    const res = await fetch(`${url}/slow`)
    expect(res.status).toBe(504)
    expect(((await res.json()) as { code: string }).code).toBe('TG_ERR_UPSTREAM_TIMEOUT')
    expect(proxy.counts.upstream504).toBe(1)
  })

  it('aborts the upstream request at once when the client disconnects', async () => {
    let upstreamClosedAt = 0
    const { port } = await setup((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: 1\n\n')
      res.on('close', () => (upstreamClosedAt = performance.now()))
      req.resume()
    })
    const closedAt = await new Promise<number>((resolve) => {
      const r = httpRequest({ host: '127.0.0.1', port, path: '/stream' }, (res) => {
        res.once('data', () => {
          const t = performance.now()
          r.destroy()
          resolve(t)
        })
      })
      r.end()
    })
    for (let i = 0; i < 100 && upstreamClosedAt === 0; i++) await new Promise((r) => setTimeout(r, 10))
    expect(upstreamClosedAt).toBeGreaterThan(0)
    expect(upstreamClosedAt - closedAt).toBeLessThan(500)
  })
})

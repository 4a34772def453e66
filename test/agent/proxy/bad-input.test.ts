import { afterEach, describe, expect, it } from 'vitest'
import { connect, createServer as createTcpServer } from 'node:net'
import type { Server as TcpServer, Socket } from 'node:net'
import { proxyTo, upstream } from './helpers.js'

const closers: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

/** Sends raw bytes (optionally in timed pieces) and collects everything until the proxy closes or `waitMs`. */
function raw(
  port: number,
  pieces: Array<string | Buffer | number>,
  waitMs = 5000,
): Promise<{ text: string; closed: boolean; ms: number }> {
  return new Promise((resolve) => {
    const t0 = performance.now()
    const s: Socket = connect(port, '127.0.0.1')
    let text = ''
    let done = false
    const finish = (closed: boolean) => {
      if (done) return
      done = true
      s.destroy()
      resolve({ text, closed, ms: performance.now() - t0 })
    }
    s.on('data', (d) => (text += d.toString('latin1')))
    s.on('close', () => finish(true))
    s.on('error', () => finish(true))
    setTimeout(() => finish(false), waitMs)
    s.once('connect', async () => {
      for (const p of pieces) {
        if (typeof p === 'number') await new Promise((r) => setTimeout(r, p))
        else if (!s.destroyed) s.write(p)
      }
    })
  })
}

async function okUpstream() {
  const up = await upstream((req, res) => {
    req.resume()
    req.on('end', () => res.end('ok'))
  })
  closers.push(up.close)
  return up
}

async function tcpUpstream(onConn: (s: Socket) => void): Promise<string> {
  const server: TcpServer = createTcpServer(onConn)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  closers.push(() => new Promise((r) => server.close(r)))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

const status = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1])

describe('proxy: bad input', () => {
  it('answers malformed HTTP with a JSON 400 and keeps serving', async () => {
    const up = await okUpstream()
    const p = await proxyTo([up.url])
    closers.push(() => p.proxy.close())
    const r = await raw(p.port, ['GARBAGE\x00\x01 nonsense\r\n\r\n'])
    expect(status(r.text)).toBe(400)
    expect(r.text).toContain('"code":"TG_ERR_BAD_REQUEST"')
    expect(r.closed).toBe(true)
    expect(p.proxy.counts.malformed).toBe(1)
    expect(await (await fetch(`${p.url}/`)).text()).toBe('ok')
  })

  it('times out slow headers with 408', async () => {
    const up = await okUpstream()
    const p = await proxyTo([up.url], { headersTimeoutMs: 400 })
    closers.push(() => p.proxy.close())
    const r = await raw(p.port, ['GET / HTTP/1.1\r\nHost: x\r\n', 100, 'X-A: 1\r\n'], 5000)
    expect(status(r.text)).toBe(408)
    expect(r.text).toContain('TG_ERR_REQUEST_TIMEOUT')
    expect(r.ms).toBeLessThan(3000)
  })

  it('times out a stalled request body with 408 and aborts the upstream request', async () => {
    let upstreamClosed = false
    const up = await upstream((req, res) => {
      req.resume()
      res.on('close', () => (upstreamClosed = true))
      req.on('end', () => res.end('never'))
    })
    closers.push(up.close)
    const p = await proxyTo([up.url], { bodyIdleTimeoutMs: 300 })
    closers.push(() => p.proxy.close())
    const r = await raw(p.port, ['POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789'], 5000)
    expect(status(r.text)).toBe(408)
    expect(r.ms).toBeLessThan(3000)
    expect(p.proxy.counts.bodyTimeouts).toBe(1)
    for (let i = 0; i < 100 && !upstreamClosed; i++) await new Promise((res) => setTimeout(res, 10))
    expect(upstreamClosed).toBe(true)
  })

  it('refuses oversized headers (431) and bodies (413), declared or chunked', async () => {
    const up = await okUpstream()
    const p = await proxyTo([up.url], { maxHeaderBytes: 2048, maxBodyBytes: 1000 })
    closers.push(() => p.proxy.close())
    const big = await raw(p.port, [`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4000)}\r\n\r\n`])
    expect(status(big.text)).toBe(431)
    expect(big.text).toContain('TG_ERR_HEADERS_TOO_LARGE')
    const declared = await fetch(`${p.url}/`, { method: 'POST', body: 'x'.repeat(2000) })
    expect(declared.status).toBe(413)
    expect(((await declared.json()) as { code: string }).code).toBe('TG_ERR_PAYLOAD_TOO_LARGE')
    const chunked = await raw(p.port, [
      'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n',
      `258\r\n${'y'.repeat(600)}\r\n`,
      50,
      `258\r\n${'y'.repeat(600)}\r\n`,
      '0\r\n\r\n',
    ])
    expect(status(chunked.text)).toBe(413)
    expect(p.proxy.counts.tooLarge).toBe(2)
    expect(await (await fetch(`${p.url}/`)).text()).toBe('ok')
  })

  it('answers 400 for a bad priority or deadline header, naming it', async () => {
    const up = await okUpstream()
    const p = await proxyTo([up.url])
    closers.push(() => p.proxy.close())
    for (const [h, v] of [
      ['x-tailguard-priority', 'high'],
      ['x-tailguard-priority', '99'],
      ['x-tailguard-deadline-ms', 'soon'],
    ] as const) {
      const res = await fetch(`${p.url}/`, { headers: { [h]: v } })
      expect(res.status).toBe(400)
      expect(((await res.json()) as { message: string }).message).toContain(h)
    }
  })

  it('answers 502 when the upstream returns garbage', async () => {
    const url = await tcpUpstream((s) => {
      s.on('data', () => s.end('THIS IS NOT HTTP\r\n\r\n'))
    })
    const p = await proxyTo([url])
    closers.push(() => p.proxy.close())
    const res = await fetch(`${p.url}/`)
    expect(res.status).toBe(502)
    expect(((await res.json()) as { code: string }).code).toBe('TG_ERR_UPSTREAM_UNAVAILABLE')
    expect(p.recorder.drain().series[0]!.errorClasses).toEqual({ upstream_bad_response: 1 })
  })

  it('cuts the client connection when the upstream closes mid-stream, and counts it', async () => {
    const url = await tcpUpstream((s) => {
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n')
        s.write('9\r\ndata: 1\n\n\r\n')
        setTimeout(() => s.destroy(), 50)
      })
    })
    const p = await proxyTo([url])
    closers.push(() => p.proxy.close())
    const r = await raw(p.port, ['GET / HTTP/1.1\r\nHost: x\r\n\r\n'], 5000)
    expect(status(r.text)).toBe(200)
    expect(r.text).toContain('data: 1')
    expect(r.text).not.toMatch(/0\r\n\r\n$/) // no clean end of the chunked body: the client sees the cut
    expect(r.closed).toBe(true)
    expect(p.proxy.counts.upstreamMidStream).toBe(1)
    expect(p.recorder.drain().series[0]!.errorClasses).toEqual({ upstream_closed: 1 })
  })

  it('forwards what came before a chunk that overruns its size, then cuts the client connection', async () => {
    const url = await tcpUpstream((s) => {
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n')
        // 10 bytes announced, 9 sent before the line ends: the bytes after the announced 10 are not a CRLF.
        s.write('a\r\ndata: 1\n\n\r\n')
      })
    })
    const p = await proxyTo([url])
    closers.push(() => p.proxy.close())
    const r = await raw(p.port, ['GET / HTTP/1.1\r\nHost: x\r\n\r\n'], 5000)
    expect(status(r.text)).toBe(200)
    expect(r.text).toContain('data: 1')
    expect(r.closed).toBe(true)
    expect(p.proxy.counts.upstreamMidStream).toBe(1)
    expect(p.recorder.drain().series[0]!.errorClasses).toEqual({ upstream_closed: 1 })
  })

  it('refuses CONNECT and an unknown expectation with a JSON answer, not a silent close', async () => {
    const up = await okUpstream()
    const p = await proxyTo([up.url])
    closers.push(() => p.proxy.close())
    const c = await raw(p.port, ['CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n'])
    expect(status(c.text)).toBe(405)
    expect(c.text).toContain('CONNECT is not proxied')
    const e = await raw(p.port, ['GET / HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n'], 2000)
    expect(status(e.text)).toBe(417)
    expect(e.text).toContain('"code":"TG_ERR_BAD_REQUEST"')
    expect(p.proxy.counts.malformed).toBe(2)
  })

  it('does not forward a header the Connection header names, one token or several lines', async () => {
    const seen: Array<string | undefined> = []
    const up = await upstream((req, res) => {
      seen.push(
        (req.headers['x-internal-auth'] as string | undefined) ?? (req.headers['x-b'] as string | undefined),
      )
      res.end('ok')
    })
    closers.push(up.close)
    const p = await proxyTo([up.url])
    closers.push(() => p.proxy.close())
    await raw(
      p.port,
      ['GET / HTTP/1.1\r\nHost: x\r\nConnection: x-internal-auth\r\nX-Internal-Auth: secret\r\n\r\n'],
      1000,
    )
    await raw(
      p.port,
      ['GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nConnection: x-b\r\nX-B: 1\r\n\r\n'],
      1000,
    )
    expect(seen).toEqual([undefined, undefined])
  })

  it('answers garbage sent during an event stream after the stream, never inside it', async () => {
    const url = await tcpUpstream((s) => {
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n')
        s.write('9\r\ndata: 1\n\n\r\n')
        setTimeout(() => s.write('9\r\ndata: 2\n\n\r\n0\r\n\r\n'), 300)
      })
      s.on('error', () => {})
    })
    const p = await proxyTo([url])
    closers.push(() => p.proxy.close())
    const r = await raw(p.port, ['GET / HTTP/1.1\r\nHost: x\r\n\r\n', 100, 'BAD\x01REQUEST\r\n\r\n'], 5000)
    const end = r.text.indexOf('0\r\n\r\n')
    expect(r.text).toContain('data: 2')
    expect(end).toBeGreaterThan(0)
    expect(r.text.indexOf('HTTP/1.1 400')).toBeGreaterThan(end)
    expect(r.closed).toBe(true)
  })

  it('a client that leaves while its request waits for an upstream connection frees its admission slot', async () => {
    // The upstream holds every request until released: nothing but the client leaving changes the count.
    const held: Array<() => void> = []
    const up = await upstream((req, res) => {
      req.resume()
      held.push(() => res.end('ok'))
    })
    closers.push(up.close)
    const p = await proxyTo([up.url], { connectionsPerUpstream: 1 })
    closers.push(() => p.proxy.close())
    const first = fetch(`${p.url}/a`)
    await expect.poll(() => held.length).toBe(1)
    // The second is admitted and waits in the pool's queue for the one connection; then its client leaves.
    const s = connect(p.port, '127.0.0.1')
    s.on('error', () => {})
    s.write('GET /b HTTP/1.1\r\nHost: x\r\n\r\n')
    await expect.poll(() => p.proxy.admission.inFlight).toBe(2)
    s.destroy()
    await expect.poll(() => p.proxy.admission.inFlight).toBe(1)
    held.shift()!()
    expect(await (await first).text()).toBe('ok')
    await expect.poll(() => p.proxy.admission.inFlight).toBe(0)
    // The one connection was not spent on the request that left: the next one takes it.
    const third = fetch(`${p.url}/c`)
    await expect.poll(() => held.length).toBe(1)
    held.shift()!()
    expect(await (await third).text()).toBe('ok')
  })
})

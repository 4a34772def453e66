import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { createH1Fetch } from '../../../agent/proxy/h1-fetch.js'
import { freePort } from '../../helpers/ports.js'

// The agent's own requests (reports, scrapes) on the proxy's HTTP/1.1 client, against real node:http servers;
// the global fetch (undici) answers the same requests as the reference.

const servers: Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((r) => s.close(r))
  }
})

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; connections: () => number }> {
  let connections = 0
  const s = createServer(handler)
  s.on('connection', () => connections++)
  servers.push(s)
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, connections: () => connections }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => (text += c))
    req.on('end', () => resolve(text))
  })
}

describe('createH1Fetch', () => {
  it('answers GET and POST as the global fetch does, on one kept-alive connection', async () => {
    const seen: Array<{ method: string; body: string; length?: string; type?: string; auth?: string }> = []
    const srv = await serve((req, res) => {
      void readBody(req).then((body) => {
        seen.push({
          method: req.method!,
          body,
          length: req.headers['content-length'],
          type: req.headers['content-type'],
          auth: req.headers.authorization,
        })
        if (req.url === '/missing') {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"nope"}')
          return
        }
        // A chunked answer in two writes, non-ASCII included.
        res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'text/plain; charset=utf-8' })
        res.write(`you sent ${body.length} chars: `)
        res.end(`${body}·ok`)
      })
    })
    const h1 = createH1Fetch()
    const cases = [
      { path: '/metrics?x=1', init: {} },
      {
        path: '/api/v1/reports',
        init: {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer t0k' },
          body: JSON.stringify({ série: 'é', n: [1, 2, 3] }),
        },
      },
      { path: '/missing', init: {} },
    ]
    for (const c of cases) {
      const a = await h1(srv.url + c.path, c.init)
      const b = await fetch(srv.url + c.path, c.init)
      expect({
        status: a.status,
        ok: a.ok,
        type: a.headers.get('Content-Type'),
        none: a.headers.get('x-absent'),
        text: await a.text(),
      }).toEqual({
        status: b.status,
        ok: b.ok,
        type: b.headers.get('Content-Type'),
        none: b.headers.get('x-absent'),
        text: await b.text(),
      })
    }
    // What the server received from each client is the same too (method, body, length, headers).
    expect(seen.filter((_, i) => i % 2 === 0)).toEqual(seen.filter((_, i) => i % 2 === 1))
    expect(seen[2]).toMatchObject({ method: 'POST', length: String(Buffer.byteLength(cases[1]!.init.body!)) })
    await h1.close()
    // Three requests from h1, one connection; the global fetch's are the rest.
    const before = srv.connections()
    const h2 = createH1Fetch()
    for (let i = 0; i < 5; i++) expect((await h2(srv.url + '/')).status).toBe(200)
    expect(srv.connections() - before).toBe(1)
    await h2.close()
  })

  it('fails with the reason: refused, aborted by its signal, over the body limit, not a URL', async () => {
    const h1 = createH1Fetch({ maxBodyBytes: 1000 })
    const port = await freePort()
    await expect(h1(`http://127.0.0.1:${port}/`)).rejects.toMatchObject({ code: 'ECONNREFUSED' })

    let closed = 0
    const silent = await serve((req) => {
      req.socket.on('close', () => closed++)
    })
    const t0 = performance.now()
    await expect(h1(silent.url + '/', { signal: AbortSignal.timeout(150) })).rejects.toMatchObject({
      name: 'TimeoutError',
    })
    expect(performance.now() - t0).toBeLessThan(2000)
    // The request's connection is closed at once, as a fetch's would be (an LLM server stops the work).
    await expect.poll(() => closed).toBe(1)
    await expect(h1(silent.url + '/', { signal: AbortSignal.abort(new Error('gone')) })).rejects.toThrow(
      'gone',
    )

    const big = await serve((_req, res) => res.end('x'.repeat(5000)))
    await expect(h1(big.url + '/')).rejects.toThrow(/larger than 1000 bytes/)
    const garbage = createNetServer((s) => s.end('garbage\r\n\r\n'))
    await new Promise<void>((r) => garbage.listen(0, '127.0.0.1', r))
    const gUrl = `http://127.0.0.1:${(garbage.address() as AddressInfo).port}/metrics`
    await expect(h1(gUrl)).rejects.toThrow(`${gUrl}: not HTTP/1.1: not an HTTP/1.x status line: "garbage"`)
    garbage.close()
    await expect(h1('localhost:7070/x')).rejects.toThrow(/only http: and https: URLs/)
    await expect(h1('not a url')).rejects.toThrow(/not a URL: "not a url"/)
    await h1.close()
  })

  it('keeps no process alive with an idle connection', async () => {
    const srv = await serve((_req, res) => res.end('ok'))
    // A process that makes one request and then has nothing to do exits at once, not when the idle connection
    // times out (4 s); the compiled module, as the CLI runs it.
    const mod = fileURLToPath(new URL('../../../dist/agent/proxy/h1-fetch.js', import.meta.url))
    const script = `import { createH1Fetch } from ${JSON.stringify(mod)}
const h = createH1Fetch(); const r = await h(${JSON.stringify(srv.url + '/')}); console.log(r.status, await r.text())`
    const t0 = performance.now()
    // Not spawnSync: the server answering it runs on this process's event loop.
    const r = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    })
    expect(r.stderr).toBe('')
    expect(r.stdout.trim()).toBe('200 ok')
    expect(performance.now() - t0).toBeLessThan(3000)
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect } from 'node:net'
import fc from 'fast-check'
import { Pool } from 'undici'
import { createAdmission, nextTraceparent, requestId } from '../../../agent/index.js'
import type { Decision, Pending, Ticket } from '../../../agent/index.js'
import { proxyTo, upstream } from './helpers.js'

const printable = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 60,
})
const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/)
const pathArb = fc
  .array(fc.stringMatching(/^[A-Za-z0-9._~%!$&'()*+,;=:@-]{0,12}$/), { maxLength: 5 })
  .chain((segs) =>
    fc.tuple(fc.constant('/' + segs.join('/')), fc.option(fc.stringMatching(/^[A-Za-z0-9=&%_-]{0,20}$/))),
  )
  .map(([p, q]) => (q === null ? p : `${p}?${q}`))

const allowed = new Set([200, 400, 408, 413, 429, 431, 502, 503, 504])

describe('proxy: fuzzed inputs (fast-check)', () => {
  let close: Array<() => Promise<unknown>> = []
  let base = ''
  let port = 0
  let pool: Pool
  let proxyCounts: () => { requests: number }
  beforeAll(async () => {
    const up = await upstream((req, res) => {
      let n = 0
      req.on('data', (c: Buffer) => (n += c.length))
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ method: req.method, url: req.url, bytes: n }))
      })
    })
    const p = await proxyTo([up.url], { maxBodyBytes: 4096, maxHeaderBytes: 8192 })
    base = p.url
    port = p.port
    proxyCounts = () => p.proxy.counts
    pool = new Pool(base, { connections: 8 })
    close = [() => pool.close(), () => p.proxy.close(), up.close]
  })
  afterAll(async () => {
    for (const c of close) await c()
  })

  it('10,000 fuzzed requests: every answer is a known status with a JSON error body, never a crash', async () => {
    let runs = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
        pathArb,
        fc.dictionary(token, printable, { maxKeys: 6 }),
        fc.option(fc.oneof(fc.integer({ min: -5, max: 20 }).map(String), printable)),
        fc.option(fc.oneof(fc.integer({ min: -100, max: 100_000 }).map(String), printable)),
        fc.option(
          fc.oneof(printable, fc.constant('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')),
        ),
        fc.option(
          fc.oneof(
            fc.string({ maxLength: 200 }),
            fc.constant('{"model":"m1","prompt":"x"}'),
            fc.string({ minLength: 4000, maxLength: 5000 }),
          ),
        ),
        async (method, path, extra, priority, deadline, traceparent, body) => {
          runs++
          const headers: Record<string, string> = { ...extra }
          for (const k of [
            'host',
            'connection',
            'content-length',
            'transfer-encoding',
            'expect',
            'upgrade',
            'keep-alive',
            'te',
            'trailer',
          ])
            delete headers[k]
          if (priority !== null) headers['x-tailguard-priority'] = priority
          if (deadline !== null) headers['x-tailguard-deadline-ms'] = deadline
          if (traceparent !== null) headers.traceparent = traceparent
          const sendBody = body !== null && method !== 'GET' && method !== 'HEAD'
          const res = await pool.request({
            path,
            method: method as 'GET',
            headers,
            ...(sendBody ? { body } : {}),
          })
          const text = await res.body.text()
          expect(allowed.has(res.statusCode), `${res.statusCode} ${text}`).toBe(true)
          if (method === 'HEAD') return
          const json = JSON.parse(text) as {
            code?: string
            message?: string
            statusCode?: number
            url?: string
            bytes?: number
          }
          if (res.statusCode === 200) {
            expect(json.url).toBe(path)
            expect(json.bytes).toBe(sendBody ? Buffer.byteLength(body!) : 0)
          } else {
            expect(json.code).toMatch(/^TG_ERR_/)
            expect(json.statusCode).toBe(res.statusCode)
            expect(typeof json.message).toBe('string')
          }
        },
      ),
      { numRuns: 10_000, seed: 42 },
    )
    expect(runs).toBeGreaterThanOrEqual(10_000)
    expect(proxyCounts().requests).toBeGreaterThanOrEqual(10_000)
  }, 600_000)

  it('300 fuzzed raw byte streams: the proxy answers or closes, and keeps serving', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc
            .tuple(
              fc.constantFrom('GET', 'POST', 'X'),
              fc.string({ maxLength: 40 }),
              fc.string({ maxLength: 80 }),
            )
            .map(([m, p, h]) => Buffer.from(`${m} ${p} HTTP/1.1\r\n${h}\r\n\r\n`, 'latin1')),
        ),
        async (bytes) => {
          await new Promise<void>((resolve) => {
            const s = connect(port, '127.0.0.1', () => s.end(Buffer.from(bytes)))
            s.on('data', () => {})
            s.on('error', () => resolve())
            s.on('close', () => resolve())
            setTimeout(() => {
              s.destroy()
              resolve()
            }, 2000)
          })
        },
      ),
      { numRuns: 300, seed: 7 },
    )
    const res = await fetch(`${base}/still-up`)
    expect(res.status).toBe(200)
  }, 120_000)

  it('10,000 fuzzed traceparent and request-id headers give well-formed ones', () => {
    fc.assert(
      fc.property(fc.oneof(printable, fc.string(), fc.constant(undefined)), (s) => {
        const { traceparent, traceId } = nextTraceparent(s)
        expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/)
        expect(traceparent.slice(3, 35)).toBe(traceId)
        expect(requestId(s)).toMatch(/^[\w.:/+=-]{1,128}$/)
      }),
      { numRuns: 10_000 },
    )
  })

  it('10,000 fuzzed admission histories keep the counts exact and decide each request at most once', () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('request' as const),
        cls: fc.integer({ min: 0, max: 15 }),
        deadline: fc.option(fc.integer({ min: -1, max: 10_000 })),
      }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }),
      fc.record({
        kind: fc.constant('set' as const),
        caps: fc.array(
          fc.record({
            priorityClass: fc.integer({ min: 0, max: 15 }),
            maxConcurrency: fc.integer({ min: 0, max: 4 }),
            maxQueue: fc.integer({ min: 0, max: 4 }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
      }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const adm = createAdmission({
          classes: [{ priorityClass: 0, maxConcurrency: 2, maxQueue: 2, queueTimeoutMs: 60_000 }],
          gradient2: { initialLimit: 3, minLimit: 1, maxLimit: 5 },
        })
        const tickets: Ticket[] = []
        const pendings: Array<{ p: Pending; decided: () => boolean }> = []
        let admitted = 0
        let released = 0
        for (const o of ops) {
          if (o.kind === 'request') {
            let decisions = 0
            const decide = (d: Decision) => {
              decisions++
              expect(decisions).toBe(1)
              if (d.kind === 'admit') {
                admitted++
                tickets.push(d.ticket)
              }
            }
            const p = adm.request(o.cls, o.deadline ?? undefined, decide)
            if (decisions === 0) {
              pendings.push({ p, decided: () => decisions > 0 })
            }
          } else if (o.kind === 'release' && tickets.length > 0) {
            tickets.splice(o.pick % tickets.length, 1)[0]!.release(5)
            released++
          } else if (o.kind === 'cancel' && pendings.length > 0) {
            pendings.splice(o.pick % pendings.length, 1)[0]!.p.cancel()
          } else if (o.kind === 'set') {
            const seen = new Set<number>()
            const caps = o.caps.filter((c) => !seen.has(c.priorityClass) && seen.add(c.priorityClass))
            adm.setClasses(
              caps.map((c) => ({ ...c, queueTimeoutMs: 60_000 })),
              true,
            )
          }
          expect(adm.inFlight).toBe(admitted - released)
          const stillWaiting = pendings.filter((x) => !x.decided()).length
          expect(adm.queued).toBeLessThanOrEqual(stillWaiting)
          expect(adm.queued).toBeGreaterThanOrEqual(0)
        }
        for (const x of pendings) x.p.cancel()
        for (const t of tickets) t.release(null)
        expect(adm.inFlight).toBe(0)
        expect(adm.queued).toBe(0)
      }),
      { numRuns: 10_000 },
    )
  })
})

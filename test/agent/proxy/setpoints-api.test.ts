import { afterEach, describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import pino from 'pino'
import { runAgent } from '../../../agent/index.js'
import type { RunningAgentWithProxy } from '../../../agent/index.js'
import { resolveConfig } from '../../../collector/index.js'
import type { IntervalReport } from '../../../collector/index.js'
import { upstream } from './helpers.js'

const ADMIN = 'admin-token-0123456789'
const closers: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

async function start(upstreams: string[]) {
  const reports: IntervalReport[] = []
  const collector = Fastify({ bodyLimit: 16 << 20 })
  collector.post('/api/v1/reports', async (req) => {
    const r = req.body as IntervalReport
    reports.push(r)
    return { status: 'stored', seq: r.seq }
  })
  await collector.listen({ host: '127.0.0.1', port: 0 })
  closers.push(() => collector.close())
  const cfg = resolveConfig({
    flags: {
      agent: {
        collector: `http://127.0.0.1:${(collector.server.address() as { port: number }).port}`,
        token: 'agent-token-0123456789',
        intervalMs: 200,
        adminToken: ADMIN,
        otlp: { port: 0 },
        gpu: { nvml: false },
        proxy: { port: 0, upstreams },
      },
    },
  })
  const agent: RunningAgentWithProxy = await runAgent(cfg.agent, pino({ level: 'silent' }))
  closers.push(() => agent.stop())
  const auth = { authorization: `Bearer ${ADMIN}` }
  return { agent, reports, auth, app: agent.app! }
}

const classes = [
  { priorityClass: 0, maxConcurrency: 8, maxQueue: 16, queueTimeoutMs: 250 },
  { priorityClass: 1, maxConcurrency: 2, maxQueue: 0, queueTimeoutMs: 0 },
]

describe('agent setpoints API (contract 2)', () => {
  it('refuses calls without the admin token', async () => {
    const up = await upstream((_q, r) => r.end('ok'))
    closers.push(up.close)
    const { app } = await start([up.url])
    const res = await app.inject({ method: 'GET', url: '/v1/setpoints' })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toMatchObject({ code: 'TG_ERR_UNAUTHORIZED', statusCode: 401 })
    const wrong = await app.inject({
      method: 'GET',
      url: '/v1/setpoints',
      headers: { authorization: 'Bearer nope' },
    })
    expect(wrong.statusCode).toBe(401)
  })

  it('GET shows the config setpoints; PUT replaces them with fencing; stale is false while fresh', async () => {
    const up = await upstream((_q, r) => r.end('ok'))
    closers.push(up.close)
    const { app, auth, agent } = await start([up.url])
    const first = await app.inject({ method: 'GET', url: '/v1/setpoints', headers: auth })
    expect(first.statusCode).toBe(200)
    expect(first.json()).toMatchObject({ source: 'config', fencingToken: null, stale: false })
    expect(first.json().admission).toHaveLength(3)

    const put = await app.inject({
      method: 'PUT',
      url: '/v1/setpoints',
      headers: auth,
      payload: { admission: classes, fencingToken: 5, source: 'controller-a' },
    })
    expect(put.statusCode).toBe(200)
    expect(put.json()).toMatchObject({
      admission: classes,
      fencingToken: 5,
      source: 'controller-a',
      stale: false,
    })
    expect(Date.parse(put.json().updatedAt)).toBeGreaterThan(0)
    expect(agent.proxy!.admission.classes).toEqual(classes)
    // A controller takes over: no local Gradient2 limit any more.
    expect(put.json().limit).toBeNull()

    const fenced = await app.inject({
      method: 'PUT',
      url: '/v1/setpoints',
      headers: auth,
      payload: { admission: classes.slice(0, 1), fencingToken: 4 },
    })
    expect(fenced.statusCode).toBe(409)
    expect(fenced.json()).toMatchObject({ code: 'TG_ERR_SETPOINTS_FENCED', statusCode: 409 })
    expect(agent.proxy!.admission.classes).toEqual(classes)

    const same = await app.inject({
      method: 'PUT',
      url: '/v1/setpoints',
      headers: auth,
      payload: { admission: classes.slice(0, 1), fencingToken: 5 },
    })
    expect(same.statusCode).toBe(200)
    expect(same.json().source).toBe('api')
  })

  it('answers 400 naming the field for bad values', async () => {
    const up = await upstream((_q, r) => r.end('ok'))
    closers.push(up.close)
    const { app, auth } = await start([up.url])
    const cases: Array<[unknown, RegExp]> = [
      [{ admission: [{ ...classes[0], maxConcurrency: -1 }] }, /admission\.0\.maxConcurrency/],
      [{ admission: [] }, /admission/],
      [{ admission: [classes[0], classes[0]] }, /listed twice/],
      [{ admission: classes, fencingToken: 1.5 }, /fencingToken/],
      [{ admission: [{ ...classes[0], priorityClass: 16 }] }, /priorityClass/],
      [{ admission: classes, extra: 1 }, /extra|additional/i],
    ]
    for (const [payload, re] of cases) {
      const res = await app.inject({
        method: 'PUT',
        url: '/v1/setpoints',
        headers: auth,
        payload: payload as object,
      })
      expect(res.statusCode, JSON.stringify(payload)).toBe(400)
      expect(res.json().code).toBe('TG_ERR_BAD_REQUEST')
      expect(res.json().message).toMatch(re)
    }
    const notJson = await app.inject({
      method: 'PUT',
      url: '/v1/setpoints',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{nope',
    })
    expect(notJson.statusCode).toBe(400)
    expect(notJson.json().code).toBe('TG_ERR_BAD_REQUEST')
  })

  it('GET/PUT /v1/upstreams: a removed upstream drains, finishing its in-flight request, then goes', async () => {
    let release: () => void = () => {}
    const slow = await upstream((_q, r) => {
      release = () => r.end('slow-done')
    })
    const fast = await upstream((_q, r) => r.end('fast'))
    closers.push(slow.close, fast.close)
    const { app, auth, agent } = await start([slow.url])
    const base = `http://127.0.0.1:${agent.proxyAddress!.port}`
    const inFlight = fetch(`${base}/x`).then((r) => r.text())
    for (let i = 0; i < 100 && agent.proxy!.upstreams.view()[0]!.inFlight === 0; i++)
      await new Promise((r) => setTimeout(r, 10))
    const put = await app.inject({
      method: 'PUT',
      url: '/v1/upstreams',
      headers: auth,
      payload: { upstreams: [{ url: fast.url }] },
    })
    expect(put.statusCode).toBe(200)
    expect(put.json().upstreams).toEqual([
      { url: slow.url, state: 'draining', inFlight: 1 },
      { url: fast.url, state: 'active', inFlight: 0 },
    ])
    expect(await (await fetch(`${base}/y`)).text()).toBe('fast')
    release()
    expect(await inFlight).toBe('slow-done')
    const after = await app.inject({ method: 'GET', url: '/v1/upstreams', headers: auth })
    expect(after.json().upstreams).toEqual([{ url: fast.url, state: 'active', inFlight: 0 }])
    const bad = await app.inject({
      method: 'PUT',
      url: '/v1/upstreams',
      headers: auth,
      payload: { upstreams: [{ url: 'ftp://x' }] },
    })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().message).toMatch(/upstreams\.0\.url/)
    // None left: 503, with the request id like every other answer of the proxy's own.
    const none = await app.inject({
      method: 'PUT',
      url: '/v1/upstreams',
      headers: auth,
      payload: { upstreams: [] },
    })
    expect(none.statusCode).toBe(200)
    const refused = await fetch(`${base}/z`)
    expect(refused.status).toBe(503)
    expect(((await refused.json()) as { requestId?: string }).requestId).toBe(
      refused.headers.get('x-request-id'),
    )
  })

  it("puts the proxy's gauges and per-class counts in the reports, and says when setpoints go stale", async () => {
    const up = await upstream((_q, r) => r.end('ok'))
    closers.push(up.close)
    const { reports, agent, app } = await start([up.url])
    const base = `http://127.0.0.1:${agent.proxyAddress!.port}`
    for (let i = 0; i < 5; i++)
      await (await fetch(`${base}/x`, { headers: { 'x-tailguard-priority': '0' } })).text()
    const series = () => reports.flatMap((r) => r.series).filter((x) => x.signals)
    const admitted = () =>
      series().reduce(
        (n, x) => n + (x.signals!.byClass!.find((c) => c.priorityClass === 0)?.admitted ?? 0),
        0,
      )
    // The requests may straddle report intervals: wait for all five, and for a report after the last.
    for (let i = 0; i < 200 && admitted() < 5; i++) await new Promise((r) => setTimeout(r, 20))
    const seen = reports.length
    for (let i = 0; i < 200 && reports.length === seen; i++) await new Promise((r) => setTimeout(r, 20))
    expect(admitted()).toBe(5)
    expect(series().reduce((n, x) => n + x.requests.ok, 0)).toBe(5)
    const last = series()[series().length - 1]!
    expect(last.signals!.sources).toEqual(['proxy'])
    expect(last.signals!.gauges!.inFlight).toMatchObject({ last: 0 })
    expect(last.signals!.gauges!.queued).toMatchObject({ last: 0, max: 0 })
    const health = await app.inject({ method: 'GET', url: '/healthz' })
    expect(health.json().proxy.setpoints.stale).toBe(false)
  })
})

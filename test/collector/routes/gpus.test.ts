import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../../collector/app.js'
import { createStore } from '../../../collector/index.js'
import type { IntervalReport, Store } from '../../../collector/index.js'
import { createTestDatabase, testDialects } from '../../helpers/dialects.js'
import type { TestDatabase } from '../../helpers/dialects.js'
import { makeGpuReport } from '../../helpers/gpu-reports.js'

const READ = 'read-token-0123456789abcdef'
const AGENT = 'agent-token-0123456789abcdef'
const NOW = Date.parse('2026-11-21T12:00:00Z')
const T0 = NOW - 60_000
const CHAT = { service: 'chat', model: 'llama', version: '3', replica: 'r0' }
const auth = { authorization: `Bearer ${READ}` }

for (const dialect of testDialects())
  describe(`${dialect}: GPU routes`, () => {
    let tdb: TestDatabase
    let store: Store
    let app: FastifyInstance
    beforeEach(async () => {
      tdb = await createTestDatabase(dialect)
      store = await createStore({ url: tdb.url })
      app = await buildCollector(
        {
          tokens: [
            { token: READ, scope: 'read' },
            { token: AGENT, scope: 'agent' },
          ],
          reportBodyLimitBytes: 1 << 20,
          bodyLimitBytes: 64 * 1024,
        },
        { store, clock: () => NOW },
      )
    })
    afterEach(async () => {
      await app.close()
      await store.close()
      await tdb.drop()
    })

    const post = async (report: IntervalReport) => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/reports',
        headers: { authorization: `Bearer ${AGENT}` },
        payload: report,
      })
      expect(res.statusCode, res.body).toBe(200)
      return res.json() as { status: string }
    }

    const report = (seq: number, startMs: number, util: number[]) =>
      makeGpuReport({
        seq,
        startMs,
        series: [{ labels: CHAT, samples: { total: [20_000, 40_000, 900_000] }, ok: 3 }],
        gpus: [
          {
            uuid: 'GPU-aaaa',
            index: 0,
            name: 'NVIDIA H100 80GB HBM3',
            utilPct: util,
            memUsedBytes: util.map((u) => u * 1e8),
            powerW: util.map((u) => 200 + u),
            clockEventReasons: 0x4,
            events: seq === 1 ? [{ timeMs: startMs + 500, kind: 'xid', xid: 79 }] : [],
            processes: [
              { pid: 4242, usedMemoryBytes: 30e9, smUtilPct: 61, replica: CHAT },
              { pid: 99, usedMemoryBytes: 2e9, smUtilPct: 2 },
            ],
          },
        ],
      })

    it('serves the inventory with processes attributed to replicas beside their latency', async () => {
      expect((await post(report(1, T0, [40, 60]))).status).toBe('stored')
      expect((await post(report(1, T0, [40, 60]))).status).toBe('duplicate')
      const res = await app.inject({ url: '/api/v1/gpus', headers: auth })
      expect(res.statusCode, res.body).toBe(200)
      const body = res.json()
      expect(body.gpus).toHaveLength(1)
      const g = body.gpus[0]
      expect(g).toMatchObject({
        node: 'n0',
        uuid: 'GPU-aaaa',
        index: 0,
        name: 'NVIDIA H100 80GB HBM3',
        source: 'nvml',
        mig: null,
        samples: 2,
        lastSeen: new Date(T0 + 5000).toISOString(),
        clockEventReasonsSeen: [expect.any(String)],
      })
      expect(g.fields.gpuUtilPct).toEqual({ min: 40, mean: 50, max: 60, last: 60 })
      expect(g.fields.powerW.last).toBe(260)
      expect(g.events).toEqual([
        expect.objectContaining({ kind: 'xid', xid: 79, time: new Date(T0 + 500).toISOString() }),
      ])
      expect(g.processes.map((p: { pid: number; replica: unknown }) => [p.pid, p.replica])).toEqual([
        [99, null],
        [4242, CHAT],
      ])
      expect(body.replicas).toEqual([
        {
          ...CHAT,
          node: 'n0',
          gpus: [{ uuid: 'GPU-aaaa', index: 0, mig: null, gpuUtilPct: 50 }],
          pids: [4242],
          usedMemoryBytes: 30e9,
          smUtilPct: 61,
          latency: { window: '5m', count: 3, p50Ms: expect.closeTo(40, 0), p99Ms: expect.closeTo(900, 0) },
        },
      ])
    })

    it('serves time series and events over a range', async () => {
      await post(report(1, T0, [40, 60]))
      await post(report(2, T0 + 10_000, [90]))
      const res = await app.inject({
        url: `/api/v1/gpus/timeseries?field=gpuUtilPct&from=${T0}&to=${T0 + 60_000}&step=10s&node=n0&uuid=GPU-aaaa`,
        headers: auth,
      })
      expect(res.statusCode, res.body).toBe(200)
      const body = res.json()
      expect(body).toMatchObject({ field: 'gpuUtilPct', stepMs: 10_000 })
      expect(body.gpus).toHaveLength(1)
      expect(body.gpus[0].points).toEqual([
        { t: new Date(T0).toISOString(), min: 40, mean: 50, max: 60, last: 60 },
        { t: new Date(T0 + 10_000).toISOString(), min: 90, mean: 90, max: 90, last: 90 },
      ])
      const mem = await app.inject({
        url: '/api/v1/gpus/timeseries?field=memUsedBytes&from=-1h&step=10s',
        headers: auth,
      })
      expect(mem.json().gpus[0].points.map((p: { max: number }) => p.max)).toEqual([6e9, 9e9])
      const perMinute = await app.inject({
        url: '/api/v1/gpus/timeseries?field=memUsedBytes&from=-1h',
        headers: auth,
      })
      expect(perMinute.json()).toMatchObject({
        stepMs: 60_000,
        gpus: [{ points: [{ min: 4e9, max: 9e9, last: 9e9 }] }],
      })
      const events = await app.inject({ url: '/api/v1/gpus/events?from=-1h', headers: auth })
      expect(events.statusCode).toBe(200)
      expect(events.json().events).toEqual([
        expect.objectContaining({ uuid: 'GPU-aaaa', kind: 'xid', xid: 79 }),
      ])
      const none = await app.inject({ url: '/api/v1/gpus/events?from=-1h&node=elsewhere', headers: auth })
      expect(none.json().events).toEqual([])
    })

    it('answers an empty inventory when no GPU has reported', async () => {
      const res = await app.inject({ url: '/api/v1/gpus', headers: auth })
      expect(res.statusCode).toBe(200)
      expect(res.json()).toEqual({ gpus: [], replicas: [] })
    })

    it('refuses bad input with 400 naming the parameter', async () => {
      const cases: Array<[string, RegExp]> = [
        [
          '/api/v1/gpus/timeseries?field=bogus',
          /^field: unknown GPU field 'bogus'; expected one of gpuUtilPct/,
        ],
        ['/api/v1/gpus/timeseries?step=0', /^step: /],
        ['/api/v1/gpus/timeseries?step=1s&from=-30d', /^step: .*more than 2000 points/],
        ['/api/v1/gpus/timeseries?from=yesterday', /^from: expected an ISO time/],
        ['/api/v1/gpus/events?to=later', /^to: expected an ISO time/],
        ['/api/v1/gpus/events?from=-1h&to=-2h', /^from must be before to/],
        ['/api/v1/gpus/events?color=red', /color|additional/],
      ]
      for (const [url, message] of cases) {
        const res = await app.inject({ url, headers: auth })
        expect(res.statusCode, url).toBe(400)
        expect(res.json().code, url).toBe('TG_ERR_BAD_REQUEST')
        expect(res.json().message, url).toMatch(message)
      }
    })

    it('needs a token with read scope', async () => {
      for (const url of ['/api/v1/gpus', '/api/v1/gpus/timeseries', '/api/v1/gpus/events']) {
        expect((await app.inject({ url })).statusCode, url).toBe(401)
        const bad = await app.inject({ url, headers: { authorization: 'Bearer nope-nope-nope-nope' } })
        expect(bad.statusCode, url).toBe(401)
        const agent = await app.inject({ url, headers: { authorization: `Bearer ${AGENT}` } })
        expect(agent.statusCode, url).toBe(403)
        expect(agent.json().message).toMatch(/read scope/)
      }
    })
  })

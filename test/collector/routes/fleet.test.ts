// GET /api/v1/fleet and GET /api/v1/alerts/deliveries through buildCollector + app.inject, on SQLite and
// PostgreSQL: the fleet overview's one-request figures, and the webhook outbox as the alerts page shows it.
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { buildCollector } from '../../../collector/app.js'
import { createStore, latencyThresholds } from '../../../collector/index.js'
import type { IntervalReport, Store } from '../../../collector/index.js'
import { storeDatabase } from '../../../collector/store/index.js'
import { createSloEngine, validateSlo } from '../../../collector/slo/index.js'
import type { SloEngine, SloTables } from '../../../collector/slo/index.js'
import { createSloRoutes } from '../../../collector/routes/slos.js'
import { coveredSeconds } from '../../../collector/routes/fleet.js'
import { createTestDatabase, testDialects } from '../../helpers/dialects.js'
import type { TestDatabase } from '../../helpers/dialects.js'
import { makeReport } from '../../helpers/reports.js'

const READ = 'fleet-read-token-0123456789'
const AGENT = 'fleet-agent-token-0123456789'
/** On a minute boundary, so that the last minute of data is one 1-minute bucket of the 1 h range. */
const NOW = Date.parse('2026-11-21T12:00:00Z')
const stat = (v: number) => ({ min: v, mean: v, max: v, last: v })
/** 95 requests at 50 ms and 5 at 200 ms: 5% over the 100 ms SLO. */
const TOTAL_US = [...Array.from({ length: 95 }, () => 50_000), ...Array.from({ length: 5 }, () => 200_000)]

/**
 * The last minute of chat on two replicas (12 reports of 5 s each: 100 ok, 2 errors, 3 shed per replica and
 * report), one report of embed 30 minutes ago, an overflow series, and a GPU held by chat-r0 at 60%.
 */
function reports(): IntervalReport[] {
  const out: IntervalReport[] = []
  let seq = 0
  for (let i = 0; i < 12; i++)
    out.push(
      makeReport({
        seq: ++seq,
        startMs: NOW - 60_000 + i * 5000,
        series: ['r0', 'r1'].map((replica) => ({
          labels: { service: 'chat', model: 'llama', replica },
          samples: { total: TOTAL_US },
          ok: 100,
          error: 2,
          shed: 3,
        })),
      }),
    )
  out.push(
    makeReport({
      seq: ++seq,
      startMs: NOW - 30 * 60_000,
      series: [
        { labels: { service: 'embed', model: 'e5', replica: 'e0' }, samples: { total: [4000] }, ok: 10 },
        { labels: { service: '__overflow__', model: '__overflow__' }, samples: { total: [1000] }, ok: 5 },
      ],
    }),
  )
  const gpu = makeReport({ seq: ++seq, startMs: NOW - 5000, series: [] })
  out.push({
    ...gpu,
    gpus: [
      {
        source: 'nvml',
        uuid: 'GPU-fleet-0',
        index: 0,
        name: 'NVIDIA H100 80GB HBM3',
        samples: 5,
        fields: { gpuUtilPct: stat(60) },
        processes: [
          {
            pid: 9,
            replica: { service: 'chat', model: 'llama', version: '3', replica: 'r0' },
            usedMemoryBytes: stat(1e9),
          },
        ],
      },
    ],
  })
  return out
}

const SLOS_YAML = {
  latency: validateSlo({
    name: 'chat-latency',
    kind: 'latency',
    selector: { service: 'chat' },
    thresholdMs: 100,
    objective: '99%',
  }),
  availability: validateSlo({
    name: 'chat-availability',
    kind: 'availability',
    selector: { service: 'chat' },
    objective: '99.9%',
  }),
}

interface Setup {
  readonly app: FastifyInstance
  readonly engine: SloEngine
}

describe('coveredSeconds', () => {
  it('spans the first to the end of the last bucket with requests, clipped to the range', () => {
    const range = { fromMs: 5_000, toMs: 100_000 }
    expect(coveredSeconds([], range, 10_000)).toBeNull()
    expect(coveredSeconds([{ tMs: 20_000, n: 0 }], range, 10_000)).toBeNull()
    expect(
      coveredSeconds(
        [
          { tMs: 0, n: 1 },
          { tMs: 50_000, n: 0 },
          { tMs: 90_000, n: 4 },
        ],
        range,
        10_000,
      ),
    ).toBe(95)
  })
})

for (const dialect of testDialects())
  describe(`${dialect}: fleet and webhook delivery routes`, () => {
    let tdb: TestDatabase
    let store: Store
    let setup: Setup
    let receiver: Server
    const answers: number[] = []
    const received: string[] = []

    beforeEach(async () => {
      answers.length = 0
      received.length = 0
      receiver = createServer((req, res) => {
        let body = ''
        req.on('data', (c: Buffer) => (body += c.toString()))
        req.on('end', () => {
          received.push(body)
          res.statusCode = answers.shift() ?? 200
          res.end()
        })
      })
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
      const port = (receiver.address() as AddressInfo).port
      tdb = await createTestDatabase(dialect)
      store = await createStore({ url: tdb.url })
      const engine = createSloEngine({
        source: store,
        db: storeDatabase(store) as unknown as Kysely<SloTables>,
        clock: () => NOW,
        random: () => 1,
        webhooks: [{ name: 'ops', url: `http://127.0.0.1:${port}/hook`, minBackoffMs: 1000 }],
      })
      const slos = [SLOS_YAML.latency, SLOS_YAML.availability].map((r) => {
        if (!r.ok) throw new Error('SLO fixture invalid')
        return r.slo
      })
      engine.setFileSlos(slos)
      const app = await buildCollector(
        {
          tokens: [
            { token: READ, scope: 'read' },
            { token: AGENT, scope: 'agent' },
          ],
          reportBodyLimitBytes: 1 << 20,
          bodyLimitBytes: 64 * 1024,
        },
        {
          store,
          clock: () => NOW,
          figures: {
            pricing: { byGpuModel: { 'NVIDIA H100 80GB HBM3': 4 } },
            latencySlos: () => latencyThresholds(engine),
          },
          plugins: [createSloRoutes(engine)],
        },
      )
      for (const r of reports()) {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/reports',
          headers: { authorization: `Bearer ${AGENT}` },
          payload: r,
        })
        expect(res.statusCode, res.body).toBe(200)
      }
      setup = { app, engine }
    })

    afterEach(async () => {
      await setup.engine.stop()
      await setup.app.close()
      await store.close()
      await tdb.drop()
      await new Promise((resolve) => receiver.close(resolve))
    })

    const get = (url: string, token: string | null = READ) =>
      setup.app.inject({ url, headers: token ? { authorization: `Bearer ${token}` } : {} })

    it('answers one row per service with rate over the time with data, goodput, ratios, p99 and GPU use', async () => {
      const res = await get('/api/v1/fleet?from=-1h&to=now')
      expect(res.statusCode, res.body).toBe(200)
      const body = res.json()
      expect(body.from).toBe(new Date(NOW - 3_600_000).toISOString())
      expect(body.stepMs).toBe(60_000)
      expect(body.services.map((s: { service: string }) => s.service)).toEqual(['chat', 'embed'])
      const [chat, embed] = body.services
      // 12 reports × 2 replicas × (100 ok + 2 error + 3 shed), all in the last minute: 2,520 over 60 s.
      expect(chat).toMatchObject({
        models: ['llama'],
        versions: ['3'],
        replicas: 2,
        requests: { ok: 2400, error: 48, shed: 72 },
        dataSeconds: 60,
        ratePerSecond: 42,
        gpus: { count: 1, utilPct: 60 },
      })
      expect(chat.errorRatio).toBeCloseTo(48 / 2520, 10)
      expect(chat.shedRatio).toBeCloseTo(72 / 2520, 10)
      // 40 ok/s, 95% within the 100 ms latency SLO.
      expect(chat.goodputPerSecond).toBeCloseTo(38, 9)
      expect(chat.goodputReason).toBeUndefined()
      expect(chat.latencyMs.count).toBe(2400)
      expect(chat.latencyMs.p99).toBeGreaterThan(199.7)
      expect(chat.latencyMs.p99).toBeLessThan(200.3)
      expect(chat.latencyMs.p50).toBeLessThan(50.1)
      // embed: 10 requests in one 1-minute bucket, 30 minutes ago; no latency SLO covers it, no GPU.
      expect(embed).toMatchObject({
        replicas: 1,
        requests: { ok: 10, error: 0, shed: 0 },
        dataSeconds: 60,
        goodputPerSecond: null,
        goodputReason: 'no latency SLO covers this service',
        gpus: { count: 0, utilPct: null },
      })
      expect(embed.ratePerSecond).toBeCloseTo(10 / 60, 12)

      // The last 5 minutes: embed has no data there and says so with nulls, not zeros.
      const recent = (await get('/api/v1/fleet?from=-5m')).json()
      const idle = recent.services.find((s: { service: string }) => s.service === 'embed')
      expect(idle).toMatchObject({
        replicas: 0,
        dataSeconds: null,
        ratePerSecond: null,
        errorRatio: null,
        goodputPerSecond: null,
        latencyMs: { count: 0, p99: null },
      })
    })

    it('carries the cost per million requests that /figures gives for the same range', async () => {
      const fleet = (await get('/api/v1/fleet?from=-1h&to=now')).json()
      const figures = (await get('/api/v1/figures?window=1h')).json()
      const cost = (service: string) =>
        figures.services.find((s: { service: string }) => s.service === service).costPerMillionRequests
      const [chat, embed] = fleet.services
      // One $4/h GPU for 2,448 served requests in the hour: $4 / 2,448 × 1e6.
      expect(chat.costPerMillionRequests.usd).toBeCloseTo((4 / 2448) * 1e6, 6)
      expect(chat.costPerMillionRequests.usd).toBeCloseTo(cost('chat').value, 6)
      expect(chat.costPerMillionRequests.reason).toBeUndefined()
      expect(embed.costPerMillionRequests).toEqual({ usd: null, reason: cost('embed').reason })
      expect(embed.costPerMillionRequests.reason).toContain('no GPU process attributed')
    })

    it('reads every service at once with what the per-service reads give, before and after compaction', async () => {
      const range = { fromMs: NOW - 3_600_000, toMs: NOW }
      const check = async () => {
        const counts = await store.countSeriesByService(range, 60_000)
        const hs = await store.histogramsByService(range, ['total', 'ttft'])
        expect([...counts.keys()].sort()).toEqual(['__overflow__', 'chat', 'embed'])
        expect([...hs.keys()].sort()).toEqual(['__overflow__', 'chat', 'embed'])
        for (const service of ['chat', 'embed', '__overflow__']) {
          expect(counts.get(service)).toEqual(await store.countSeries({ service }, range, 60_000))
          const one = await store.histograms({ service }, range, ['total', 'ttft'])
          for (const m of ['total', 'ttft'] as const) {
            expect(hs.get(service)!.get(m)!.totalCount, `${service} ${m}`).toBe(one.get(m)!.totalCount)
            expect(hs.get(service)!.get(m)!.maxValue).toBe(one.get(m)!.maxValue)
          }
        }
        expect(hs.get('chat')!.get('total')!.totalCount).toBe(2400)
      }
      await check()
      // Rolled up, the service rows of the coarser levels answer (no series id: the service comes with the row).
      const compacted = await store.compact(NOW + 2 * 3_600_000)
      expect(compacted.rolledUp).toBeGreaterThan(0)
      await check()
    })

    it('refuses bad input and a missing token', async () => {
      const bad = await get('/api/v1/fleet?from=yesterday')
      expect(bad.statusCode).toBe(400)
      expect(bad.json().code).toBe('TG_ERR_BAD_REQUEST')
      expect(bad.json().message).toContain('from')
      const reversed = await get('/api/v1/fleet?from=-1h&to=-2h')
      expect(reversed.statusCode).toBe(400)
      expect(reversed.json().message).toContain('from must be before to')
      const unknown = await get('/api/v1/fleet?service=chat')
      expect(unknown.statusCode).toBe(400)
      expect(unknown.json().message).toContain('service')
      expect((await get('/api/v1/fleet', null)).statusCode).toBe(401)
      expect((await get('/api/v1/alerts/deliveries', null)).statusCode).toBe(401)
      expect((await get('/api/v1/alerts/deliveries?limit=0')).statusCode).toBe(400)
    })

    it('lists webhook deliveries with their status, attempts and last error', async () => {
      const empty = (await get('/api/v1/alerts/deliveries')).json()
      expect(empty).toEqual({ receivers: ['ops'], deliveries: [] })
      // chat's errors (1.9% against 0.1% allowed) fire the availability SLO's page tiers, and its 5% over
      // 100 ms the latency SLO's (1% allowed); the receiver answers 500 to the first request, so the first notification waits for a retry.
      answers.push(500)
      const cycle = await setup.engine.evaluate(NOW)
      expect(cycle.failed).toEqual([])
      expect(cycle.notifications).toBeGreaterThan(0)
      const first = (await get('/api/v1/alerts/deliveries')).json()
      expect(first.deliveries).toHaveLength(cycle.notifications)
      const oldest = first.deliveries.at(-1)
      expect(oldest).toMatchObject({
        receiver: 'ops',
        notification: 'firing',
        status: 'retrying',
        attempts: 1,
        lastError: 'HTTP 500',
        deliveredAt: null,
      })
      expect(['chat-availability', 'chat-latency']).toContain(oldest.slo)
      expect(oldest.tier).toMatch(/^(page|ticket)-/)
      expect(Date.parse(oldest.nextAttemptAt)).toBe(NOW + 1000)
      const firing = (await get('/api/v1/alerts?state=firing')).json().alerts
      expect(
        new Set(first.deliveries.map((d: { slo: string; tier: string }) => `${d.slo}/${d.tier}`)),
      ).toEqual(new Set(firing.map((a: { slo: string; tier: string }) => `${a.slo}/${a.tier}`)))
      // Newest first.
      expect(first.deliveries.map((d: { seq: number }) => d.seq)).toEqual(
        [...first.deliveries.map((d: { seq: number }) => d.seq)].sort((a, b) => b - a),
      )
      await setup.engine.deliver(NOW + 2000)
      const after = (await get('/api/v1/alerts/deliveries?limit=1000')).json()
      const retried = after.deliveries.find((d: { seq: number }) => d.seq === oldest.seq)
      expect(retried).toMatchObject({
        status: 'delivered',
        attempts: 2,
        lastError: null,
        nextAttemptAt: null,
        deliveredAt: new Date(NOW + 2000).toISOString(),
      })
      expect(after.deliveries.every((d: { status: string }) => d.status === 'delivered')).toBe(true)
      expect(received).toHaveLength(cycle.notifications + 1)
      expect((await get('/api/v1/alerts/deliveries?limit=1')).json().deliveries).toHaveLength(1)
    })
  })

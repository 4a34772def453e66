import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../../collector/app.js'
import { createStore } from '../../../collector/index.js'
import type { IntervalReport, ReportSeries, Store } from '../../../collector/index.js'
import { createTestDatabase, testDialects } from '../../helpers/dialects.js'
import type { TestDatabase } from '../../helpers/dialects.js'
import { makeReport } from '../../helpers/reports.js'

const READ = 'read-token-0123456789abcdef'
const AGENT = 'agent-token-0123456789abcdef'
const NOW = Date.parse('2026-11-21T12:00:00Z')
const T0 = NOW - 10 * 60_000
const auth = { authorization: `Bearer ${READ}` }
const stat = (min: number, mean: number, max: number, last: number) => ({ min, mean, max, last })

/** A report whose one series carries signals and imported histograms. */
function signalReport(
  seq: number,
  startMs: number,
  extra: Partial<ReportSeries>,
  replica = 'r0',
): IntervalReport {
  const r = makeReport({ seq, startMs, series: [{ labels: { replica } }] })
  return { ...r, series: [{ ...r.series[0]!, ...extra }] }
}

for (const dialect of testDialects())
  describe(`${dialect}: live signals (store and GET /api/v1/signals)`, () => {
    let tdb: TestDatabase
    let store: Store
    let app: FastifyInstance
    beforeEach(async () => {
      tdb = await createTestDatabase(dialect)
      store = await createStore({ url: tdb.url, retention: { '10s': null, '1m': null, '1h': null } })
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

    const post = async (report: IntervalReport, status = 200) => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/reports',
        headers: { authorization: `Bearer ${AGENT}` },
        payload: report,
      })
      expect(res.statusCode, res.body).toBe(status)
      return res.json() as { message?: string }
    }
    const get = async (query: string) => {
      const res = await app.inject({ url: `/api/v1/signals?${query}`, headers: auth })
      expect(res.statusCode, res.body).toBe(200)
      return res.json() as {
        stepMs: number
        series: Array<{
          replica: string
          sources: string[]
          points: Array<{
            t: string
            gauges: Record<string, { min: number; mean: number; max: number; last: number }>
            counters: Record<string, number>
            ratesPerS: Record<string, number>
            byClass: Array<{ priorityClass: number; admitted: number; shed: Record<string, number> }>
          }>
          histograms: Record<
            string,
            {
              precision: string
              count: number
              counts: number[]
              boundsMs: number[]
              p50Ms: number | null
              p99Ms: number | null
              meanMs: number | null
              layouts: number
              otherLayoutsCount: number
              quantilesMs: Array<{ q: number; ms: number }> | null
              points: Array<{ t: string; count: number }>
            }
          >
        }>
      }
    }

    it('stores gauges, counters, classes and sources, folds them per step and rolls them up unchanged', async () => {
      await post(
        signalReport(1, T0, {
          signals: {
            gauges: { running: stat(2, 3, 4, 4), kvCacheUsage: stat(0.2, 0.3, 0.4, 0.4) },
            counters: { outputTokens: 600, inputTokens: 100 },
            byClass: [
              { priorityClass: 1, admitted: 5, shed: { queue_full: 2 } },
              // The proxy's own gauges per class (the demo's and every proxy's reports carry them).
              { priorityClass: 2, inFlight: stat(2, 3, 4, 4), queued: stat(0, 1, 2, 1), admitted: 7 },
            ],
            sources: ['scrape:vllm'],
          },
        }),
      )
      await post(
        signalReport(2, T0 + 5000, {
          signals: {
            gauges: { running: stat(4, 5, 8, 6), kvCacheUsage: stat(0.4, 0.5, 0.6, 0.6) },
            counters: { outputTokens: 400, inputTokens: 50 },
            byClass: [
              { priorityClass: 1, admitted: 3, shed: { queue_full: 1, deadline: 1 } },
              { priorityClass: 2, inFlight: stat(4, 5, 8, 6), queued: stat(1, 1, 1, 1), admitted: 1 },
            ],
            sources: ['scrape:vllm', 'proxy'],
          },
        }),
      )
      const check = async () => {
        const body = await get(`from=${T0}&to=${T0 + 60_000}&step=1m`)
        expect(body.stepMs).toBe(60_000)
        expect(body.series).toHaveLength(1)
        const s = body.series[0]!
        expect(s.sources).toEqual(['proxy', 'scrape:vllm'])
        expect(s.points).toHaveLength(1)
        const p = s.points[0]!
        expect(p.gauges['running']).toEqual(stat(2, 4, 8, 6))
        expect(p.gauges['kvCacheUsage']!.mean).toBeCloseTo(0.4, 9)
        expect(p.counters).toEqual({ outputTokens: 1000, inputTokens: 150 })
        expect(p.ratesPerS['outputTokens']).toBeCloseTo(1000 / 60, 9)
        expect(p.byClass).toEqual([
          {
            priorityClass: 1,
            admitted: 8,
            inFlight: null,
            queued: null,
            shed: { queue_full: 3, deadline: 1 },
          },
          // Merged as the gauges are, and only the stat's four figures (the store's own lastMs stays inside).
          { priorityClass: 2, admitted: 8, inFlight: stat(2, 4, 8, 6), queued: stat(0, 1, 2, 1), shed: {} },
        ])
      }
      await check()
      const { rolledUp } = await store.compact(NOW + 3600_000 * 2)
      expect(rolledUp).toBeGreaterThan(0)
      await check()
    })

    it('serves imported histograms as buckets, never as HDR, with estimates and layout changes reported', async () => {
      const ttft = { boundsMs: [10, 50, 100], counts: [2, 6, 2, 0], sumMs: 400, source: 'scrape:vllm' }
      await post(
        signalReport(1, T0, {
          bucketHistograms: { ttft, tpot: { ...ttft, counts: [10, 0, 0, 0], sumMs: 50 } },
        }),
      )
      await post(signalReport(2, T0 + 5000, { bucketHistograms: { ttft } }))
      // The server restarted with other buckets: kept apart, reported, not re-binned.
      await post(
        signalReport(3, T0 + 10_000, {
          bucketHistograms: {
            ttft: { boundsMs: [25, 250], counts: [1, 0, 0], sumMs: 20, source: 'scrape:vllm' },
          },
        }),
      )
      // Triton-style: count and sum only, and a summary.
      await post(
        signalReport(4, T0 + 15_000, {
          bucketHistograms: {
            queue: { boundsMs: [], counts: [4], sumMs: 2, source: 'scrape:triton' },
            total: {
              boundsMs: [],
              counts: [3],
              sumMs: 30,
              quantilesMs: [
                { q: 0.5, ms: 9 },
                { q: 0.99, ms: 14 },
              ],
              source: 'scrape:triton',
            },
          },
        }),
      )
      const check = async () => {
        const body = await get(`from=${T0}&to=${T0 + 60_000}&step=10s`)
        const h = body.series[0]!.histograms
        expect(h['ttft']!.precision).toBe('buckets')
        expect(h['ttft']!.boundsMs).toEqual([10, 50, 100])
        expect(h['ttft']!.counts).toEqual([4, 12, 4, 0])
        expect(h['ttft']!.count).toBe(20)
        expect(h['ttft']!.layouts).toBe(2)
        expect(h['ttft']!.otherLayoutsCount).toBe(1)
        // rank 10 of 20: 6 below, 12 in (10, 50] → 10 + 40 · 6/12 = 30
        expect(h['ttft']!.p50Ms).toBeCloseTo(30, 9)
        expect(h['ttft']!.points.map((p) => p.count)).toEqual([20, 1])
        expect(h['tpot']!.p99Ms).toBeCloseTo(9.9, 9)
        expect(h['queue']).toMatchObject({ precision: 'mean', count: 4, meanMs: 0.5, p50Ms: null })
        expect(h['total']).toMatchObject({ precision: 'summary', count: 3, p50Ms: 9, p99Ms: 14 })
      }
      await check()
      await store.compact(NOW + 3600_000 * 2)
      const body = await get(`from=${T0}&to=${T0 + 60_000}&step=1m`)
      expect(body.series[0]!.histograms['ttft']).toMatchObject({
        counts: [4, 12, 4, 0],
        layouts: 2,
        otherLayoutsCount: 1,
      })
    })

    it('filters by labels and refuses malformed histograms with a 400 naming the field', async () => {
      await post(signalReport(1, T0, { signals: { gauges: { waiting: stat(1, 1, 1, 1) } } }, 'r0'))
      await post(signalReport(2, T0, { signals: { gauges: { waiting: stat(7, 7, 7, 7) } } }, 'r1'))
      const body = await get(`replica=r1&from=${T0}&to=${T0 + 60_000}`)
      expect(body.series.map((s) => s.replica)).toEqual(['r1'])
      expect(body.series[0]!.points[0]!.gauges['waiting']!.last).toBe(7)
      const bad = await post(
        signalReport(3, T0, {
          bucketHistograms: { ttft: { boundsMs: [50, 10], counts: [1, 1, 0], sumMs: 1 } },
        }),
        400,
      )
      expect(bad.message).toContain('series[0].bucketHistograms.ttft: boundsMs must ascend')
      const short = await post(
        signalReport(4, T0, { bucketHistograms: { ttft: { boundsMs: [10], counts: [1], sumMs: 1 } } }),
        400,
      )
      expect(short.message).toContain('counts must have one entry per bound plus +Inf')
      const res = await app.inject({ url: '/api/v1/signals?step=banana', headers: auth })
      expect(res.statusCode).toBe(400)
      expect(res.json()).toMatchObject({ code: 'TG_ERR_BAD_REQUEST' })
      expect((await app.inject({ url: '/api/v1/signals' })).statusCode).toBe(401)
      const spec = (await app.inject({ url: '/api/v1/openapi.json', headers: auth })).json() as {
        paths: Record<string, unknown>
      }
      expect(spec.paths['/api/v1/signals']).toBeDefined()
    })
  })

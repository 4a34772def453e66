import { describe, expect, it } from 'vitest'
import { bandCounts, logBandEdgesMs } from '../../../collector/index.js'
import { TEST_TOKENS, useTestCollector } from '../../helpers/collector-app.js'
import { testDialects } from '../../helpers/dialects.js'
import { histogramOf, latenciesUs, makeReport, rng } from '../../helpers/reports.js'

const { read: READ, agent: AGENT } = TEST_TOKENS
const NOW = Date.parse('2026-11-23T12:00:00Z')
const T0 = NOW - 10 * 60_000

describe('logBandEdgesMs', () => {
  it('puts edges on the 10^(k/n) grid from at or below the minimum to above the maximum', () => {
    expect(logBandEdgesMs(1.2, 50, 2)).toEqual([1, 3.16, 10, 31.6, 100])
    expect(logBandEdgesMs(0.5, 0.9, 1)).toEqual([0.1, 1])
    expect(logBandEdgesMs(10, 10, 5)).toEqual([10, 15.8])
    expect(logBandEdgesMs(2, 2, 4)).toEqual([1.78, 3.16])
  })
  it('is empty without data', () => {
    expect(logBandEdgesMs(Infinity, -Infinity, 5)).toEqual([])
    expect(logBandEdgesMs(0, 0, 5)).toEqual([])
  })
})

describe('bandCounts', () => {
  it('counts each sample in the band that holds it, in integers that sum to the total', () => {
    const h = histogramOf([1500, 2500, 7000, 20_000, 40_000, 50_000, 1200])
    expect(bandCounts(h, [1, 3.16, 10, 31.6, 100])).toEqual([3, 1, 1, 2])
    // An edge on a power of two (a bucket boundary) splits exactly: 2.048 ms = 2048 µs.
    expect(bandCounts(histogramOf([2047, 2048, 2049]), [1, 2.048, 4])).toEqual([1, 2])
    // Outside the edges: clamped into the first and last bands.
    expect(bandCounts(histogramOf([100, 900_000]), [1, 10])).toEqual([2])
    expect(bandCounts(h, [])).toEqual([])
  })
  it('sums to the total count on many log-normal samples', () => {
    const values = latenciesUs(rng(7), 5000, 20_000)
    const h = histogramOf(values)
    const edges = logBandEdgesMs(h.minValue / 1000, h.maxValue / 1000, 5)
    const counts = bandCounts(h, edges)
    expect(counts.reduce((a, b) => a + b, 0)).toBe(5000)
    // Away from edges (≥ 1% inside), each band holds exactly the samples a plain count finds.
    const inside = (lo: number, hi: number) =>
      values.filter((v) => v / 1000 >= lo * 1.01 && v / 1000 < hi * 0.99).length
    const near = (lo: number, hi: number) =>
      values.filter((v) => v / 1000 >= lo * 0.99 && v / 1000 < hi * 1.01).length
    counts.forEach((c, k) => {
      expect(c).toBeGreaterThanOrEqual(inside(edges[k]!, edges[k + 1]!))
      expect(c).toBeLessThanOrEqual(near(edges[k]!, edges[k + 1]!))
    })
  })
})

for (const dialect of testDialects())
  describe(`${dialect}: GET /api/v1/heatmap`, () => {
    const c = useTestCollector(dialect, NOW)
    const get = (query: string, token: string = READ) =>
      c.app.inject({ url: `/api/v1/heatmap?${query}`, headers: { authorization: `Bearer ${token}` } })

    it('answers the exact counts per band and step from the merged histograms of the selected series', async () => {
      await c.post(
        makeReport({
          seq: 1,
          startMs: T0,
          series: [
            { labels: { replica: 'r0' }, samples: { total: [1500, 2500], ttft: [900] } },
            { labels: { replica: 'r1' }, samples: { total: [7000, 20_000] } },
            { labels: { service: 'embed' }, samples: { total: [900_000, 900_000] } },
          ],
        }),
      )
      await c.post(makeReport({ seq: 2, startMs: T0 + 5000, series: [{ samples: { total: [1200] } }] }))
      await c.post(
        makeReport({ seq: 3, startMs: T0 + 120_000, series: [{ samples: { total: [40_000, 50_000] } }] }),
      )
      const res = await get(`service=chat&from=${T0}&to=${NOW}&step=1m&bandsPerDecade=2`)
      expect(res.statusCode, res.body).toBe(200)
      expect(res.json()).toEqual({
        from: new Date(T0).toISOString(),
        to: new Date(NOW).toISOString(),
        phase: 'total',
        stepMs: 60_000,
        bandsPerDecade: 2,
        bands: [
          { lowMs: 1, highMs: 3.16 },
          { lowMs: 3.16, highMs: 10 },
          { lowMs: 10, highMs: 31.6 },
          { lowMs: 31.6, highMs: 100 },
        ],
        maxCount: 3,
        points: [
          { t: new Date(T0).toISOString(), count: 5, counts: [3, 1, 1, 0] },
          { t: new Date(T0 + 120_000).toISOString(), count: 2, counts: [0, 0, 0, 2] },
        ],
      })
      // One replica and another phase select their own samples.
      const r1 = (await get(`service=chat&replica=r1&from=${T0}&step=1m&bandsPerDecade=1`)).json()
      expect(r1).toMatchObject({
        bands: [
          { lowMs: 1, highMs: 10 },
          { lowMs: 10, highMs: 100 },
        ],
        points: [{ counts: [1, 1] }],
      })
      const ttft = (await get(`service=chat&phase=ttft&from=${T0}&step=1m`)).json()
      expect(ttft).toMatchObject({ phase: 'ttft', bands: [{ lowMs: 0.631, highMs: 1 }], maxCount: 1 })
      // Nothing in range: no bands, no points, not an error.
      expect((await get(`service=chat&model=nope&from=${T0}`)).json()).toMatchObject({
        bands: [],
        points: [],
        maxCount: 0,
      })
    })

    it('needs a read token and refuses bad input with a clear 4xx', async () => {
      await c.post(makeReport({ seq: 1, startMs: T0, series: [{ samples: { total: [1500] } }] }))
      expect((await c.app.inject({ url: '/api/v1/heatmap' })).statusCode).toBe(401)
      expect((await get('service=chat', AGENT)).statusCode).toBe(403)
      for (const [query, text] of [
        ['bandsPerDecade=0', 'bandsPerDecade'],
        ['bandsPerDecade=2.5', 'bandsPerDecade'],
        ['bandsPerDecade=21', 'bandsPerDecade'],
        ['phase=nope', 'phase'],
        ['step=5ms', 'step'],
        ['from=yesterday', 'from'],
      ]) {
        const res = await get(`service=chat&${query}`)
        expect(res.statusCode, query).toBe(400)
        expect(res.json().message, query).toContain(text)
      }
      const typo = await get(`service=chta&from=${T0}`)
      expect(typo.statusCode).toBe(404)
      expect(typo.json().message).toContain("'chat'")
    })
  })

// Polling the chart routes with ETags (issue #17): a relative range's end is aligned down to 10 s (the finest bucket;
// the step when shorter), so two polls within those 10 s answer the same body and the second gets a 304; a poll after
// new data in the next 10 s gets a 200.
// Through buildCollector + app.inject on the real store, SQLite and PostgreSQL, with reports sent as agents do.
import { describe, expect, it } from 'vitest'
import type { IntervalReport } from '../../../collector/index.js'
import { alignedRange } from '../../../collector/time.js'
import { TEST_TOKENS, useTestCollector } from '../../helpers/collector-app.js'
import { testDialects } from '../../helpers/dialects.js'
import { makeReport } from '../../helpers/reports.js'

/** On a minute boundary: the 1 h fleet and figures ranges step by 1 min, the 5 min charts by 10 s. */
const START = Date.parse('2026-11-21T12:00:00Z')

/** One 5 s report of chat on r0 starting at `startMs`, with latencies, requests and a running-requests gauge. */
function report(seq: number, startMs: number): IntervalReport {
  const r = makeReport({
    seq,
    startMs,
    series: [{ labels: { service: 'chat', replica: 'r0' }, samples: { total: [20_000, 40_000] }, ok: 2 }],
  })
  const v = 3 + seq
  return {
    ...r,
    series: r.series.map((s) => ({
      ...s,
      signals: { gauges: { running: { min: v, mean: v, max: v, last: v } } },
    })),
  }
}

describe('alignedRange', () => {
  it('aligns a relative end down to the step, moves a relative start with it, keeps absolute times', () => {
    const range = { fromMs: 5_000, toMs: 125_000 }
    expect(alignedRange(range, {}, 60_000)).toEqual({ fromMs: 0, toMs: 120_000 })
    expect(alignedRange(range, { from: '-2m', to: 'now' }, 60_000)).toEqual({ fromMs: 0, toMs: 120_000 })
    expect(alignedRange(range, { from: '-2m', to: '-10s' }, 60_000)).toEqual({ fromMs: 0, toMs: 120_000 })
    // Never more than 10 s behind the clock, whatever the step (a 1 h range steps by 1 min), nor a step when shorter.
    expect(alignedRange({ fromMs: 0, toMs: 3_659_000 }, {}, 60_000)).toEqual({
      fromMs: -9_000,
      toMs: 3_650_000,
    })
    expect(alignedRange({ fromMs: 0, toMs: 3_659_000 }, {}, 5_000)).toEqual({
      fromMs: -4_000,
      toMs: 3_655_000,
    })
    // An absolute start stays; an absolute end leaves the range as given.
    expect(alignedRange(range, { from: '5000' }, 60_000)).toEqual({ fromMs: 5_000, toMs: 120_000 })
    expect(alignedRange(range, { from: '-2m', to: '125000' }, 60_000)).toEqual(range)
    // Alignment would empty it: kept as given.
    expect(alignedRange({ fromMs: 121_000, toMs: 125_000 }, { from: '121000' }, 60_000)).toEqual({
      fromMs: 121_000,
      toMs: 125_000,
    })
  })
})

for (const dialect of testDialects())
  describe(`${dialect}: conditional polling of the chart routes`, () => {
    let now = START
    const c = useTestCollector(dialect, () => now)
    const poll = (url: string, etag?: string) =>
      c.app.inject({
        url,
        headers: { authorization: `Bearer ${TEST_TOKENS.read}`, ...(etag ? { 'if-none-match': etag } : {}) },
      })

    // Each answer ends on a multiple of 10 s (the 1 h ranges step by 1 min, the 5 min charts by 10 s).
    const ROUTES: ReadonlyArray<{ url: string; stepMs: number }> = [
      { url: '/api/v1/fleet?from=-1h&to=now', stepMs: 10_000 },
      { url: '/api/v1/timeseries?service=chat&from=-5m', stepMs: 10_000 },
      { url: '/api/v1/signals?service=chat&from=-5m', stepMs: 10_000 },
      { url: '/api/v1/figures?window=1h', stepMs: 10_000 },
    ]

    for (const { url, stepMs } of ROUTES)
      it(`${url.split('?')[0]}: 304 within 10 s, 200 after new data in the next 10 s`, async () => {
        now = START - 30_000
        await c.post(report(1, START - 40_000))
        now = START + 1_000
        const first = await poll(url)
        expect(first.statusCode, first.body).toBe(200)
        const etag = String(first.headers.etag)
        // The answer ends at the last whole 10 s, not at the clock.
        expect(first.json().to).toBe(new Date(START).toISOString())

        // Later in the same 10 s, nothing new: the same body, so 304 with no body.
        now = START + stepMs - 1_000
        const again = await poll(url, etag)
        expect(again.statusCode).toBe(304)
        expect(again.body).toBe('')

        // New data, and the clock in the next 10 s: a new body.
        await c.post(report(2, START + stepMs - 5_000))
        now = START + stepMs + 2_000
        const later = await poll(url, etag)
        expect(later.statusCode).toBe(200)
        expect(later.headers.etag).not.toBe(etag)
        expect(later.json().to).toBe(new Date(START + stepMs).toISOString())
        expect(later.body).not.toBe(first.body)
      })

    it('keeps an absolute range as given', async () => {
      now = START + 1_000
      await c.post(report(1, START - 40_000))
      const from = START - 300_000
      const res = await poll(`/api/v1/timeseries?service=chat&from=${from}&to=${START + 1_000}`)
      expect(res.statusCode, res.body).toBe(200)
      expect(res.json().to).toBe(new Date(START + 1_000).toISOString())
      expect(res.json().from).toBe(new Date(from).toISOString())
    })
  })

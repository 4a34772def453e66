import { describe, expect, it } from 'vitest'
import { requestPoint } from '../../../collector/routes/requests.js'
import { TEST_TOKENS, useTestCollector } from '../../helpers/collector-app.js'
import { testDialects } from '../../helpers/dialects.js'
import { makeReport } from '../../helpers/reports.js'

const { read: READ, agent: AGENT } = TEST_TOKENS
const NOW = Date.parse('2026-11-23T12:00:00Z')
const T0 = NOW - 10 * 60_000

describe('requestPoint', () => {
  it('gives the error ratio over served requests and the shed ratio over all, null without requests', () => {
    const p = requestPoint(T0, { ok: 97, error: 3, shed: 25, errorClasses: { timeout: 3 }, outputTokens: 9 })
    expect(p).toEqual({
      t: new Date(T0).toISOString(),
      ok: 97,
      error: 3,
      shed: 25,
      errorClasses: { timeout: 3 },
      errorRatio: 0.03,
      shedRatio: 0.2,
    })
    const none = requestPoint(T0, { ok: 0, error: 0, shed: 0, errorClasses: {}, outputTokens: 0 })
    expect([none.errorRatio, none.shedRatio]).toEqual([null, null])
    expect(
      requestPoint(T0, { ok: 0, error: 0, shed: 4, errorClasses: {}, outputTokens: 0 }).errorRatio,
    ).toBeNull()
  })
})

for (const dialect of testDialects())
  describe(`${dialect}: GET /api/v1/requests`, () => {
    const c = useTestCollector(dialect, NOW)
    const get = (query: string, token: string = READ) =>
      c.app.inject({ url: `/api/v1/requests?${query}`, headers: { authorization: `Bearer ${token}` } })

    it('answers the outcomes per bucket of the selected series, leaving out buckets without requests', async () => {
      const reports = [
        makeReport({ seq: 1, startMs: T0, series: [{ ok: 90, error: 10, errorClasses: { timeout: 10 } }] }),
        makeReport({ seq: 2, startMs: T0 + 5000, series: [{ ok: 50, shed: 50 }] }),
        // Two minutes later, and another service that must not count.
        makeReport({
          seq: 3,
          startMs: T0 + 120_000,
          series: [
            { ok: 8, error: 2 },
            { labels: { service: 'embed' }, ok: 1000, error: 1000 },
          ],
        }),
      ]
      for (const r of reports) await c.post(r)
      const res = await get(`service=chat&from=${T0}&to=${NOW}&step=1m`)
      expect(res.statusCode, res.body).toBe(200)
      const body = res.json() as { stepMs: number; points: Array<Record<string, unknown>> }
      expect(body.stepMs).toBe(60_000)
      expect(body.points).toEqual([
        {
          t: new Date(T0).toISOString(),
          ok: 140,
          error: 10,
          shed: 50,
          errorClasses: { timeout: 10 },
          errorRatio: 10 / 150,
          shedRatio: 50 / 200,
        },
        {
          t: new Date(T0 + 120_000).toISOString(),
          ok: 8,
          error: 2,
          shed: 0,
          errorClasses: {},
          errorRatio: 0.2,
          shedRatio: 0,
        },
      ])
      // Nothing reported for an unknown model: no points, not an error.
      expect((await get(`service=chat&model=nope&from=${T0}`)).json()).toMatchObject({ points: [] })
    })

    it('needs a read token and refuses bad ranges and steps with a clear 400', async () => {
      expect((await get('service=chat', 'wrong-token-0123456789')).statusCode).toBe(401)
      expect((await get('service=chat', AGENT)).statusCode).toBe(403)
      const backwards = await get(`from=${NOW}&to=${T0}`)
      expect(backwards.statusCode).toBe(400)
      expect(backwards.json().message).toContain('from must be before to')
      const step = await get('step=5ms')
      expect(step.statusCode).toBe(400)
      expect(step.json().message).toContain('step:')
      expect((await get('bogus=1')).statusCode).toBe(400)
    })
  })

import { describe, expect, it } from 'vitest'
import { DEFAULT_ROLLUPS } from '../../collector/index.js'
import { buildCollector } from '../../collector/app.js'
import { resolveStepMs, rollupAlignedSteps } from '../../collector/time.js'
import { testDialects } from '../helpers/dialects.js'
import { useTestStore } from '../helpers/test-store.js'
import { makeReport } from '../helpers/reports.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const LEVELS = DEFAULT_ROLLUPS.map((l) => l.stepMs)

describe('default time-series steps', () => {
  it('snap up to steps aligned with the rollup levels', () => {
    const steps = rollupAlignedSteps(LEVELS)
    expect(steps).toEqual(
      expect.arrayContaining([10_000, MIN, 5 * MIN, 15 * MIN, HOUR, 3 * HOUR, 12 * HOUR, DAY, 7 * DAY]),
    )
    // Every candidate is a multiple of a level's step and divides the next level's step.
    for (const s of steps.filter((s) => s < DAY)) {
      const level = [...LEVELS].reverse().find((l) => s % l === 0)!
      const next = LEVELS[LEVELS.indexOf(level) + 1]!
      expect(next % s).toBe(0)
    }
    const at = (spanMs: number) => resolveStepMs(undefined, { fromMs: 0, toMs: spanMs }, LEVELS)
    expect(at(7 * DAY)).toBe(3 * HOUR) // not 2.8 h, which splits hours and reads 1 min rows at every edge
    expect(at(HOUR)).toBe(MIN)
    expect(at(30 * DAY)).toBe(12 * HOUR)
    expect(at(DAY)).toBe(30 * MIN)
    // An explicit step is kept as asked; without levels the old default (a multiple of 10 s) stays.
    expect(resolveStepMs('7m', { fromMs: 0, toMs: 7 * DAY }, LEVELS)).toBe(7 * MIN)
    expect(resolveStepMs(undefined, { fromMs: 0, toMs: 7 * DAY })).toBe(10_080_000)
  })
})

for (const dialect of testDialects())
  describe(`${dialect}: /timeseries default step`, () => {
    const ctx = useTestStore(dialect)
    it('states the snapped step and answers from whole rollup rows', async () => {
      const now = Date.UTC(2026, 10, 21, 13, 37, 25)
      const store = ctx.store
      for (let i = 0; i < 30; i++) {
        const startMs = now - 7 * DAY + MIN + i * 5 * HOUR
        await store.ingest(
          makeReport({ seq: i + 1, startMs, series: [{ samples: { total: [1000 + i, 2000] } }] }),
          startMs + 5000,
        )
      }
      await store.compact(now)
      const app = await buildCollector(
        {
          tokens: [{ token: 'read', scope: 'read' }],
          reportBodyLimitBytes: 1 << 20,
          bodyLimitBytes: 1 << 20,
        },
        { store, clock: () => now },
      )
      try {
        const res = await app.inject({
          url: '/api/v1/timeseries?service=chat&from=-7d',
          headers: { authorization: 'Bearer read' },
        })
        expect(res.statusCode).toBe(200)
        const body = res.json() as { stepMs: number; points: Array<{ t: string; count: number }> }
        expect(body.stepMs).toBe(3 * HOUR)
        expect(body.points.reduce((n, p) => n + p.count, 0)).toBe(60)
        for (const p of body.points) expect(Date.parse(p.t) % (3 * HOUR)).toBe(0)
      } finally {
        await app.close()
      }
    })
  })

import { describe, expect, it } from 'vitest'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { fingerprint, histogramOf, latenciesUs, makeReport, rng } from '../../helpers/reports.js'

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0)

for (const dialect of testDialects())
  describe(`${dialect}: store queries`, () => {
    const db = useTestStore(dialect)

    it('merged quantiles equal those of the union of two agents’ samples', async () => {
      const next = rng(7)
      const a = latenciesUs(next, 3000, 20_000)
      const b = latenciesUs(next, 2000, 80_000)
      await db.store.ingest(
        makeReport({ instance: 'a', seq: 1, startMs: T0, series: [{ samples: { kernel: a } }] }),
        T0,
      )
      await db.store.ingest(
        makeReport({
          instance: 'b',
          seq: 1,
          startMs: T0 + 5000,
          series: [{ labels: { replica: 'r1' }, samples: { kernel: b } }],
        }),
        T0,
      )
      const merged = (
        await db.store.histograms({ service: 'chat' }, { fromMs: T0, toMs: T0 + 10_000 }, ['kernel'])
      ).get('kernel')!
      const union = histogramOf([...a, ...b])
      expect(fingerprint(merged)).toBe(fingerprint(union))
      for (const p of [50, 90, 99, 99.9])
        expect(merged.getValueAtPercentile(p)).toBe(union.getValueAtPercentile(p))
      expect(merged.totalCount).toBe(5000)
    })

    it('counts a bucket in a range when its start is in the range', async () => {
      // Reports at T0 and T0+5 s share the 10 s bucket T0; T0+10 s starts the next one.
      for (const [seq, offset, v] of [
        [1, 0, 1000],
        [2, 5000, 2000],
        [3, 10_000, 3000],
      ] as const)
        await db.store.ingest(
          makeReport({ seq, startMs: T0 + offset, series: [{ samples: { total: [v] }, ok: 1 }] }),
          T0,
        )
      const total = async (fromMs: number, toMs: number) =>
        (await db.store.histograms({}, { fromMs, toMs }, ['total'])).get('total')!
      expect(fingerprint(await total(T0, T0 + 10_000))).toBe(fingerprint(histogramOf([1000, 2000])))
      expect(fingerprint(await total(T0 + 1, T0 + 20_000))).toBe(fingerprint(histogramOf([3000])))
      expect(fingerprint(await total(T0, T0 + 10_001))).toBe(fingerprint(histogramOf([1000, 2000, 3000])))
      expect((await total(T0 - 10_000, T0)).totalCount).toBe(0)
      expect((await total(T0 + 10_000, T0 + 10_000)).totalCount).toBe(0)
      expect((await db.store.counts({}, { fromMs: T0 + 9_999, toMs: T0 + 10_001 })).ok).toBe(1)
    })

    it('buckets timeseries and countSeries by step, omitting empty buckets', async () => {
      const offsets = [0, 5_000, 25_000, 65_000, 130_000, 185_000]
      for (const [i, offset] of offsets.entries())
        await db.store.ingest(
          makeReport({
            seq: i + 1,
            startMs: T0 + offset,
            series: [
              { samples: { tpot: [(i + 1) * 100] }, ok: i + 1, shed: 1, errorClasses: { [`c${i % 2}`]: 1 } },
            ],
          }),
          T0,
        )
      const range = { fromMs: T0, toMs: T0 + 240_000 }
      const series = await db.store.timeseries({}, range, 'tpot', 60_000)
      expect(series.map((p) => p.tMs)).toEqual([T0, T0 + 60_000, T0 + 120_000, T0 + 180_000])
      expect(series.map((p) => fingerprint(p.histogram))).toEqual(
        [[100, 200, 300], [400], [500], [600]].map((v) => fingerprint(histogramOf(v))),
      )
      const counts = await db.store.countSeries({}, range, 60_000)
      expect(counts.map((p) => [p.tMs, p.counts.ok, p.counts.shed])).toEqual([
        [T0, 6, 3],
        [T0 + 60_000, 4, 1],
        [T0 + 120_000, 5, 1],
        [T0 + 180_000, 6, 1],
      ])
      expect(counts[0]!.counts.errorClasses).toEqual({ c0: 2, c1: 1 })
      // A step below the finest is raised to it; an odd step is rounded up to a multiple of it.
      expect((await db.store.timeseries({}, range, 'tpot', 1)).map((p) => p.tMs)).toEqual(
        [0, 20_000, 60_000, 130_000, 180_000].map((o) => T0 + o),
      )
      expect((await db.store.countSeries({}, range, 95_000)).map((p) => p.tMs)).toEqual(
        [0, 100_000].map((o) => Math.floor((T0 + o) / 100_000) * 100_000),
      )
      await expect(db.store.timeseries({}, range, 'tpot', 0)).rejects.toMatchObject({
        code: 'TG_ERR_BAD_REQUEST',
      })
    })
  })

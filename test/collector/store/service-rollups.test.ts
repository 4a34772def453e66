import { describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { mergeHistograms } from '../../../collector/index.js'
import type { Store } from '../../../collector/index.js'
import { storeInternals } from '../../../collector/store/sql-store.js'
import { down, up } from '../../../migrations/2026-11-23T1000_service_rollups.js'
import * as serviceCounts from '../../../migrations/2026-11-25T1000_service_counts.js'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { fingerprint, histogramOf, latenciesUs, makeReport, rng } from '../../helpers/reports.js'
import { toLegacyFinestRows } from '../../helpers/legacy-rows.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const T0 = Date.UTC(2026, 10, 1, 0, 0, 0)
const REPLICAS = ['r0', 'r1', 'r2']

/** Three replicas of `chat` and one of `search`, one report per replica every `everyMs` over `[fromMs, toMs)`. */
async function fill(
  store: Store,
  fromMs: number,
  toMs: number,
  everyMs: number,
  seqBase = 0,
): Promise<number[]> {
  const next = rng(fromMs % 9973)
  const all: number[] = []
  let seq = seqBase
  for (let t = fromMs; t < toMs; t += everyMs) {
    const series = [
      ...REPLICAS.map((replica) => ({ service: 'chat', replica })),
      { service: 'search', replica: 'r0' },
    ].map((labels) => {
      const total = latenciesUs(next, 5, labels.service === 'chat' ? 40_000 : 9_000)
      if (labels.service === 'chat') all.push(...total)
      return { labels, samples: { total, queue: total.map((v) => v / 10) } }
    })
    expect((await store.ingest(makeReport({ seq: ++seq, startMs: t, series }), t + 5000)).kind).toBe('stored')
  }
  return all
}

/** The per-replica answer: each replica queried on its own (never the service rows), merged. */
async function perReplica(store: Store, fromMs: number, toMs: number) {
  const parts = await Promise.all(
    REPLICAS.map(async (replica) =>
      (await store.histograms({ service: 'chat', replica }, { fromMs, toMs }, ['total'])).get('total')!,
    ),
  )
  return mergeHistograms(parts)
}

for (const dialect of testDialects())
  describe(`${dialect}: service rollups`, () => {
    const ctx = useTestStore(dialect)

    it('answers a service query from service rows equal to the merge of its replicas, on every level', async () => {
      const store = ctx.store
      const samples = await fill(store, T0, T0 + 2 * DAY, 20 * MIN)
      await store.compact(T0 + 3 * DAY)
      const db = storeInternals(store)!.db
      const levels = await db
        .selectFrom('tg_hist_service')
        .select(['step_ms', (eb) => eb.fn.countAll<number>().as('n')])
        .groupBy('step_ms')
        .orderBy('step_ms')
        .execute()
      expect(levels.map((l) => Number(l.step_ms))).toEqual([10_000, MIN, HOUR, DAY])
      for (const [fromMs, toMs] of [
        [T0, T0 + 2 * DAY],
        [T0 + 37 * MIN, T0 + DAY + 5 * HOUR + 10_000],
      ] as const) {
        const got = (await store.histograms({ service: 'chat' }, { fromMs, toMs }, ['total'])).get('total')!
        expect(fingerprint(got)).toBe(fingerprint(await perReplica(store, fromMs, toMs)))
      }
      const whole = (
        await store.histograms({ service: 'chat' }, { fromMs: T0, toMs: T0 + 2 * DAY }, ['total'])
      ).get('total')!
      expect(fingerprint(whole)).toBe(fingerprint(histogramOf(samples)))
      // All services: the service rows of both, plus nothing twice.
      const everything = (await store.histograms({}, { fromMs: T0, toMs: T0 + 2 * DAY }, ['total'])).get(
        'total',
      )!
      expect(everything.totalCount).toBe(samples.length * (4 / 3))
    })

    it('counts reports that arrive after their bucket was rolled up', async () => {
      const store = ctx.store
      await fill(store, T0, T0 + 3 * HOUR, 10 * MIN)
      await store.compact(T0 + 4 * HOUR)
      await fill(store, T0 + HOUR, T0 + HOUR + 30 * MIN, 10 * MIN, 1000) // late
      const range = { fromMs: T0, toMs: T0 + 3 * HOUR }
      const before = (await store.histograms({ service: 'chat' }, range, ['total'])).get('total')!
      expect(fingerprint(before)).toBe(fingerprint(await perReplica(store, range.fromMs, range.toMs)))
      await store.compact(T0 + 5 * HOUR)
      const after = (await store.histograms({ service: 'chat' }, range, ['total'])).get('total')!
      expect(fingerprint(after)).toBe(fingerprint(before))
      const series = await store.timeseries({ service: 'chat' }, range, 'total', HOUR)
      expect(series.reduce((n, p) => n + p.histogram.totalCount, 0)).toBe(before.totalCount)
    })

    it('the service-counts migration builds service counters and finest service rows from stored rows', async () => {
      const store = ctx.store
      let seq = 0
      for (let t = T0; t < T0 + 3 * DAY; t += 45 * MIN) {
        const series = ['r0', 'r1', 'r2'].map((replica, i) => ({
          labels: { service: i < 2 ? 'chat' : 'search', replica },
          samples: { total: [1000 * (i + 1), 50_000] },
          ok: 3 + i,
          error: i,
          shed: 1,
          errorClasses: { timeout: i },
        }))
        await store.ingest(makeReport({ seq: ++seq, startMs: t, series }), t + 5000)
      }
      // The migration ran on stores whose finest per-replica rows were tg_hist/tg_count rows (before packs).
      const db = storeInternals(store)!.db
      expect(await toLegacyFinestRows(db)).toBeGreaterThan(0)
      await store.compact(T0 + 3 * DAY - HOUR)
      const range = { fromMs: T0 + 7 * MIN, toMs: T0 + 3 * DAY }
      const perReplica = await Promise.all(
        ['r0', 'r1'].map((replica) => store.counts({ service: 'chat', replica }, range)),
      )
      const want = {
        counts: await store.counts({ service: 'chat' }, range),
        hist: fingerprint((await store.histograms({ service: 'chat' }, range, ['total'])).get('total')!),
      }
      expect(want.counts.ok).toBe(perReplica[0]!.ok + perReplica[1]!.ok)
      expect(want.counts.error).toBe(perReplica[0]!.error + perReplica[1]!.error)
      expect(want.counts.errorClasses).toEqual({ timeout: perReplica[1]!.errorClasses.timeout })
      await serviceCounts.down(db as never)
      await serviceCounts.up(db as never)
      expect(await store.counts({ service: 'chat' }, range)).toEqual(want.counts)
      expect(fingerprint((await store.histograms({ service: 'chat' }, range, ['total'])).get('total')!)).toBe(
        want.hist,
      )
    })

    it('the migration builds service rows from existing rollups, keeping what each level holds', async () => {
      const store = ctx.store
      await fill(store, T0, T0 + DAY, 30 * MIN)
      await store.compact(T0 + 2 * DAY)
      const range = { fromMs: T0 + 7 * MIN, toMs: T0 + DAY }
      const want = fingerprint((await store.histograms({ service: 'chat' }, range, ['total'])).get('total')!)
      const db = storeInternals(store)!.db
      await serviceCounts.down(db as never)
      await down(db as never)
      await up(db as never)
      await serviceCounts.up(db as never)
      const rows = await sql<{ n: number }>`select count(*) as n from tg_hist_service`.execute(db)
      expect(Number(rows.rows[0]!.n)).toBeGreaterThan(0)
      expect(fingerprint((await store.histograms({ service: 'chat' }, range, ['total'])).get('total')!)).toBe(
        want,
      )
    })
  })

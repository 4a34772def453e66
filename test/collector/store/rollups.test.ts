import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createStore } from '../../../collector/index.js'
import type { Metric, RequestCounts, Store, TimeRange } from '../../../collector/index.js'
import { storeInternals } from '../../../collector/store/sql-store.js'
import { createTestDatabase, testDialects } from '../../helpers/dialects.js'
import type { TestDatabase } from '../../helpers/dialects.js'
import { fingerprint, histogramOf, latenciesUs, makeReport, rng } from '../../helpers/reports.js'

const SEC = 1000
const MIN = 60 * SEC
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const T0 = Date.UTC(2026, 10, 1, 0, 0, 0)
const KEEP_ALL = { '10s': null, '1m': null, '1h': null }

/** One stored report, remembered so the test can compute every answer from the raw samples. */
interface Sent {
  readonly bucketMs: number
  readonly total: readonly number[]
  readonly ok: number
  readonly error: number
}

/** Sends `n` sparse reports from two agents at random 5 s-aligned times in `[fromMs, toMs)`. */
async function sendRandom(
  store: Store,
  seed: number,
  n: number,
  fromMs: number,
  toMs: number,
): Promise<Sent[]> {
  const next = rng(seed)
  const sent: Sent[] = []
  for (let i = 0; i < n; i++) {
    const startMs = fromMs + Math.floor((next() * (toMs - fromMs)) / 5000) * 5000
    const total = latenciesUs(next, 1 + Math.floor(next() * 20), 50_000)
    const ok = 1 + Math.floor(next() * 5)
    const error = Math.floor(next() * 2)
    const outcome = await store.ingest(
      makeReport({
        instance: `seed${seed}-agent${i % 2}`,
        seq: i + 1,
        startMs,
        series: [
          {
            labels: { replica: `r${i % 2}` },
            samples: { total },
            ok,
            error,
            errorClasses: error ? { oom: error } : {},
          },
        ],
      }),
      startMs + 5000,
    )
    expect(outcome.kind).toBe('stored')
    sent.push({ bucketMs: Math.floor(startMs / 10_000) * 10_000, total, ok, error })
  }
  return sent
}

const inRange = (sent: readonly Sent[], r: TimeRange) =>
  sent.filter((s) => s.bucketMs >= r.fromMs && s.bucketMs < r.toMs)

/** Everything the store answers for a range, in comparable form. */
async function snapshot(store: Store, r: TimeRange, stepMs: number) {
  const metrics: Metric[] = ['total']
  const h = (await store.histograms({}, r, metrics)).get('total')!
  const c = await store.counts({ service: 'chat' }, r)
  const ts = await store.timeseries({ service: 'chat' }, r, 'total', stepMs)
  const cs = await store.countSeries({}, r, stepMs)
  return {
    histogram: fingerprint(h),
    counts: c,
    timeseries: ts.map((p) => [p.tMs, fingerprint(p.histogram)]),
    countSeries: cs.map((p) => [p.tMs, p.counts.ok, p.counts.error]),
  }
}

function expected(sent: readonly Sent[], r: TimeRange, stepMs: number) {
  const rows = inRange(sent, r)
  const byStep = new Map<number, Sent[]>()
  for (const s of rows) {
    const t = Math.floor(s.bucketMs / stepMs) * stepMs
    byStep.set(t, [...(byStep.get(t) ?? []), s])
  }
  const steps = [...byStep.entries()].sort((a, b) => a[0] - b[0])
  const error = rows.reduce((n, s) => n + s.error, 0)
  const counts: RequestCounts = {
    ok: rows.reduce((n, s) => n + s.ok, 0),
    error,
    shed: 0,
    errorClasses: error > 0 ? { oom: error } : {},
    outputTokens: 0,
  }
  return {
    histogram: fingerprint(histogramOf(rows.flatMap((s) => s.total))),
    counts,
    timeseries: steps.map(([t, l]) => [t, fingerprint(histogramOf(l.flatMap((s) => s.total)))]),
    countSeries: steps.map(([t, l]) => [
      t,
      l.reduce((n, s) => n + s.ok, 0),
      l.reduce((n, s) => n + s.error, 0),
    ]),
  }
}

/** Ranges that mix levels: day-, hour- and minute-aligned middles with unaligned edges. */
const RANGES: ReadonlyArray<[TimeRange, number]> = [
  [{ fromMs: T0, toMs: T0 + 3 * DAY }, HOUR],
  [{ fromMs: T0 + 7 * MIN + 3 * SEC, toMs: T0 + 2 * DAY + 5 * HOUR + 31 * MIN + 17 * SEC }, DAY],
  [{ fromMs: T0 + DAY - 95 * SEC, toMs: T0 + DAY + HOUR + 95 * SEC }, 90 * SEC],
  [{ fromMs: T0 + 23 * HOUR + 59 * MIN, toMs: T0 + 2 * DAY + MIN }, 7 * MIN],
  [{ fromMs: T0 + 30 * HOUR + 20 * SEC, toMs: T0 + 30 * HOUR + 50 * SEC }, 10 * SEC],
]

for (const dialect of testDialects())
  describe(`${dialect}: store rollups`, () => {
    let tdb: TestDatabase
    let store: Store
    beforeEach(async () => {
      tdb = await createTestDatabase(dialect)
    })
    afterEach(async () => {
      await store.close()
      await tdb.drop()
    })

    it('answers identically before and after compaction, and equal to the raw samples', async () => {
      store = await createStore({ url: tdb.url, retention: KEEP_ALL })
      const sent = await sendRandom(store, 1, 240, T0, T0 + 50 * HOUR)
      for (const [r, step] of RANGES) expect(await snapshot(store, r, step)).toEqual(expected(sent, r, step))

      // Half-way compaction: part of the data rolled up, part not.
      const first = await store.compact(T0 + 26 * HOUR)
      expect(first.rolledUp).toBeGreaterThan(0)
      for (const [r, step] of RANGES) expect(await snapshot(store, r, step)).toEqual(expected(sent, r, step))

      // Late reports into buckets already rolled up, then a full compaction (run twice: idempotent).
      const late = await sendRandom(store, 2, 40, T0, T0 + 26 * HOUR)
      const all = [...sent, ...late]
      for (const [r, step] of RANGES) expect(await snapshot(store, r, step)).toEqual(expected(all, r, step))
      expect((await store.compact(T0 + 5 * DAY)).rolledUp).toBeGreaterThan(0)
      expect(await store.compact(T0 + 5 * DAY)).toEqual({ rolledUp: 0, deleted: 0 })
      for (const [r, step] of RANGES) expect(await snapshot(store, r, step)).toEqual(expected(all, r, step))

      // The coarse levels are now really used: a 3-day query reads a handful of rows.
      const db = storeInternals(store)!.db
      const coarse = await db.selectFrom('tg_hist').select('bucket_ms').where('step_ms', '=', DAY).execute()
      expect(coarse.length).toBeGreaterThanOrEqual(2)
    })

    if (dialect === 'postgres')
      it('stays exact when two collectors compact at once', async () => {
        store = await createStore({ url: tdb.url, retention: KEEP_ALL })
        const other = await createStore({ url: tdb.url, retention: KEEP_ALL })
        try {
          const sent = await sendRandom(store, 3, 200, T0, T0 + 50 * HOUR)
          const results = await Promise.all([other.compact(T0 + 5 * DAY), store.compact(T0 + 5 * DAY)])
          expect(results[0].rolledUp + results[1].rolledUp).toBeGreaterThan(0)
          for (const [r, step] of RANGES)
            expect(await snapshot(other, r, step)).toEqual(expected(sent, r, step))
        } finally {
          await other.close()
        }
      })

    it('deletes rows past retention and keeps their content in coarser levels', async () => {
      store = await createStore({
        url: tdb.url,
        retention: { '10s': 2 * HOUR, '1m': 6 * HOUR, '1h': 2 * DAY, '1d': 5 * DAY },
      })
      const sent = await sendRandom(store, 4, 200, T0, T0 + 24 * HOUR)
      const now = T0 + 25 * HOUR
      const { rolledUp, deleted } = await store.compact(now)
      expect(rolledUp).toBeGreaterThan(0)
      expect(deleted).toBeGreaterThan(0)
      const db = storeInternals(store)!.db
      const old = async (step: number, beforeMs: number) =>
        (
          await db
            .selectFrom('tg_hist')
            .select('bucket_ms')
            .where('step_ms', '=', step)
            .where('bucket_ms', '<', beforeMs)
            .execute()
        ).length
      expect(await old(10 * SEC, now - 2 * HOUR - MIN)).toBe(0)
      expect(await old(MIN, now - 6 * HOUR - HOUR)).toBe(0)

      // Whole-day and hour-aligned ranges are still exact; recent data keeps its 10 s resolution.
      for (const r of [
        { fromMs: T0, toMs: T0 + DAY },
        { fromMs: T0 + 3 * HOUR, toMs: T0 + 17 * HOUR },
        { fromMs: T0 + 23 * HOUR + 10 * SEC, toMs: T0 + 23 * HOUR + 50 * MIN },
      ])
        expect(await snapshot(store, r, HOUR)).toEqual(expected(sent, r, HOUR))
      // Minutes of a morning whose 10 s and 1 min rows are gone: only the 1 h resolution is left, and a
      // range that holds no whole hour finds nothing rather than a wrong answer.
      const morning = { fromMs: T0 + 3 * HOUR + 10 * MIN, toMs: T0 + 3 * HOUR + 40 * MIN }
      expect((await store.histograms({}, morning, ['total'])).get('total')!.totalCount).toBe(0)

      // The coarsest level with a finite retention forgets everything in the end.
      expect((await store.compact(T0 + 10 * DAY)).deleted).toBeGreaterThan(0)
      expect(await store.counts({}, { fromMs: T0, toMs: T0 + DAY })).toEqual({
        ok: 0,
        error: 0,
        shed: 0,
        errorClasses: {},
        outputTokens: 0,
      })
    })
  })

// Issue #12: the finest level's per-replica data is packed, one tg_pack row per report and service. These tests
// check what the packs answer against the raw samples, before and after compaction, next to finest rows stored
// before packs (tg_hist/tg_count), and the pack format itself.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { encodeHistogram } from '../../../collector/index.js'
import type { Metric, Store } from '../../../collector/index.js'
import { storeInternals } from '../../../collector/store/sql-store.js'
import { PackBuilder, packRows, unpackCounts, unpackHistograms } from '../../../collector/store/packs.js'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { toLegacyFinestRows } from '../../helpers/legacy-rows.js'
import { fingerprint, histogramOf, latenciesUs, makeReport, rng } from '../../helpers/reports.js'

const MIN = 60_000
const HOUR = 60 * MIN
const T0 = Date.UTC(2026, 10, 2, 0, 0, 0)
const SERVICES = ['chat', 'search', 'embed']
const REPLICAS = ['r0', 'r1', 'r2', 'r3']

interface Sent {
  readonly service: string
  readonly replica: string
  readonly total: number[]
  readonly queue: number[]
  readonly ok: number
  readonly error: number
}

/** One report a minute from one agent carrying every replica of every service, over `[fromMs, toMs)`. */
async function send(store: Store, fromMs: number, toMs: number, seqBase: number): Promise<Sent[]> {
  const next = rng(fromMs % 7919)
  const sent: Sent[] = []
  let seq = seqBase
  for (let t = fromMs; t < toMs; t += MIN) {
    const series = SERVICES.flatMap((service) =>
      REPLICAS.map((replica, i) => {
        // r3 of every service counts requests but sends no histogram; r2 has no queue histogram.
        const total = replica === 'r3' ? [] : latenciesUs(next, 3 + i, 20_000)
        const queue = replica === 'r3' || replica === 'r2' ? [] : total.map((v) => v / 7)
        const s = { service, replica, total, queue, ok: total.length + 1, error: i % 2 }
        sent.push(s)
        return {
          labels: { service, replica },
          samples: { ...(total.length ? { total } : {}), ...(queue.length ? { queue } : {}) },
          ok: s.ok,
          error: s.error,
          errorClasses: (s.error ? { oom: s.error } : {}) as Record<string, number>,
        }
      }),
    )
    expect((await store.ingest(makeReport({ seq: ++seq, startMs: t, series }), t + 5000)).kind).toBe('stored')
  }
  return sent
}

/** Every answer the tests compare, per replica and per service, for `[fromMs, toMs)`. */
async function answers(store: Store, fromMs: number, toMs: number) {
  const range = { fromMs, toMs }
  const out: Record<string, unknown> = {}
  for (const service of SERVICES) {
    for (const replica of REPLICAS) {
      const h = await store.histograms({ service, replica }, range, ['total', 'queue'])
      out[`${service}/${replica}`] = {
        total: fingerprint(h.get('total')!),
        queue: fingerprint(h.get('queue')!),
        counts: await store.counts({ service, replica }, range),
      }
    }
    out[service] = fingerprint((await store.histograms({ service }, range, ['total'])).get('total')!)
  }
  return out
}

/** The same answers computed from the samples sent. */
function expected(sent: readonly Sent[]) {
  const out: Record<string, unknown> = {}
  for (const service of SERVICES) {
    for (const replica of REPLICAS) {
      const mine = sent.filter((s) => s.service === service && s.replica === replica)
      const error = mine.reduce((n, s) => n + s.error, 0)
      out[`${service}/${replica}`] = {
        total: fingerprint(histogramOf(mine.flatMap((s) => s.total))),
        queue: fingerprint(histogramOf(mine.flatMap((s) => s.queue))),
        counts: {
          ok: mine.reduce((n, s) => n + s.ok, 0),
          error,
          shed: 0,
          errorClasses: error ? { oom: error } : {},
          outputTokens: 0,
        },
      }
    }
    out[service] = fingerprint(histogramOf(sent.filter((s) => s.service === service).flatMap((s) => s.total)))
  }
  return out
}

describe('pack format', () => {
  it('keeps each series’ histograms and counters in series order, empty where it has none', () => {
    const b = new PackBuilder('chat')
    const h = (us: number) => encodeHistogram(histogramOf([us]))
    b.add('a', null, [1, 0, 0, 0, {}])
    b.add('b', [['total', h(10)]], 0)
    b.add(
      'c',
      [
        ['queue', h(30)],
        ['total', h(20)],
      ],
      [2, 1, 3, 4, { oom: 1 }],
    )
    const ids = new Map([
      ['a', 7],
      ['b', 8],
      ['c', 9],
    ])
    const [row, ...more] = packRows(b, (k) => ids.get(k)!)
    expect(more).toEqual([])
    if (!row) throw new Error('no pack')
    expect(row.series_ids).toBe('7,8,9')
    expect(JSON.parse(row.histograms)).toEqual({ total: `,${h(10)},${h(20)}`, queue: `,,${h(30)}` })
    expect(unpackHistograms(row, null, null)).toEqual([
      { seriesId: 8, metric: 'total', histogram: h(10) },
      { seriesId: 9, metric: 'total', histogram: h(20) },
      { seriesId: 9, metric: 'queue', histogram: h(30) },
    ])
    expect(unpackHistograms(row, ['queue', 'ttft'] as Metric[], new Set([8]))).toEqual([])
    expect(unpackCounts(row, new Set([7, 9]))).toEqual([
      {
        seriesId: 7,
        columns: { ok_count: 1, error_count: 0, shed_count: 0, output_tokens: 0, error_classes: '{}' },
      },
      {
        seriesId: 9,
        columns: { ok_count: 2, error_count: 1, shed_count: 3, output_tokens: 4, error_classes: '{"oom":1}' },
      },
    ])
  })

  it('writes the counts column as JSON.stringify would (property)', () => {
    const count = fc.oneof(
      fc.constant(0 as const),
      fc.tuple(
        fc.nat(),
        fc.nat(),
        fc.nat(),
        fc.nat(),
        fc.dictionary(fc.string({ maxLength: 8 }), fc.nat(), { maxKeys: 3 }),
      ),
    )
    fc.assert(
      fc.property(fc.array(count, { maxLength: 20 }), (counts) => {
        const b = new PackBuilder('s')
        counts.forEach((c, i) => b.add(String(i), null, c))
        const row = packRows(b, Number, 1000)[0] ?? { counts: '[]' }
        expect(row.counts).toBe(JSON.stringify(counts))
        expect(JSON.parse(row.counts)).toEqual(counts)
      }),
    )
  })

  it('puts a service’s series in id order, at most 64 a row, each row with its id range', () => {
    const b = new PackBuilder('chat')
    const h = (us: number) => encodeHistogram(histogramOf([us]))
    // Keys arrive in another order than their ids.
    for (let i = 0; i < 150; i++)
      b.add(`k${i}`, i % 3 === 0 ? null : [['total', h(100 + i)]], [i, 0, 0, 0, {}])
    const idOf = (key: string) => 1000 - Number(key.slice(1)) * 3
    const rows = packRows(b, idOf)
    expect(rows.map((r) => r.series_ids.split(',').length)).toEqual([64, 64, 22])
    for (const [i, r] of rows.entries()) {
      const ids = r.series_ids.split(',').map(Number)
      expect(ids).toEqual([...ids].sort((x, y) => x - y))
      expect([r.min_series_id, r.max_series_id]).toEqual([ids[0], ids[ids.length - 1]])
      if (i > 0) expect(r.min_series_id).toBeGreaterThan(rows[i - 1]!.max_series_id)
    }
    const all = rows.flatMap((r) => unpackHistograms(r, null, null))
    expect(all).toHaveLength(100)
    for (const x of all) expect(x.histogram).toBe(h(100 + (1000 - x.seriesId) / 3))
    const counts = rows.flatMap((r) => unpackCounts(r, null))
    expect(counts.map((c) => c.columns.ok_count).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 150 }, (_, i) => i),
    )
  })

  it('refuses a pack whose lists do not match its series', () => {
    expect(() => unpackHistograms({ series_ids: '1,2', histograms: '{"total":"x"}' }, null, null)).toThrow(
      /1 total histograms for 2 series/,
    )
    expect(() => unpackHistograms({ series_ids: '1', histograms: '{"total":"a,b"}' }, null, null)).toThrow(
      /more total histograms than 1 series/,
    )
    expect(() => unpackHistograms({ series_ids: '1', histograms: '{"total":"a' }, ['total'], null)).toThrow(
      /not closed/,
    )
    expect(() => unpackCounts({ series_ids: '1,2', counts: '[0]' }, null)).toThrow(/1 counters for 2 series/)
  })
})

for (const dialect of testDialects())
  describe(`${dialect}: packed finest level`, () => {
    const ctx = useTestStore(dialect)

    it('writes one row per report and service, and answers per replica from them before and after compaction', async () => {
      const store = ctx.store
      const sent = await send(store, T0, T0 + 30 * MIN, 0)
      const db = storeInternals(store)!.db
      const packs = await db.selectFrom('tg_pack').select(['service', 'consumed']).execute()
      expect(packs).toHaveLength(30 * SERVICES.length)
      expect(await db.selectFrom('tg_hist').select('series_id').execute()).toHaveLength(0)
      expect(await db.selectFrom('tg_count').select('series_id').execute()).toHaveLength(0)
      const want = expected(sent)
      expect(await answers(store, T0, T0 + HOUR)).toEqual(want)
      // Compaction claims the packs (the first 20 minutes: its boundary) into 1 min rows per replica.
      await store.compact(T0 + 20 * MIN + 10_000)
      const consumed = await db.selectFrom('tg_pack').select('bucket_ms').where('consumed', '=', 1).execute()
      expect(consumed).toHaveLength(20 * SERVICES.length)
      expect(await answers(store, T0, T0 + HOUR)).toEqual(want)
      // A range starting mid-way through the packs (finest level at its edge).
      const late = sent.slice(7 * SERVICES.length * REPLICAS.length)
      expect(await answers(store, T0 + 7 * MIN, T0 + HOUR)).toEqual(expected(late))
      await store.compact(T0 + 2 * HOUR)
      expect(await answers(store, T0, T0 + HOUR)).toEqual(want)
      // Retention of the finest level deletes the consumed packs.
      const res = await store.compact(T0 + 5 * 86_400_000)
      expect(res.deleted).toBeGreaterThan(0)
      expect(await db.selectFrom('tg_pack').select('bucket_ms').execute()).toHaveLength(0)
      expect(await answers(store, T0, T0 + HOUR)).toEqual(want)
    })

    it('answers for replicas of a service spread over several packs of one report', async () => {
      const store = ctx.store
      const next = rng(5)
      const sent = new Map<string, number[]>()
      for (let seq = 1; seq <= 3; seq++) {
        const t = T0 + seq * 10_000
        const series = Array.from({ length: 150 }, (_, i) => {
          const total = latenciesUs(next, 2 + (i % 4), 10_000 + i)
          sent.set(`r${i}`, [...(sent.get(`r${i}`) ?? []), ...total])
          return { labels: { service: 'big', replica: `r${i}` }, samples: { total }, ok: total.length }
        })
        expect((await store.ingest(makeReport({ seq, startMs: t, series }), t + 5000)).kind).toBe('stored')
      }
      const db = storeInternals(store)!.db
      expect(await db.selectFrom('tg_pack').select('series_ids').execute()).toHaveLength(9)
      const range = { fromMs: T0, toMs: T0 + HOUR }
      for (const replica of ['r0', 'r63', 'r64', 'r100', 'r149']) {
        const h = (await store.histograms({ service: 'big', replica }, range, ['total'])).get('total')!
        expect(fingerprint(h), replica).toBe(fingerprint(histogramOf(sent.get(replica)!)))
        expect((await store.counts({ service: 'big', replica }, range)).ok).toBe(sent.get(replica)!.length)
      }
      // A selector matching every replica (by model) reads every pack.
      const all = (await store.histograms({ service: 'big', model: 'llama' }, range, ['total'])).get('total')!
      expect(all.totalCount).toBe([...sent.values()].reduce((n, v) => n + v.length, 0))
    })

    it('reads and rolls up finest rows stored before packs together with packs', async () => {
      const store = ctx.store
      const db = storeInternals(store)!.db
      const before = await send(store, T0, T0 + 15 * MIN, 0)
      expect(await toLegacyFinestRows(db)).toBeGreaterThan(0)
      const after = await send(store, T0 + 5 * MIN, T0 + 25 * MIN, 100)
      const want = expected([...before, ...after])
      expect(await answers(store, T0, T0 + HOUR)).toEqual(want)
      await store.compact(T0 + 12 * MIN)
      expect(await answers(store, T0, T0 + HOUR)).toEqual(want)
      await store.compact(T0 + 3 * HOUR)
      expect(await answers(store, T0, T0 + HOUR)).toEqual(want)
      const left = await db.selectFrom('tg_pack').select('bucket_ms').where('consumed', '=', 0).execute()
      expect(left).toHaveLength(0)
    })
  })

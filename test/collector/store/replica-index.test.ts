// SQLite's planner, without statistics (or with some), read one replica's rows through the compaction index and
// scanned every row of the time range; the store names the index of each per-replica select (INDEXED BY).
import { describe, expect, it } from 'vitest'
import { CompiledQuery, sql } from 'kysely'
import { storeInternals, withReplicaIndexes } from '../../../collector/store/sql-store.js'
import { useTestStore } from '../../helpers/test-store.js'
import { toLegacyFinestRows } from '../../helpers/legacy-rows.js'
import { makeReport } from '../../helpers/reports.js'

const T0 = Date.UTC(2026, 10, 21, 13, 0, 0)

describe('withReplicaIndexes', () => {
  it('names the index of each per-replica select by its consumed literal, and leaves other selects alone', () => {
    const member = (table: string, consumed: number) =>
      `select "step_ms" from "${table}" where "metric" in (?) and series_id in (select id from tg_series where "replica" = ?) and step_ms = ? and consumed = ${consumed} and bucket_ms >= ? and bucket_ms < ?`
    const text = [
      member('tg_hist', 0),
      member('tg_hist', 1),
      member('tg_count', 0),
      member('tg_count', 1),
    ].join(' union all ')
    const out = withReplicaIndexes(text).split(' union all ')
    expect(out[0]).toContain('from "tg_hist" indexed by "tg_hist_fresh" where')
    expect(out[1]).toContain('from "tg_hist" indexed by "tg_hist_lookup" where')
    expect(out[2]).toContain('from "tg_count" indexed by "tg_count_fresh" where')
    expect(out[3]).toContain('from "tg_count" indexed by "tg_count_lookup" where')
    const service = 'select "step_ms" from "tg_hist_service" where "consumed" in (?, ?)'
    expect(withReplicaIndexes(service)).toBe(service)
  })
})

describe('sqlite: per-replica reads through their index', () => {
  const ctx = useTestStore('sqlite')

  it('plans each per-replica select on its partial index with no statistics, and answers the same', async () => {
    const store = ctx.store
    for (let seq = 1; seq <= 12; seq++) {
      const t = T0 + seq * 10_000
      const series = Array.from({ length: 40 }, (_, i) => ({
        labels: { service: `svc-${i % 4}`, replica: `r${i}` },
        samples: { total: [1000 + i] },
        ok: 1,
      }))
      expect((await store.ingest(makeReport({ seq, startMs: t, series }), t + 5000)).kind).toBe('stored')
    }
    const db = storeInternals(store)!.db
    await toLegacyFinestRows(db)
    await store.compact(T0 + 80_000)
    await sql`delete from sqlite_stat1`.execute(db).catch(() => {})
    for (const [table, consumed, index] of [
      ['tg_hist', 0, 'tg_hist_fresh'],
      ['tg_hist', 1, 'tg_hist_lookup'],
      ['tg_count', 0, 'tg_count_fresh'],
      ['tg_count', 1, 'tg_count_lookup'],
    ] as const) {
      const text = withReplicaIndexes(
        `select "step_ms" from "${table}" where series_id in (select id from tg_series where "replica" = ?) and step_ms = ? and consumed = ${consumed} and bucket_ms >= ? and bucket_ms < ?`,
      )
      const plan = await db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${text}`, ['r5', 10_000, T0, T0 + 200_000]),
      )
      expect(plan.rows.map((r) => r.detail).join('\n')).toMatch(
        new RegExp(`USING (COVERING )?INDEX ${index}\\b`),
      )
    }
    const range = { fromMs: T0, toMs: T0 + 200_000 }
    const h = (await store.histograms({ service: 'svc-1', replica: 'r5' }, range, ['total'])).get('total')!
    expect(h.totalCount).toBe(12)
    expect((await store.counts({ service: 'svc-1', replica: 'r5' }, range)).ok).toBe(12)
  })
})

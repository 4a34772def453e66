import type { Kysely } from 'kysely'
import type { DB } from '../../collector/store/schema.js'
import { unpackCounts, unpackHistograms } from '../../collector/store/packs.js'

/**
 * Turns every finest-level pack (`tg_pack`) into the per-replica rows ingest wrote before packs (one `tg_hist`
 * row per series and metric, one `tg_count` row per series, same bucket and `consumed`), and deletes the packs:
 * a store as a collector before migration 2026-11-27T0500 left it. Returns the rows written.
 *
 * @example await toLegacyFinestRows(storeInternals(store)!.db)
 */
export async function toLegacyFinestRows(db: Kysely<DB>): Promise<number> {
  const packs = await db.selectFrom('tg_pack').selectAll().execute()
  let n = 0
  await db.transaction().execute(async (trx) => {
    for (const p of packs) {
      const base = {
        step_ms: Number(p.step_ms),
        bucket_ms: Number(p.bucket_ms),
        consumed: Number(p.consumed),
      }
      for (const h of unpackHistograms(p, null, null)) {
        await trx
          .insertInto('tg_hist')
          .values({ ...base, series_id: h.seriesId, metric: h.metric, histogram: h.histogram })
          .execute()
        n++
      }
      for (const c of unpackCounts(p, null)) {
        await trx
          .insertInto('tg_count')
          .values({ ...base, series_id: c.seriesId, ...c.columns })
          .execute()
        n++
      }
    }
    await trx.deleteFrom('tg_pack').execute()
  })
  return n
}

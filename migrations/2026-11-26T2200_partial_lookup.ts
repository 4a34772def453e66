import { sql } from 'kysely'
import type { Kysely } from 'kysely'

/**
 * The per-replica lookup indexes (`tg_hist_lookup`, `tg_count_lookup`: series first, then level and bucket) hold
 * only rows a rollup has consumed (`where consumed = 1`), and new partial indexes (`tg_hist_fresh`,
 * `tg_count_fresh`: level first, then series and bucket) hold the unconsumed ones. Indexed series first, every new
 * row had landed on an index page of its own series: once a series has a few hundred rows, a report of 10,000
 * series dirtied 30,000 index pages, and ingest slowed from 387 to 1,445 ms a report over 150 reports
 * (docs/scale.md). Unconsumed rows of one level are few per series (those since the last rollup), so a report's
 * new rows share pages; a rollup moves them to the lookup index a minute of a series at a time on the finest
 * level. Queries read each `consumed` value on its own, the value written as a literal so that both databases'
 * planners can prove the partial index applies. Never edit this file once shipped: add a new migration instead.
 *
 * @example
 * ```ts
 * await up(db) // normally run by the Migrator through migrations/index.ts
 * ```
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, table, columns, consumed] of PARTIAL) {
    await db.schema.dropIndex(name).ifExists().execute()
    await db.schema
      .createIndex(name)
      .on(table)
      .columns([...columns])
      .where(sql.ref('consumed'), '=', sql.lit(consumed))
      .execute()
  }
}

/** Puts back the full indexes of migration 2026-11-21T2100. */
export async function down(db: Kysely<unknown>): Promise<void> {
  for (const [name, table, columns, consumed] of PARTIAL) {
    await db.schema.dropIndex(name).execute()
    if (consumed === 1)
      await db.schema
        .createIndex(name)
        .on(table)
        .columns([...columns])
        .execute()
  }
}

/** Name, table, columns and `consumed` value of each partial index; the `consumed = 1` ones replace full ones. */
const PARTIAL: ReadonlyArray<readonly [string, string, readonly string[], 0 | 1]> = [
  ['tg_hist_lookup', 'tg_hist', ['series_id', 'metric', 'step_ms', 'bucket_ms'], 1],
  ['tg_count_lookup', 'tg_count', ['series_id', 'step_ms', 'bucket_ms'], 1],
  ['tg_hist_fresh', 'tg_hist', ['step_ms', 'series_id', 'metric', 'bucket_ms'], 0],
  ['tg_count_fresh', 'tg_count', ['step_ms', 'series_id', 'bucket_ms'], 0],
]

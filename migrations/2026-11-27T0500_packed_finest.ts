import { PostgresAdapter, sql } from 'kysely'
import type { Kysely } from 'kysely'

/**
 * `tg_pack`: the finest level's per-replica histograms and counters, packed: a row per report, service and up to
 * 64 of its replicas (issue #12). Ingest wrote one `tg_hist` row per series and metric and one `tg_count` row per
 * series: a 10,000-series report was 30,000 rows, and the database's per-row work was most of ingest. A pack holds
 * the series ids (in order, with their range) and, in the same order, their encoded histograms per metric and
 * their counters; compaction unpacks it into the next level's per-replica rows (`consumed` rule as
 * `tg_hist`). Rows already on the finest level of `tg_hist`/`tg_count` stay there and are read and rolled up as
 * before. On PostgreSQL, the packs' text is stored uncompressed and `tg_series` leaves half of each page free
 * (see below). Never edit this file once shipped: add a new migration instead.
 *
 * @example
 * ```ts
 * await up(db) // normally run by the Migrator through migrations/index.ts
 * ```
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tg_pack')
    .addColumn('step_ms', 'bigint', (c) => c.notNull())
    .addColumn('bucket_ms', 'bigint', (c) => c.notNull())
    .addColumn('service', 'text', (c) => c.notNull())
    .addColumn('consumed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('min_series_id', 'integer', (c) => c.notNull())
    .addColumn('max_series_id', 'integer', (c) => c.notNull())
    .addColumn('series_ids', 'text', (c) => c.notNull())
    .addColumn('histograms', 'text', (c) => c.notNull())
    .addColumn('counts', 'text', (c) => c.notNull())
    .execute()
  // PostgreSQL compresses large text values before it stores them out of line; base64 histograms barely
  // compress, and compressing a 10,000-series report's packs took longer than writing them (160 → 50 ms).
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    for (const column of ['series_ids', 'histograms', 'counts'])
      await sql`alter table tg_pack alter column ${sql.ref(column)} set storage external`.execute(db)
    // Ingest moves `last_seen_ms` of thousands of series forward at once; with room left on each page the new
    // row versions stay on their page and no index is touched (HOT updates): 10,000 series 150 → 30 ms. Pages
    // written before this keep their fill until the table is rewritten (VACUUM FULL), which is optional.
    await sql`alter table tg_series set (fillfactor = 50)`.execute(db)
  }
  await db.schema
    .createIndex('tg_pack_lookup')
    .on('tg_pack')
    .columns(['service', 'step_ms', 'bucket_ms'])
    .execute()
  await db.schema
    .createIndex('tg_pack_compact')
    .on('tg_pack')
    .columns(['step_ms', 'consumed', 'bucket_ms'])
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter)
    await sql`alter table tg_series reset (fillfactor)`.execute(db)
  await db.schema.dropTable('tg_pack').ifExists().execute()
}

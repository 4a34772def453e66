import type { Kysely } from 'kysely'

/**
 * `tg_pack`: the finest level's per-replica histograms and counters, packed one row per report and service
 * (issue #12). Ingest wrote one `tg_hist` row per series and metric and one `tg_count` row per series: a
 * 10,000-series report was 30,000 rows, and the database's per-row work was most of ingest. A pack holds the
 * series ids of the report's replicas of one service and, in the same order, their encoded histograms per
 * metric and their counters; compaction unpacks it into the next level's per-replica rows (`consumed` rule as
 * `tg_hist`). Rows already on the finest level of `tg_hist`/`tg_count` stay there and are read and rolled up as
 * before. Never edit this file once shipped: add a new migration instead.
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
    .addColumn('series_ids', 'text', (c) => c.notNull())
    .addColumn('histograms', 'text', (c) => c.notNull())
    .addColumn('counts', 'text', (c) => c.notNull())
    .execute()
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
  await db.schema.dropTable('tg_pack').ifExists().execute()
}

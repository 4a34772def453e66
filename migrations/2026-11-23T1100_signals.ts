import type { Kysely } from 'kysely'

/**
 * Live signals per series (gauges folded min/mean/max/last, counters, per-class admission and shed, the sources
 * that sent them) and the latency histograms model servers export in Prometheus bucket form, both append-only on
 * every rollup level with `tg_count`'s `consumed` rule. Portable between SQLite and PostgreSQL.
 * Never edit this file once shipped: add a new migration instead.
 *
 * @example
 * ```ts
 * await up(db) // normally run by the Migrator through migrations/index.ts
 * ```
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // No foreign key to tg_series, for the reason given in the initial migration (hot-row key-share locks).
  await db.schema
    .createTable('tg_signal')
    .addColumn('step_ms', 'bigint', (c) => c.notNull())
    .addColumn('bucket_ms', 'bigint', (c) => c.notNull())
    .addColumn('series_id', 'integer', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('consumed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('samples', 'bigint', (c) => c.notNull())
    .addColumn('min_value', 'double precision', (c) => c.notNull())
    .addColumn('mean_value', 'double precision', (c) => c.notNull())
    .addColumn('max_value', 'double precision', (c) => c.notNull())
    .addColumn('last_value', 'double precision', (c) => c.notNull())
    .addColumn('last_ms', 'bigint', (c) => c.notNull())
    .addColumn('sum_value', 'double precision', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('tg_signal_lookup')
    .on('tg_signal')
    .columns(['series_id', 'step_ms', 'bucket_ms'])
    .execute()
  await db.schema
    .createIndex('tg_signal_compact')
    .on('tg_signal')
    .columns(['step_ms', 'consumed', 'bucket_ms'])
    .execute()

  await db.schema
    .createTable('tg_bucket_hist')
    .addColumn('step_ms', 'bigint', (c) => c.notNull())
    .addColumn('bucket_ms', 'bigint', (c) => c.notNull())
    .addColumn('series_id', 'integer', (c) => c.notNull())
    .addColumn('metric', 'text', (c) => c.notNull())
    .addColumn('consumed', 'integer', (c) => c.notNull().defaultTo(0))
    /** JSON array of the finite upper bounds in ms: rows merge only with rows of the same layout. */
    .addColumn('bounds', 'text', (c) => c.notNull())
    /** JSON array of per-bucket counts (the last is +Inf). */
    .addColumn('counts', 'text', (c) => c.notNull())
    .addColumn('sum_ms', 'double precision', (c) => c.notNull())
    /** JSON array of `{ q, ms }` (a summary's quantiles at `last_ms`), or null. */
    .addColumn('quantiles', 'text')
    .addColumn('last_ms', 'bigint', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('tg_bucket_hist_lookup')
    .on('tg_bucket_hist')
    .columns(['series_id', 'metric', 'step_ms', 'bucket_ms'])
    .execute()
  await db.schema
    .createIndex('tg_bucket_hist_compact')
    .on('tg_bucket_hist')
    .columns(['step_ms', 'consumed', 'bucket_ms'])
    .execute()
}

/** Drops everything {@link up} created. @example await down(db) */
export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['tg_bucket_hist', 'tg_signal']) await db.schema.dropTable(table).ifExists().execute()
}

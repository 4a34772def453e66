import { PostgresAdapter, sql } from 'kysely'
import type { Kysely } from 'kysely'

/**
 * The collector's storage: series, report dedupe keys, append-only histogram and counter rows on every
 * rollup level, and the retention watermark per level. Runs on SQLite and PostgreSQL alike.
 * Never edit this file once shipped: add a new migration instead.
 *
 * @example
 * ```ts
 * await up(db) // normally run by the Migrator through migrations/index.ts
 * ```
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter

  await db.schema
    .createTable('tg_series')
    .addColumn('id', 'integer', (c) =>
      postgres ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey(),
    )
    .addColumn('service', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('replica', 'text', (c) => c.notNull())
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('first_seen_ms', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_ms', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('tg_series_labels', ['service', 'model', 'version', 'replica', 'node'])
    .execute()

  await db.schema
    .createTable('tg_report')
    .addColumn('agent_instance', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('interval_start_ms', 'bigint', (c) => c.notNull())
    .addColumn('received_at_ms', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('tg_report_pk', ['agent_instance', 'seq'])
    .execute()
  await db.schema.createIndex('tg_report_received').on('tg_report').column('received_at_ms').execute()

  // tg_hist and tg_count carry no foreign key to tg_series: every concurrent ingest would take a KEY SHARE
  // lock on the same hot series row (PostgreSQL MultiXact contention). Series are never deleted.
  await db.schema
    .createTable('tg_hist')
    .addColumn('step_ms', 'bigint', (c) => c.notNull())
    .addColumn('bucket_ms', 'bigint', (c) => c.notNull())
    .addColumn('series_id', 'integer', (c) => c.notNull())
    .addColumn('metric', 'text', (c) => c.notNull())
    .addColumn('consumed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('histogram', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('tg_hist_lookup')
    .on('tg_hist')
    .columns(['series_id', 'metric', 'step_ms', 'bucket_ms'])
    .execute()
  await db.schema
    .createIndex('tg_hist_compact')
    .on('tg_hist')
    .columns(['step_ms', 'consumed', 'bucket_ms'])
    .execute()

  await db.schema
    .createTable('tg_count')
    .addColumn('step_ms', 'bigint', (c) => c.notNull())
    .addColumn('bucket_ms', 'bigint', (c) => c.notNull())
    .addColumn('series_id', 'integer', (c) => c.notNull())
    .addColumn('consumed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ok_count', 'bigint', (c) => c.notNull())
    .addColumn('error_count', 'bigint', (c) => c.notNull())
    .addColumn('shed_count', 'bigint', (c) => c.notNull())
    .addColumn('output_tokens', 'bigint', (c) => c.notNull())
    .addColumn('error_classes', 'text', (c) => c.notNull().defaultTo(sql.lit('{}')))
    .execute()
  await db.schema
    .createIndex('tg_count_lookup')
    .on('tg_count')
    .columns(['series_id', 'step_ms', 'bucket_ms'])
    .execute()
  await db.schema
    .createIndex('tg_count_compact')
    .on('tg_count')
    .columns(['step_ms', 'consumed', 'bucket_ms'])
    .execute()

  await db.schema
    .createTable('tg_level_state')
    .addColumn('step_ms', 'bigint', (c) => c.primaryKey())
    .addColumn('deleted_before_ms', 'bigint', (c) => c.notNull())
    .execute()
}

/** Drops everything {@link up} created. @example await down(db) */
export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['tg_level_state', 'tg_count', 'tg_hist', 'tg_report', 'tg_series'])
    await db.schema.dropTable(table).ifExists().execute()
}

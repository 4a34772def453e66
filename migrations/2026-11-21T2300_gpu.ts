import { PostgresAdapter } from 'kysely'
import type { Kysely } from 'kysely'

/**
 * GPU telemetry from the agents' interval reports: the GPUs (and MIG instances) seen with their latest state,
 * folded counters per GPU and field on every rollup level (append-only, `consumed` like `tg_count`), GPU events,
 * and per-report GPU processes with the replica they were attributed to. Portable between SQLite and PostgreSQL.
 * Never edit this file once shipped: add a new migration instead.
 *
 * @example
 * ```ts
 * await up(db) // normally run by the Migrator through migrations/index.ts
 * ```
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter

  // One row per (node, physical GPU uuid, MIG instance, source). MIG ids are -1 for a whole GPU, so the
  // unique key never holds a NULL (NULLs are distinct in unique constraints on both dialects).
  await db.schema
    .createTable('tg_gpu')
    .addColumn('id', 'integer', (c) =>
      postgres ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey(),
    )
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('uuid', 'text', (c) => c.notNull())
    .addColumn('mig_gi', 'integer', (c) => c.notNull())
    .addColumn('mig_ci', 'integer', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('gpu_index', 'integer', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('pci_bus_id', 'text')
    .addColumn('mig_uuid', 'text')
    .addColumn('mig_profile', 'text')
    .addColumn('first_seen_ms', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_ms', 'bigint', (c) => c.notNull())
    .addColumn('last_report_ms', 'bigint', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addUniqueConstraint('tg_gpu_key', ['node', 'uuid', 'mig_gi', 'mig_ci', 'source'])
    .execute()

  // No foreign keys to tg_gpu, for the same reason tg_hist has none to tg_series (hot-row key-share locks).
  await db.schema
    .createTable('tg_gpu_stat')
    .addColumn('step_ms', 'bigint', (c) => c.notNull())
    .addColumn('bucket_ms', 'bigint', (c) => c.notNull())
    .addColumn('gpu_id', 'integer', (c) => c.notNull())
    .addColumn('field', 'text', (c) => c.notNull())
    .addColumn('consumed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('samples', 'bigint', (c) => c.notNull())
    .addColumn('min_value', 'double precision', (c) => c.notNull())
    .addColumn('mean_value', 'double precision', (c) => c.notNull())
    .addColumn('max_value', 'double precision', (c) => c.notNull())
    .addColumn('last_value', 'double precision', (c) => c.notNull())
    .addColumn('last_ms', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('tg_gpu_stat_lookup')
    .on('tg_gpu_stat')
    .columns(['field', 'step_ms', 'bucket_ms', 'gpu_id'])
    .execute()
  await db.schema
    .createIndex('tg_gpu_stat_compact')
    .on('tg_gpu_stat')
    .columns(['step_ms', 'consumed', 'bucket_ms'])
    .execute()

  await db.schema
    .createTable('tg_gpu_event')
    .addColumn('gpu_id', 'integer', (c) => c.notNull())
    .addColumn('time_ms', 'bigint', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('xid', 'integer')
    .addColumn('data', 'double precision')
    .addColumn('gpu_instance_id', 'bigint')
    .addColumn('compute_instance_id', 'bigint')
    .addColumn('message', 'text')
    .execute()
  await db.schema.createIndex('tg_gpu_event_time').on('tg_gpu_event').columns(['time_ms']).execute()

  await db.schema
    .createTable('tg_gpu_process')
    .addColumn('gpu_id', 'integer', (c) => c.notNull())
    .addColumn('time_ms', 'bigint', (c) => c.notNull())
    .addColumn('pid', 'bigint', (c) => c.notNull())
    .addColumn('gpu_instance_id', 'bigint')
    .addColumn('compute_instance_id', 'bigint')
    .addColumn('service', 'text')
    .addColumn('model', 'text')
    .addColumn('version', 'text')
    .addColumn('replica', 'text')
    .addColumn('pod_uid', 'text')
    .addColumn('container_id', 'text')
    .addColumn('stats', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('tg_gpu_process_lookup')
    .on('tg_gpu_process')
    .columns(['gpu_id', 'time_ms'])
    .execute()
  await db.schema.createIndex('tg_gpu_process_time').on('tg_gpu_process').columns(['time_ms']).execute()
}

/** Drops everything {@link up} created. @example await down(db) */
export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['tg_gpu_process', 'tg_gpu_event', 'tg_gpu_stat', 'tg_gpu'])
    await db.schema.dropTable(table).ifExists().execute()
}

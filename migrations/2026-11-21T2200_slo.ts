import type { Kysely } from 'kysely'

/**
 * SLO engine tables: API-defined SLOs, alert state, silences and the webhook outbox. Portable between
 * SQLite and PostgreSQL (text, integer and bigint columns only).
 *
 * @example await up(db)
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('slo_definitions')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('created_ms', 'bigint', (c) => c.notNull())
    .addColumn('updated_ms', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('slo_alerts')
    .addColumn('slo', 'text', (c) => c.notNull())
    .addColumn('tier', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('active_since_ms', 'bigint')
    .addColumn('fired_at_ms', 'bigint')
    .addColumn('resolved_at_ms', 'bigint')
    .addColumn('notified_firing', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('silence_id', 'text')
    .addColumn('updated_ms', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('slo_alerts_pk', ['slo', 'tier'])
    .execute()
  await db.schema
    .createTable('slo_silences')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('matchers', 'text', (c) => c.notNull())
    .addColumn('starts_ms', 'bigint', (c) => c.notNull())
    .addColumn('ends_ms', 'bigint', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('comment', 'text', (c) => c.notNull())
    .addColumn('created_ms', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('slo_outbox')
    .addColumn('seq', 'bigint', (c) => c.primaryKey())
    .addColumn('receiver', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_ms', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_ms', 'bigint', (c) => c.notNull())
    .addColumn('delivered_ms', 'bigint')
    .addColumn('failed_ms', 'bigint')
    .addColumn('last_error', 'text')
    .addUniqueConstraint('slo_outbox_receiver_key', ['receiver', 'idempotency_key'])
    .execute()
  await db.schema
    .createIndex('slo_outbox_pending')
    .on('slo_outbox')
    .columns(['receiver', 'delivered_ms', 'failed_ms', 'seq'])
    .execute()
}

/** Drops the SLO engine tables. */
export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['slo_outbox', 'slo_silences', 'slo_alerts', 'slo_definitions'])
    await db.schema.dropTable(t).ifExists().execute()
}

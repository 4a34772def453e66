import { PostgresAdapter } from 'kysely'
import type { Kysely } from 'kysely'

/**
 * Live controller tables: one row per controlled target (mode, lease with fencing token, last status and
 * setpoints, operator requests) and the decision log (what each step saw, predicted, did and measured later).
 * Portable between SQLite and PostgreSQL (text, integer and bigint columns only). Never edit once shipped.
 *
 * @example
 * ```ts
 * await up(db) // normally run by the Migrator through migrations/index.ts
 * ```
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter
  await db.schema
    .createTable('tg_controller')
    .addColumn('target', 'text', (c) => c.primaryKey())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('mode_source', 'text', (c) => c.notNull())
    .addColumn('policy', 'text', (c) => c.notNull())
    .addColumn('lease_holder', 'text')
    .addColumn('fencing_token', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_expires_ms', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('setpoints', 'text')
    .addColumn('conditions', 'text', (c) => c.notNull())
    .addColumn('last_decision_id', 'bigint')
    .addColumn('mode_changed_ms', 'bigint', (c) => c.notNull())
    .addColumn('rollback_requested_ms', 'bigint')
    .addColumn('status_ms', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('tg_decision')
    .addColumn('id', postgres ? 'bigint' : 'integer', (c) =>
      postgres ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey(),
    )
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('time_ms', 'bigint', (c) => c.notNull())
    .addColumn('policy', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('fencing_token', 'bigint', (c) => c.notNull())
    .addColumn('observation', 'text', (c) => c.notNull())
    .addColumn('prediction', 'text', (c) => c.notNull())
    .addColumn('actions', 'text', (c) => c.notNull())
    .addColumn('setpoints_before', 'text', (c) => c.notNull())
    .addColumn('setpoints_after', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('outcome_detail', 'text')
    .addColumn('effect', 'text')
    .addColumn('effect_ms', 'bigint')
    .execute()
  await db.schema
    .createIndex('tg_decision_target_time')
    .on('tg_decision')
    .columns(['target', 'time_ms'])
    .execute()
  await db.schema.createIndex('tg_decision_time').on('tg_decision').columns(['time_ms']).execute()
}

/** Drops the controller tables. */
export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['tg_decision', 'tg_controller']) await db.schema.dropTable(t).ifExists().execute()
}

import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { addEncoded, encodeHistogram, newHistogram } from '../collector/report/histogram.js'
import type { Histogram } from '../collector/report/histogram.js'

/**
 * Pre-merged histograms per service and metric (phase), across replicas, on every rollup level above the
 * finest: compaction writes them next to the per-replica rows (which stay for drill-down), so a query by
 * service reads one row per bucket instead of one per replica. Same `consumed` rule as `tg_hist`.
 *
 * Existing rollup rows are merged into service rows here, keeping their `consumed` flag, so service queries
 * see history from before the migration. The finest level (the lowest `step_ms` present) gets no service
 * rows: queries read it per replica. Never edit this file once shipped: add a new migration instead.
 *
 * @example
 * ```ts
 * await up(db) // normally run by the Migrator through migrations/index.ts
 * ```
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tg_hist_service')
    .addColumn('step_ms', 'bigint', (c) => c.notNull())
    .addColumn('bucket_ms', 'bigint', (c) => c.notNull())
    .addColumn('service', 'text', (c) => c.notNull())
    .addColumn('metric', 'text', (c) => c.notNull())
    .addColumn('consumed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('histogram', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('tg_hist_service_lookup')
    .on('tg_hist_service')
    .columns(['service', 'metric', 'step_ms', 'bucket_ms'])
    .execute()
  await db.schema
    .createIndex('tg_hist_service_compact')
    .on('tg_hist_service')
    .columns(['step_ms', 'consumed', 'bucket_ms'])
    .execute()

  type Row = {
    step_ms: number
    bucket_ms: number
    service: string
    metric: string
    consumed: number
    histogram: string
  }
  const steps = (
    await sql<{ step_ms: number }>`select distinct step_ms from tg_hist order by step_ms`.execute(db)
  ).rows.map((r) => Number(r.step_ms))
  for (const step of steps.slice(1)) {
    // One bucket at a time (rows come ordered by bucket), so memory stays at one bucket's groups.
    let after = Number.MIN_SAFE_INTEGER
    for (;;) {
      const rows = (
        await sql<Row>`select h.step_ms, h.bucket_ms, s.service, h.metric, h.consumed, h.histogram
          from tg_hist h join tg_series s on s.id = h.series_id
          where h.step_ms = ${step} and h.bucket_ms > ${after}
            and h.bucket_ms <= (select min(bucket_ms) from tg_hist where step_ms = ${step} and bucket_ms > ${after})`.execute(
          db,
        )
      ).rows
      if (rows.length === 0) break
      const groups = new Map<string, { row: Row; h: Histogram }>()
      for (const r of rows) {
        const key = `${r.service}\u0000${r.metric}\u0000${r.consumed}`
        let g = groups.get(key)
        if (!g) groups.set(key, (g = { row: r, h: newHistogram() }))
        addEncoded(g.h, r.histogram)
      }
      const values = [...groups.values()].map((g) => ({
        step_ms: step,
        bucket_ms: Number(g.row.bucket_ms),
        service: g.row.service,
        metric: g.row.metric,
        consumed: Number(g.row.consumed),
        histogram: encodeHistogram(g.h),
      }))
      for (let i = 0; i < values.length; i += 500)
        await (db as Kysely<{ tg_hist_service: Row }>)
          .insertInto('tg_hist_service')
          .values(values.slice(i, i + 500))
          .execute()
      after = Number(rows[0]!.bucket_ms)
    }
  }
}

/** Drops what {@link up} created. @example await down(db) */
export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('tg_hist_service').ifExists().execute()
}

import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { addEncoded, encodeHistogram, newHistogram } from '../collector/report/histogram.js'
import type { Histogram } from '../collector/report/histogram.js'

/**
 * Service rows on every level, for counters too, so that a query by service (the SLO engine's, above all)
 * reads one row per service and bucket on the coarse levels and one per report and service on the finest,
 * never one per replica:
 *
 * - `tg_count_service`: request counters summed across the replicas of one service, per bucket, on every
 *   level, with `tg_count`'s `consumed` rule. Ingest writes one row per report and service on the finest
 *   level; compaction rolls them up level by level, in the same transaction as the per-replica rows.
 * - `tg_hist_service` gets rows on the finest level too (migration 2026-11-23T1000 left it without them):
 *   ingest writes one per report, service and metric, and compaction now builds the next level's service
 *   rows from them rather than from the per-replica rows.
 *
 * Existing rows are merged into service rows here, group by group with their `consumed` flag, so service
 * queries see everything stored before. Histogram levels that already have service rows are left alone.
 * Never edit this file once shipped: add a new migration instead.
 *
 * @example
 * ```ts
 * await up(db) // normally run by the Migrator through migrations/index.ts
 * ```
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tg_count_service')
    .addColumn('step_ms', 'bigint', (c) => c.notNull())
    .addColumn('bucket_ms', 'bigint', (c) => c.notNull())
    .addColumn('service', 'text', (c) => c.notNull())
    .addColumn('consumed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ok_count', 'bigint', (c) => c.notNull())
    .addColumn('error_count', 'bigint', (c) => c.notNull())
    .addColumn('shed_count', 'bigint', (c) => c.notNull())
    .addColumn('output_tokens', 'bigint', (c) => c.notNull())
    .addColumn('error_classes', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('tg_count_service_lookup')
    .on('tg_count_service')
    .columns(['service', 'step_ms', 'bucket_ms'])
    .execute()
  await db.schema
    .createIndex('tg_count_service_compact')
    .on('tg_count_service')
    .columns(['step_ms', 'consumed', 'bucket_ms'])
    .execute()

  const steps = async (table: 'tg_hist' | 'tg_count' | 'tg_hist_service') =>
    (await sql<{ step_ms: number }>`select distinct step_ms from ${sql.table(table)}`.execute(db)).rows.map(
      (r) => Number(r.step_ms),
    )
  const served = new Set(await steps('tg_hist_service'))
  for (const step of await steps('tg_hist'))
    if (!served.has(step)) await backfill(db, 'tg_hist', step, new HistGroups())
  for (const step of await steps('tg_count')) await backfill(db, 'tg_count', step, new CountGroups())
}

/** Removes what {@link up} added (the table, and the finest level's service histograms). @example await down(db) */
export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('tg_count_service').ifExists().execute()
  const finest = (
    await sql<{ step_ms: number | null }>`select min(step_ms) as step_ms from tg_hist`.execute(db)
  ).rows[0]?.step_ms
  if (finest !== null && finest !== undefined)
    await sql`delete from tg_hist_service where step_ms = ${Number(finest)}`.execute(db)
}

type HistRow = { bucket_ms: number; service: string; consumed: number; metric: string; histogram: string }
type CountRow = { bucket_ms: number; service: string; consumed: number; error_classes: string } & Record<
  'ok_count' | 'error_count' | 'shed_count' | 'output_tokens',
  number
>

/** Rows of one bucket folded into one service row per key; `values` gives the rows to insert. */
interface Groups<R> {
  readonly target: 'tg_hist_service' | 'tg_count_service'
  readonly columns: string
  add(row: R): void
  values(step: number): Array<Record<string, unknown>>
}

class HistGroups implements Groups<HistRow> {
  readonly target = 'tg_hist_service'
  readonly columns = 'h.metric, h.histogram'
  #groups = new Map<string, { row: HistRow; h: Histogram }>()
  add(r: HistRow): void {
    const key = `${r.service}\u0000${r.metric}\u0000${r.consumed}`
    let g = this.#groups.get(key)
    if (!g) this.#groups.set(key, (g = { row: r, h: newHistogram() }))
    addEncoded(g.h, r.histogram)
  }
  values(step: number): Array<Record<string, unknown>> {
    const out = [...this.#groups.values()].map((g) => ({
      step_ms: step,
      bucket_ms: Number(g.row.bucket_ms),
      service: g.row.service,
      metric: g.row.metric,
      consumed: Number(g.row.consumed),
      histogram: encodeHistogram(g.h),
    }))
    this.#groups = new Map()
    return out
  }
}

class CountGroups implements Groups<CountRow> {
  readonly target = 'tg_count_service'
  readonly columns = 'h.ok_count, h.error_count, h.shed_count, h.output_tokens, h.error_classes'
  #groups = new Map<string, { row: CountRow; sums: number[]; classes: Map<string, number> }>()
  add(r: CountRow): void {
    const key = `${r.service}\u0000${r.consumed}`
    let g = this.#groups.get(key)
    if (!g) this.#groups.set(key, (g = { row: r, sums: [0, 0, 0, 0], classes: new Map() }))
    const add = [r.ok_count, r.error_count, r.shed_count, r.output_tokens]
    add.forEach((n, i) => (g.sums[i]! += Number(n)))
    for (const [name, n] of Object.entries(JSON.parse(r.error_classes) as Record<string, number>))
      g.classes.set(name, (g.classes.get(name) ?? 0) + n)
  }
  values(step: number): Array<Record<string, unknown>> {
    const out = [...this.#groups.values()].map((g) => ({
      step_ms: step,
      bucket_ms: Number(g.row.bucket_ms),
      service: g.row.service,
      consumed: Number(g.row.consumed),
      ok_count: g.sums[0]!,
      error_count: g.sums[1]!,
      shed_count: g.sums[2]!,
      output_tokens: g.sums[3]!,
      error_classes: JSON.stringify(Object.fromEntries(g.classes)),
    }))
    this.#groups = new Map()
    return out
  }
}

/** Folds one level of `source` into service rows, one bucket at a time (memory stays at one bucket's groups). */
async function backfill<R extends { bucket_ms: number }>(
  db: Kysely<unknown>,
  source: 'tg_hist' | 'tg_count',
  step: number,
  groups: Groups<R>,
): Promise<void> {
  let after = Number.MIN_SAFE_INTEGER
  for (;;) {
    const rows = (
      await sql<R>`select h.bucket_ms, s.service, h.consumed, ${sql.raw(groups.columns)}
        from ${sql.table(source)} h join tg_series s on s.id = h.series_id
        where h.step_ms = ${step} and h.bucket_ms > ${after}
          and h.bucket_ms <= (select min(bucket_ms) from ${sql.table(source)} where step_ms = ${step} and bucket_ms > ${after})`.execute(
        db,
      )
    ).rows
    if (rows.length === 0) return
    for (const r of rows) groups.add(r)
    const values = groups.values(step)
    for (let i = 0; i < values.length; i += 500)
      await (db as Kysely<Record<string, Record<string, unknown>>>)
        .insertInto(groups.target)
        .values(values.slice(i, i + 500))
        .execute()
    after = Number(rows[0]!.bucket_ms)
  }
}

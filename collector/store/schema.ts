import type { Generated } from 'kysely'
import type { SloTables } from '../slo/tables.js'

/**
 * The collector's database, as kysely sees it: the only `DB` interface (STYLE.md section 9). The tables are
 * created by `migrations/`; both dialects share this one description.
 *
 * Times are integer milliseconds since the Unix epoch. Booleans are the integers 0 and 1 on both dialects.
 *
 * @example
 * ```ts
 * const db = new Kysely<DB>({ dialect })
 * const rows = await db.selectFrom('tg_series').selectAll().execute()
 * ```
 */
/** Every table: the store's own and the SLO engine's (collector/slo/tables.ts). */
export interface DB extends SloTables {
  tg_series: SeriesTable
  tg_report: ReportTable
  tg_hist: HistTable
  tg_count: CountTable
  tg_level_state: LevelStateTable
}

/** One label set that has reported. */
export interface SeriesTable {
  id: Generated<number>
  service: string
  model: string
  version: string
  replica: string
  node: string
  first_seen_ms: number
  last_seen_ms: number
}

/** One stored report, kept to recognise retries: `(agent_instance, seq)` is the primary key. */
export interface ReportTable {
  agent_instance: string
  seq: number
  interval_start_ms: number
  received_at_ms: number
}

/**
 * Latency histograms, append-only. `step_ms` is the rollup level (the finest level holds one row per
 * report, series and metric); `consumed` is 1 once the row has been merged into a row of the next coarser
 * level. Several rows may share a `(step_ms, series_id, metric, bucket_ms)` key.
 */
export interface HistTable {
  step_ms: number
  bucket_ms: number
  series_id: number
  metric: string
  consumed: number
  /** HdrHistogram compressed base64 (collector/report's codec). */
  histogram: string
}

/** Request counters, append-only, on the same levels and with the same `consumed` rule as `tg_hist`. */
export interface CountTable {
  step_ms: number
  bucket_ms: number
  series_id: number
  consumed: number
  ok_count: number
  error_count: number
  shed_count: number
  output_tokens: number
  /** JSON object: error class → count. */
  error_classes: string
}

/** Per rollup level, the time before which compaction has deleted that level's rows (retention). */
export interface LevelStateTable {
  step_ms: number
  deleted_before_ms: number
}

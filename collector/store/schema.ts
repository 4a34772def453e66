import type { Generated } from 'kysely'
import type { SloTables } from '../slo/tables.js'
import type { ControllerTables } from '../controllers/tables.js'

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
export interface DB extends SloTables, ControllerTables {
  tg_series: SeriesTable
  tg_report: ReportTable
  tg_hist: HistTable
  tg_hist_service: ServiceHistTable
  tg_count: CountTable
  tg_count_service: ServiceCountTable
  tg_pack: PackTable
  tg_level_state: LevelStateTable
  tg_gpu: GpuTable
  tg_gpu_stat: GpuStatTable
  tg_gpu_event: GpuEventTable
  tg_gpu_process: GpuProcessTable
  tg_signal: SignalTable
  tg_bucket_hist: BucketHistTable
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
  /** tailguard's sparse encoding, or HdrHistogram compressed base64 in rows written before #12 (collector/report's codec reads both). */
  histogram: string
}

/**
 * Histograms merged across the replicas of one service, per metric, on every rollup level: on the finest,
 * ingest writes one per report, service and metric (migration 2026-11-25T1000); above it, compaction merges
 * the finer service rows, in the transaction that rolls up the per-replica rows of the same bucket. Same
 * `consumed` rule as `tg_hist`.
 */
export interface ServiceHistTable {
  step_ms: number
  bucket_ms: number
  service: string
  metric: string
  consumed: number
  /** tailguard's sparse encoding (collector/report's codec). */
  histogram: string
}

/** The counter columns of `tg_count` and `tg_count_service`. */
export interface CountColumns {
  ok_count: number
  error_count: number
  shed_count: number
  output_tokens: number
  /** JSON object: error class → count. */
  error_classes: string
}

/** Request counters, append-only, on the same levels and with the same `consumed` rule as `tg_hist`. */
export interface CountTable extends CountColumns {
  step_ms: number
  bucket_ms: number
  series_id: number
  consumed: number
}

/**
 * Request counters summed across the replicas of one service, on every level, written and rolled up as
 * `tg_hist_service` is (one row per report and service on the finest level). Same `consumed` rule.
 */
export interface ServiceCountTable extends CountColumns {
  step_ms: number
  bucket_ms: number
  service: string
  consumed: number
}

/**
 * The finest level's per-replica histograms and counters, a few rows per report and service (migration
 * 2026-11-27T0500): ingest writes these instead of one `tg_hist` row per series and metric and one `tg_count`
 * row per series; compaction unpacks them into the next level's `tg_hist`/`tg_count` rows. `step_ms` is always
 * the finest step. Same `consumed` rule as `tg_hist`. Format: `collector/store/packs.ts`.
 */
export interface PackTable {
  step_ms: number
  bucket_ms: number
  service: string
  consumed: number
  /** The lowest and highest series id in `series_ids` (a query for some replicas skips packs without them). */
  min_series_id: number
  max_series_id: number
  /** The series ids in increasing order, comma-separated (at most 64); the lists below follow this order. */
  series_ids: string
  /** JSON object: metric → the series' encoded histograms, comma-separated (empty where a series has none). */
  histograms: string
  /** JSON array: per series `[ok, error, shed, outputTokens, errorClasses]`, or 0 where it counted nothing. */
  counts: string
}

/** Per rollup level, the time before which compaction has deleted that level's rows (retention). */
export interface LevelStateTable {
  step_ms: number
  deleted_before_ms: number
}

/**
 * One GPU or MIG instance that has reported, per node and source, with the state its newest report carried.
 * `mig_gi`/`mig_ci` are -1 for a whole GPU (and `mig_ci` for a MIG item without a compute instance id).
 */
export interface GpuTable {
  id: Generated<number>
  node: string
  /** The physical GPU's UUID (also for a MIG instance). */
  uuid: string
  mig_gi: number
  mig_ci: number
  source: string
  gpu_index: number
  name: string | null
  pci_bus_id: string | null
  mig_uuid: string | null
  mig_profile: string | null
  first_seen_ms: number
  last_seen_ms: number
  /** `intervalEndMs` of the report `state` comes from (processes of that report carry the same time). */
  last_report_ms: number
  /** JSON: `{ samples, fields, clockEventReasonsSeen, unsupported, k8s? }` of the newest report. */
  state: string
}

/**
 * Folded GPU counters, one row per GPU, field and bucket, on every rollup level with `tg_count`'s `consumed`
 * rule. `samples` weighs `mean_value` when rows merge; `last_value` is the value at `last_ms`.
 */
export interface GpuStatTable {
  step_ms: number
  bucket_ms: number
  gpu_id: number
  field: string
  consumed: number
  samples: number
  min_value: number
  mean_value: number
  max_value: number
  last_value: number
  last_ms: number
}

/** One GPU event (XID, double-bit ECC, GPU lost, …) as the agent observed it. */
export interface GpuEventTable {
  gpu_id: number
  time_ms: number
  kind: string
  xid: number | null
  data: number | null
  gpu_instance_id: number | null
  compute_instance_id: number | null
  message: string | null
}

/** One process on one GPU in one report, with the replica the agent attributed it to (columns null when none). */
export interface GpuProcessTable {
  gpu_id: number
  /** The report's `intervalEndMs`. */
  time_ms: number
  pid: number
  gpu_instance_id: number | null
  compute_instance_id: number | null
  service: string | null
  model: string | null
  version: string | null
  replica: string | null
  pod_uid: string | null
  container_id: string | null
  /** JSON: `{ usedMemoryBytes?, smUtilPct?, memUtilPct? }`, each `{ min, mean, max, last }`. */
  stats: string
}

/**
 * Live signals of a series, one row per series, signal and bucket on every rollup level (`tg_count`'s `consumed`
 * rule). `name` says what the row is: `g:<gauge>` (folded min/mean/max/last, `samples` weighs the mean),
 * `c:<counter>` (`sum_value` is the count), `k:<class>:<gauge>` and `k:<class>:admitted` / `k:<class>:shed:<reason>`
 * (per priority class), `s:<source>` (reports that carried signals from that source, in `sum_value`).
 */
export interface SignalTable {
  step_ms: number
  bucket_ms: number
  series_id: number
  name: string
  consumed: number
  samples: number
  min_value: number
  mean_value: number
  max_value: number
  last_value: number
  last_ms: number
  sum_value: number
}

/**
 * Latency histograms imported in Prometheus bucket form, one row per series, metric, bucket and layout (`bounds`)
 * on every rollup level; rows of different layouts never merge (a changed layout stays visible).
 */
export interface BucketHistTable {
  step_ms: number
  bucket_ms: number
  series_id: number
  metric: string
  consumed: number
  /** JSON array of finite upper bounds, ms. */
  bounds: string
  /** JSON array of per-bucket counts, `+Inf` last. */
  counts: string
  sum_ms: number
  /** JSON array of `{ q, ms }` or null. */
  quantiles: string | null
  last_ms: number
  source: string
}

import { CompiledQuery, Migrator, PostgresAdapter, sql } from 'kysely'
import type { Kysely, RawBuilder, SqlBool, Transaction } from 'kysely'
import { addEncoded } from '../report/histogram.js'
import { newHistogram, seriesKey } from '../report/index.js'
import type { GpuField, Histogram, IntervalReport, Metric, SeriesLabels } from '../report/index.js'
import { BadRequest, StoreUnavailable, TailguardError } from '../errors.js'
import { migrationProvider } from '../../migrations/index.js'
import { ceilTo, fetchTerms, floorTo, joinSegments, planSegments, rowCounts } from './levels.js'
import type { FetchTerm, Segment } from './levels.js'
import { claimGroups } from './rollup.js'
import { Merge } from './merge.js'
import { packRows, unpackCounts, unpackHistograms } from './packs.js'
import { countColumns, labelsOfKey, prepareReport } from './prepare.js'
import type { PreparedReport } from './prepare.js'
import { bulkInsertSql, statementSizes } from './sqlite-bulk.js'
import {
  GPU_RECENT_EVENTS_MS,
  deleteOldGpuRows,
  ingestGpus,
  loadEvents,
  loadGpus,
  readGpuSeries,
  rollUpGpuStats,
} from './gpu-store.js'
import { buildSignalSeries, insertSignalRows, rollUpBucketHists, rollUpSignals } from './signal-store.js'
import type { CountColumns, DB } from './schema.js'
import { attachDatabase } from './handle.js'
import type {
  EpochMs,
  GpuEventInfo,
  GpuInfo,
  GpuSelector,
  GpuSeries,
  IngestOutcome,
  RequestCounts,
  RollupLevel,
  Selector,
  ServiceInfo,
  SignalSeries,
  Store,
  TimeRange,
} from './types.js'

/** What {@link SqlStore} needs from `createStore`: the only place that knows the dialect. @example see {@link createSqlStore} */
export interface SqlStoreOptions {
  readonly db: Kysely<DB>
  readonly dialect: 'sqlite' | 'postgres'
  readonly levels: readonly RollupLevel[]
  /** PostgreSQL: the schema the migration tables live in (kysely would otherwise match any schema's). */
  readonly migrationSchema: string | undefined
  readonly clock: () => number
  readonly logger: (line: string) => void
  /** Called after a commit of ingest or compaction with the rows it wrote: SQLite's background checkpoint. */
  readonly wrote?: (rows: number) => void
  /** Awaited by {@link Store.close} before the database closes. */
  readonly closing?: () => Promise<void>
}

/**
 * One histogram row as the bulk writer takes it (the benchmark's loader).
 *
 * @example { stepMs: 60_000, bucketMs: t, seriesId: 1, metric: 'total', consumed: false, histogram: encodeHistogram(h) }
 */
export interface HistRow {
  readonly stepMs: number
  readonly bucketMs: number
  readonly seriesId: number
  readonly metric: Metric
  readonly consumed: boolean
  readonly histogram: string
}

type Row = { step_ms: number; bucket_ms: number; consumed: number }
/** A row of one of the tables {@link insertChunked} writes. */
type RowOf<T extends keyof DB> = DB[T] extends infer R ? { [K in keyof R]: R[K] } : never

/** The earliest and latest time a batch's reports saw one series. */
interface SeenRange {
  firstMs: number
  lastMs: number
}

interface WaitingReport {
  readonly prepared: PreparedReport
  readonly resolve: (outcome: IngestOutcome) => void
  readonly reject: (err: unknown) => void
}

/** Series rows one group-committed transaction carries at most (a report larger than this goes alone). */
const INGEST_BATCH_MAX_ROWS = 20_000
/** Reports one transaction carries at most. */
const INGEST_BATCH_MAX_REPORTS = 256
/** Transactions writing reports at once on PostgreSQL (its pool has 10 connections; SQLite has one writer). */
const PG_INGEST_WRITERS = 4
type Db = Kysely<DB> | Transaction<DB>

/** Rows per multi-row INSERT: stays below SQLite's and PostgreSQL's bound-parameter limits. */
const INSERT_CHUNK_ROWS = 500
/** Past this many ranges per level, a query reads their hull and filters in JS (bounds the UNION ALL). */
const MAX_SQL_RANGES_PER_LEVEL = 16
/** Fine rows a compaction transaction claims at most per series and metric (sets the window length). */
const COMPACT_WINDOW_FINE_BUCKETS = 64
const MAX_RETRIES = 5
/** The tables compaction rolls up and retention trims, in the order it takes them (packs first). */
const ROLLUP_TABLES = [
  'tg_pack',
  'tg_hist',
  'tg_hist_service',
  'tg_count',
  'tg_count_service',
  'tg_gpu_stat',
  'tg_signal',
  'tg_bucket_hist',
] as const
const RETRYABLE_PG_CODES = new Set(['40001', '40P01'])

const EMPTY_COUNTS: RequestCounts = Object.freeze({
  ok: 0,
  error: 0,
  shed: 0,
  errorClasses: Object.freeze({}),
  outputTokens: 0,
})

/**
 * The store on kysely, for SQLite and PostgreSQL alike.
 *
 * Concurrency design (several collectors on one PostgreSQL): every write is an INSERT of new rows,
 * never a read-modify-write of a shared row, so concurrent ingests cannot lose each other's updates.
 * Each report adds, on the finest level, one pack per service (`tg_pack`: its replicas' histograms and counters)
 * and one service row per (service, metric). Compaction claims finer rows with
 * `UPDATE … SET consumed = 1 WHERE consumed = 0 … RETURNING`: under READ COMMITTED a second compactor
 * blocks on the claimed rows, re-checks `consumed = 0` after the first commits and skips them, so each row
 * is merged into exactly one coarser row (claim, merge and insert share one transaction). A query counts,
 * per segment of level L, the level-L rows plus the finer rows not yet consumed; that sum is the same
 * before and after any compaction, so late reports and half-built rollups are always found. Queries read
 * in one snapshot (REPEATABLE READ on PostgreSQL, a read transaction on SQLite/WAL), so a concurrent
 * compaction is seen either wholly or not at all. The only shared rows that are updated in place are
 * `tg_series.last_seen_ms` (an upsert taking max() for new series, locked in label order, and for known ones an
 * update by id that only moves it forward, in id order; a deadlock between the two orders is retried) and the
 * retention watermark (monotone max()).
 */
class SqlStore implements Store {
  readonly dialect: 'sqlite' | 'postgres'
  readonly #db: Kysely<DB>
  readonly #levels: readonly RollupLevel[]
  readonly #steps: readonly number[]
  readonly #finestMs: number
  readonly #migrationSchema: string | undefined
  readonly #clock: () => number
  readonly #log: (line: string) => void
  readonly #wrote: (rows: number) => void
  readonly #closing: () => Promise<void>
  /** Reports checked and waiting for a transaction, oldest first ({@link ingest}'s group commit). */
  readonly #waiting: WaitingReport[] = []
  /** Writer loops running ({@link #drain}). */
  #writers = 0
  /**
   * Series ids this process has seen committed, with the last-seen time it last wrote. Ids never change
   * and series are never deleted, so the cache cannot go stale; it lets most ingests skip the upsert of
   * `tg_series`, whose row lock would otherwise serialize every report of one series across collectors.
   */
  readonly #seriesCache = new Map<
    string,
    { readonly id: number; readonly seenMs: number; readonly firstMs: number }
  >()

  constructor(opts: SqlStoreOptions) {
    this.dialect = opts.dialect
    this.#db = opts.db
    attachDatabase(this, opts.db)
    this.#levels = opts.levels
    this.#steps = opts.levels.map((l) => l.stepMs)
    this.#finestMs = opts.levels[0]!.stepMs
    this.#migrationSchema = opts.migrationSchema
    this.#clock = opts.clock
    this.#log = opts.logger
    this.#wrote = opts.wrote ?? (() => {})
    this.#closing = opts.closing ?? (async () => {})
  }

  get finestStepMs(): number {
    return this.#finestMs
  }

  get rollupStepsMs(): readonly number[] {
    return this.#steps
  }

  /** The kysely handle, for the benchmark's bulk loader and tests (not part of {@link Store}). */
  get db(): Kysely<DB> {
    return this.#db
  }

  async migrate(): Promise<
    { kind: 'ok'; applied: readonly string[] } | { kind: 'failed'; migration: string; error: string }
  > {
    try {
      const migrator = new Migrator({
        db: this.#db,
        provider: migrationProvider,
        migrationTableName: 'tg_migration',
        migrationLockTableName: 'tg_migration_lock',
        ...(this.#migrationSchema === undefined ? {} : { migrationTableSchema: this.#migrationSchema }),
      })
      const { error, results } = await migrator.migrateToLatest()
      const applied = (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
      if (error !== undefined) {
        const failed = (results ?? []).find((r) => r.status === 'Error')
        const message = error instanceof Error ? error.message : String(error)
        this.#log(`store: migration ${failed?.migrationName ?? '(migrator)'} failed: ${message}`)
        return { kind: 'failed', migration: failed?.migrationName ?? '(migrator)', error: message }
      }
      for (const name of applied) this.#log(`store: applied migration ${name}`)
      return { kind: 'ok', applied }
    } catch (err) {
      return { kind: 'failed', migration: '(migrator)', error: (err as Error).message }
    }
  }

  /**
   * Stores a report once (a retry of the same agent instance and seq is a `duplicate`). The report is checked and
   * turned into rows here, then waits for the writer: reports that arrive while a transaction runs are written
   * together in the next one (group commit), each acknowledged only after that commit. A report alone is written
   * at once. If a shared transaction fails, each of its reports is written again on its own, so one report's
   * failure is never another's.
   */
  async ingest(report: IntervalReport, receivedAtMs: EpochMs): Promise<IngestOutcome> {
    return this.ingestPrepared(prepareReport(report, receivedAtMs, this.#finestMs))
  }

  /** Stores a report {@link prepareReport} checked and turned into rows (on a worker thread, or by {@link ingest}). */
  ingestPrepared(prepared: PreparedReport): Promise<IngestOutcome> {
    return new Promise<IngestOutcome>((resolve, reject) => {
      this.#waiting.push({ prepared, resolve, reject })
      void this.#drain()
    })
  }

  /**
   * Writes waiting reports, a batch per transaction, until none wait. SQLite has one writer (its connection);
   * PostgreSQL a few, each taking the next batch.
   */
  async #drain(): Promise<void> {
    if (this.#writers >= (this.dialect === 'sqlite' ? 1 : PG_INGEST_WRITERS)) return
    this.#writers++
    try {
      while (this.#waiting.length > 0) {
        const batch = takeBatch(this.#waiting)
        try {
          const outcomes = await this.#commitReports(batch.map((w) => w.prepared))
          batch.forEach((w, i) => w.resolve(outcomes[i]!))
        } catch (err) {
          if (batch.length === 1) batch[0]!.reject(err)
          // Whatever failed the shared transaction fails again only where it lies.
          else
            for (const w of batch)
              await this.#commitReports([w.prepared]).then(
                ([outcome]) => w.resolve(outcome!),
                (e: unknown) => w.reject(e),
              )
        }
      }
    } finally {
      this.#writers--
    }
  }

  /**
   * Writes prepared reports in one transaction; a report already stored (same agent instance and seq) is a
   * duplicate. Rows that other transactions may also write are taken in one order by every transaction, so
   * concurrent writers (PostgreSQL: several per collector, and other collectors) queue on each other instead of
   * deadlocking: first every report's dedupe key (by agent instance and seq), then the series (upserts by label
   * key, refreshes by id), then GPUs (by node, then key); everything after is new rows only.
   */
  async #commitReports(batch: readonly PreparedReport[]): Promise<IngestOutcome[]> {
    let seenOf: (key: string) => SeenRange = () => ({ firstMs: 0, lastMs: 0 })
    let upserted = new Map<string, number>()
    let refreshed: string[] = []
    let written = 0
    const outcomes = await this.#retrying(() =>
      this.#db.transaction().execute(async (trx): Promise<IngestOutcome[]> => {
        const out = await insertReportKeys(trx, batch)
        const stored = batch.filter((_, i) => out[i]!.kind === 'stored')
        // Series: last_seen_ms is kept to within one finest step. A known series only moves its last_seen_ms
        // forward: an UPDATE by id (in id order), far cheaper than the upsert's probe of the five-label unique
        // index. New series and backfills take the upsert.
        const series = this.#classify(stored)
        seenOf = series.seenOf
        refreshed = series.refreshed
        const unknown = series.unknown
        upserted = await this.#upsertSeries(trx, unknown, seenOf)
        await refreshSeries(
          trx,
          refreshed.map((key) => [this.#seriesCache.get(key)!.id, seenOf(key).lastMs]),
        )
        const idOfKey = (key: string): number => upserted.get(key) ?? this.#seriesCache.get(key)!.id
        const withGpus = stored.flatMap((p) => (p.gpus === null ? [] : [[p.gpus, p.receivedAtMs] as const]))
        for (const [report, receivedAtMs] of withGpus.sort((a, b) =>
          byText(a[0].agent.node, b[0].agent.node),
        ))
          await ingestGpus(trx, report, receivedAtMs, this.#finestMs)
        const pack: Array<RowOf<'tg_pack'>> = []
        let packedRows = 0
        const serviceHist: Array<RowOf<'tg_hist_service'>> = []
        const serviceCount: Array<RowOf<'tg_count_service'>> = []
        const signals: PreparedReport['signals'] = { signals: [], buckets: [] }
        for (const p of stored) {
          // Rows as literals of one shape (not spreads of a shared base): cheaper to build and to read back.
          const stepMs = this.#finestMs
          const bucketMs = p.bucketMs
          for (const b of p.packs)
            for (const c of packRows(b, idOfKey))
              pack.push({
                step_ms: stepMs,
                bucket_ms: bucketMs,
                consumed: 0,
                service: c.service,
                min_series_id: c.min_series_id,
                max_series_id: c.max_series_id,
                series_ids: c.series_ids,
                histograms: c.histograms,
                counts: c.counts,
              })
          packedRows += p.seriesRows
          for (const [service, metric, histogram] of p.serviceHists)
            serviceHist.push({
              step_ms: stepMs,
              bucket_ms: bucketMs,
              consumed: 0,
              service,
              metric,
              histogram,
            })
          for (const [service, c] of p.serviceCounts)
            serviceCount.push({
              step_ms: stepMs,
              bucket_ms: bucketMs,
              consumed: 0,
              service,
              ok_count: c.ok_count,
              error_count: c.error_count,
              shed_count: c.shed_count,
              output_tokens: c.output_tokens,
              error_classes: c.error_classes,
            })
          // A loop, not push(...rows): a large report's rows would overflow the call's argument stack.
          // Their series_id is the index of the series' key in the report until here.
          for (const r of p.signals.signals)
            signals.signals.push({ ...r, series_id: idOfKey(p.keys[r.series_id]!) })
          for (const r of p.signals.buckets)
            signals.buckets.push({ ...r, series_id: idOfKey(p.keys[r.series_id]!) })
        }
        await insertChunked(trx, 'tg_pack', pack)
        await insertChunked(trx, 'tg_hist_service', serviceHist)
        await insertChunked(trx, 'tg_count_service', serviceCount)
        await insertSignalRows(trx, signals.signals, signals.buckets)
        // A pack counts as the rows it stands for: the checkpointer measures the WAL's growth in rows.
        written =
          packedRows +
          serviceHist.length +
          serviceCount.length +
          signals.signals.length +
          signals.buckets.length
        return out
      }),
    )
    // Only after the commit: a rolled-back insert must not leave an id behind. Only what was written moves the
    // cache (a series not refreshed keeps the last-seen time the database holds).
    for (const key of refreshed) {
      const cached = this.#seriesCache.get(key)!
      this.#seriesCache.set(key, { ...cached, seenMs: Math.max(cached.seenMs, seenOf(key).lastMs) })
    }
    for (const [key, id] of upserted) {
      const cached = this.#seriesCache.get(key)
      const range = seenOf(key)
      this.#seriesCache.set(key, {
        id,
        seenMs: Math.max(range.lastMs, cached?.seenMs ?? 0),
        firstMs: Math.min(range.firstMs, cached?.firstMs ?? Infinity),
      })
    }
    this.#wrote(written)
    return outcomes
  }

  /**
   * The series of a batch's stored reports: each key once, seen from the earliest to the latest report that
   * holds it; those to upsert (new to this process, or a report older than anything seen: a backfill from a
   * spool) and those whose last_seen_ms moves forward (more than one finest step past what this process wrote).
   */
  #classify(stored: readonly PreparedReport[]): {
    readonly unknown: Set<string>
    readonly refreshed: string[]
    readonly seenOf: (key: string) => SeenRange
  } {
    const unknown = new Set<string>()
    const refreshed: string[] = []
    const cache = this.#seriesCache
    const stepMs = this.#finestMs
    // One report (most batches of large reports): one range for all, no map of ranges to build.
    if (stored.length === 1) {
      const p = stored[0]!
      const range: SeenRange = { firstMs: p.seenMs, lastMs: p.seenMs }
      for (const key of p.keys) {
        const cached = cache.get(key)
        if (cached === undefined || p.seenMs < cached.firstMs) unknown.add(key)
        else if (p.seenMs > cached.seenMs + stepMs) refreshed.push(key)
      }
      return { unknown, refreshed, seenOf: () => range }
    }
    const seen = new Map<string, SeenRange>()
    for (const p of stored)
      for (const key of p.keys) {
        const range = seen.get(key)
        if (range === undefined) seen.set(key, { firstMs: p.seenMs, lastMs: p.seenMs })
        else if (p.seenMs < range.firstMs) range.firstMs = p.seenMs
        else if (p.seenMs > range.lastMs) range.lastMs = p.seenMs
        const cached = cache.get(key)
        if (cached === undefined || p.seenMs < cached.firstMs) unknown.add(key)
      }
    for (const [key, range] of seen)
      if (!unknown.has(key) && range.lastMs > cache.get(key)!.seenMs + stepMs) refreshed.push(key)
    return { unknown, refreshed, seenOf: (key) => seen.get(key)! }
  }

  /**
   * Upserts label sets (in key order, so concurrent transactions lock rows in one order), each seen over its
   * range, and returns their ids.
   */
  async #upsertSeries(
    db: Db,
    keys: Iterable<string>,
    seenOf: (key: string) => SeenRange,
  ): Promise<Map<string, number>> {
    const sorted = [...keys].sort(byText)
    const ids = new Map<string, number>()
    for (let i = 0; i < sorted.length; i += INSERT_CHUNK_ROWS) {
      const rows = await db
        .insertInto('tg_series')
        .values(
          sorted.slice(i, i + INSERT_CHUNK_ROWS).map((key) => {
            const range = seenOf(key)
            return { ...labelsOfKey(key), first_seen_ms: range.firstMs, last_seen_ms: range.lastMs }
          }),
        )
        .onConflict((oc) =>
          oc.columns(['service', 'model', 'version', 'replica', 'node']).doUpdateSet({
            last_seen_ms: sql<number>`case when excluded.last_seen_ms > tg_series.last_seen_ms then excluded.last_seen_ms else tg_series.last_seen_ms end`,
            first_seen_ms: sql<number>`case when excluded.first_seen_ms < tg_series.first_seen_ms then excluded.first_seen_ms else tg_series.first_seen_ms end`,
          }),
        )
        .returning(['id', 'service', 'model', 'version', 'replica', 'node'])
        .execute()
      for (const r of rows) ids.set(seriesKey(r), Number(r.id))
    }
    return ids
  }

  /** The series id of a label set, creating it (bulk loader). */
  async seriesId(labels: SeriesLabels, seenMs: number): Promise<number> {
    const key = seriesKey(labels)
    const ids = await this.#upsertSeries(this.#db, [key], () => ({
      firstMs: seenMs,
      lastMs: seenMs,
    }))
    return ids.get(key)!
  }

  /**
   * Inserts histogram rows as they are, in one transaction (bulk loader for benchmarks and tests), with the
   * service rows ingest and compaction would write next to them (one per service, metric, level and bucket).
   */
  async writeHistRows(rows: readonly HistRow[]): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      const services = await serviceOf(
        trx,
        rows.map((r) => r.seriesId),
      )
      const perService = new Merge<readonly [string, string, number, number, number]>()
      for (const r of rows)
        perService.add(
          [services.get(r.seriesId)!, r.metric, r.bucketMs, r.stepMs, r.consumed ? 1 : 0],
          r.histogram,
        )
      await insertChunked(
        trx,
        'tg_hist_service',
        perService.rows().map(([[service, metric, bucketMs, stepMs, consumed], histogram]) => ({
          step_ms: stepMs,
          bucket_ms: bucketMs,
          service,
          metric,
          consumed,
          histogram,
        })),
      )
      await insertChunked(
        trx,
        'tg_hist',
        rows.map((r) => ({
          step_ms: r.stepMs,
          bucket_ms: r.bucketMs,
          series_id: r.seriesId,
          metric: r.metric,
          consumed: r.consumed ? 1 : 0,
          histogram: r.histogram,
        })),
      )
    })
  }

  async histograms(
    selector: Selector,
    range: TimeRange,
    metrics: readonly Metric[],
  ): Promise<Map<Metric, Histogram>> {
    const out = new Map<Metric, Histogram>()
    for (const m of metrics) out.set(m, newHistogram())
    if (metrics.length === 0 || !(range.fromMs < range.toMs)) return out
    await this.#read(async (trx, available) => {
      const segments = planSegments(range.fromMs, range.toMs, this.#steps, available)
      for (const row of await this.#histRows(trx, selector, segments, metrics))
        addEncoded(out.get(row.metric as Metric)!, row.histogram)
    })
    return out
  }

  async histogramsByService(
    range: TimeRange,
    metrics: readonly Metric[],
  ): Promise<Map<string, Map<Metric, Histogram>>> {
    const out = new Map<string, Map<Metric, Histogram>>()
    if (metrics.length === 0 || !(range.fromMs < range.toMs)) return out
    await this.#read(async (trx, available) => {
      const segments = planSegments(range.fromMs, range.toMs, this.#steps, available)
      const rows = await this.#histRows(trx, {}, segments, metrics)
      // An empty selector reads the service rows (they name their service); per-replica rows name their series.
      const services = await serviceOf(
        trx,
        rows.flatMap((r) => (r.series_id === null ? [] : [Number(r.series_id)])),
      )
      for (const row of rows) {
        const service = row.service ?? services.get(Number(row.series_id)) ?? ''
        let hs = out.get(service)
        if (!hs) out.set(service, (hs = new Map(metrics.map((m) => [m, newHistogram()]))))
        addEncoded(hs.get(row.metric as Metric)!, row.histogram)
      }
    })
    return out
  }

  async timeseries(
    selector: Selector,
    range: TimeRange,
    metric: Metric,
    stepMs: number,
  ): Promise<Array<{ readonly tMs: EpochMs; readonly histogram: Histogram }>> {
    const step = this.#outputStep(stepMs)
    const buckets = new Map<number, Histogram>()
    if (range.fromMs < range.toMs)
      await this.#read(async (trx, available) => {
        const segments = this.#planSteps(range, step, available)
        for (const row of await this.#histRows(trx, selector, segments, [metric])) {
          const t = floorTo(Number(row.bucket_ms), step)
          let h = buckets.get(t)
          if (!h) buckets.set(t, (h = newHistogram()))
          addEncoded(h, row.histogram)
        }
      })
    return [...buckets.entries()].sort((a, b) => a[0] - b[0]).map(([tMs, histogram]) => ({ tMs, histogram }))
  }

  async counts(selector: Selector, range: TimeRange): Promise<RequestCounts> {
    if (!(range.fromMs < range.toMs)) return EMPTY_COUNTS
    let total = EMPTY_COUNTS
    await this.#read(async (trx, available) => {
      const segments = planSegments(range.fromMs, range.toMs, this.#steps, available)
      total = sumCounts(await this.#countRows(trx, selector, segments))
    })
    return total
  }

  async countSeries(
    selector: Selector,
    range: TimeRange,
    stepMs: number,
  ): Promise<Array<{ readonly tMs: EpochMs; readonly counts: RequestCounts }>> {
    const step = this.#outputStep(stepMs)
    let rows: CountRow[] = []
    if (range.fromMs < range.toMs)
      await this.#read(async (trx, available) => {
        rows = await this.#countRows(trx, selector, this.#planSteps(range, step, available))
      })
    return countBuckets(rows, step)
  }

  async countSeriesByService(
    range: TimeRange,
    stepMs: number,
  ): Promise<Map<string, Array<{ readonly tMs: EpochMs; readonly counts: RequestCounts }>>> {
    const step = this.#outputStep(stepMs)
    const byService = new Map<string, CountRow[]>()
    if (range.fromMs < range.toMs)
      await this.#read(async (trx, available) => {
        const rows = await this.#countRows(trx, {}, this.#planSteps(range, step, available))
        // Service rows name their service; per-replica rows (none today for an empty selector) their series.
        const services = await serviceOf(
          trx,
          rows.flatMap((r) => (r.series_id === null ? [] : [Number(r.series_id)])),
        )
        for (const row of rows)
          pushTo(byService, row.service ?? services.get(Number(row.series_id)) ?? '', row)
      })
    return new Map([...byService].map(([service, rows]) => [service, countBuckets(rows, step)]))
  }

  async signals(selector: Selector, range: TimeRange, stepMs: number): Promise<SignalSeries[]> {
    const step = this.#outputStep(stepMs)
    let out: SignalSeries[] = []
    if (range.fromMs < range.toMs)
      await this.#read(async (trx, available) => {
        const segments = this.#planSteps(range, step, available)
        const terms = fetchTerms(segments, this.#steps, MAX_SQL_RANGES_PER_LEVEL)
        if (terms.length === 0) return
        const readSignals = (t: FetchTerm) =>
          trx
            .selectFrom('tg_signal')
            .select([
              'step_ms',
              'bucket_ms',
              'consumed',
              'series_id',
              'name',
              'samples',
              'min_value',
              'mean_value',
              'max_value',
              'last_value',
              'last_ms',
              'sum_value',
            ])
            .where(seriesFilter(selector))
            .where('step_ms', '=', t.stepMs)
            .where('consumed', 'in', t.unconsumedOnly ? [0] : [0, 1])
            .where('bucket_ms', '>=', t.fromMs)
            .where('bucket_ms', '<', t.toMs)
        const readBuckets = (t: FetchTerm) =>
          trx
            .selectFrom('tg_bucket_hist')
            .select([
              'step_ms',
              'bucket_ms',
              'consumed',
              'series_id',
              'metric',
              'bounds',
              'counts',
              'sum_ms',
              'quantiles',
              'last_ms',
              'source',
            ])
            .where(seriesFilter(selector))
            .where('step_ms', '=', t.stepMs)
            .where('consumed', 'in', t.unconsumedOnly ? [0] : [0, 1])
            .where('bucket_ms', '>=', t.fromMs)
            .where('bucket_ms', '<', t.toMs)
        let sq = readSignals(terms[0]!)
        let bq = readBuckets(terms[0]!)
        for (const t of terms.slice(1)) {
          sq = sq.unionAll(readSignals(t))
          bq = bq.unionAll(readBuckets(t))
        }
        const sigRows = (await sq.execute()).filter((r) => counted(segments, r))
        const bucketRows = (await bq.execute()).filter((r) => counted(segments, r))
        const ids = [...new Set([...sigRows, ...bucketRows].map((r) => Number(r.series_id)))]
        const labelsById = new Map<number, SeriesLabels>()
        for (let i = 0; i < ids.length; i += INSERT_CHUNK_ROWS) {
          const rows = await trx
            .selectFrom('tg_series')
            .select(['id', 'service', 'model', 'version', 'replica', 'node'])
            .where('id', 'in', ids.slice(i, i + INSERT_CHUNK_ROWS))
            .execute()
          for (const r of rows) labelsById.set(Number(r.id), pickLabels(r))
        }
        out = buildSignalSeries(labelsById, sigRows, bucketRows, step)
      })
    return out
  }

  async services(): Promise<ServiceInfo[]> {
    const rows = await this.#retrying(
      () =>
        this.#db
          .selectFrom('tg_series')
          .select(['service', 'model', 'version', 'replica', 'node', 'first_seen_ms', 'last_seen_ms'])
          .orderBy('service')
          .orderBy('model')
          .orderBy('version')
          .orderBy('replica')
          .orderBy('node')
          .execute(),
      1,
    )
    return rows.map((r) => ({
      service: r.service,
      model: r.model,
      version: r.version,
      replica: r.replica,
      node: r.node,
      firstSeenMs: Number(r.first_seen_ms),
      lastSeenMs: Number(r.last_seen_ms),
    }))
  }

  async gpus(nowMs?: EpochMs): Promise<GpuInfo[]> {
    const now = nowMs ?? this.#clock()
    let out: GpuInfo[] = []
    await this.#read(async (trx) => {
      out = await loadGpus(trx, now)
    })
    return out
  }

  async gpuSeries(
    selector: GpuSelector,
    range: TimeRange,
    field: GpuField,
    stepMs: number,
  ): Promise<GpuSeries[]> {
    const step = this.#outputStep(stepMs)
    let out: GpuSeries[] = []
    if (range.fromMs < range.toMs)
      await this.#read(async (trx, available) => {
        const segments = this.#planSteps(range, step, available)
        out = await readGpuSeries(trx, selector, segments, this.#steps, field, step, MAX_SQL_RANGES_PER_LEVEL)
      })
    return out
  }

  async gpuEvents(range: TimeRange, selector: GpuSelector = {}): Promise<GpuEventInfo[]> {
    if (!(range.fromMs < range.toMs)) return []
    let out: GpuEventInfo[] = []
    await this.#read(async (trx) => {
      out = (await loadEvents(trx, range, selector)).map((e) => e.info)
    })
    return out
  }

  async compact(nowMs: EpochMs): Promise<{ readonly rolledUp: number; readonly deleted: number }> {
    const startedMs = this.#clock()
    let rolledUp = 0
    let deleted = 0
    // Roll up, finest first, so one call cascades 10 s → 1 min → 1 h → 1 d. A coarse bucket is closed
    // once its end is one finest step in the past; reports arriving later still count (as unconsumed rows)
    // and are rolled up into an extra row for the same bucket by the next compaction.
    for (let i = 1; i < this.#levels.length; i++) {
      const fine = this.#steps[i - 1]!
      const coarse = this.#steps[i]!
      const boundary = floorTo(nowMs - this.#finestMs, coarse)
      const windowMs = Math.max(coarse, floorTo(COMPACT_WINDOW_FINE_BUCKETS * fine, coarse))
      for (const table of ROLLUP_TABLES) {
        for (;;) {
          const first = await this.#db
            .selectFrom(table)
            .select((eb) => eb.fn.min('bucket_ms').as('min'))
            .where('step_ms', '=', fine)
            .where('consumed', '=', 0)
            .where('bucket_ms', '<', boundary)
            .executeTakeFirst()
          if (first?.min === null || first?.min === undefined) break
          const fromMs = floorTo(Number(first.min), coarse)
          const toMs = Math.min(boundary, fromMs + windowMs)
          rolledUp += await this.#retrying(() =>
            this.#db
              .transaction()
              .execute((trx) =>
                table === 'tg_pack'
                  ? rollUpPacks(trx, fine, coarse, fromMs, toMs)
                  : table === 'tg_hist' || table === 'tg_hist_service'
                    ? rollUpHist(trx, table, fine, coarse, fromMs, toMs)
                    : table === 'tg_count' || table === 'tg_count_service'
                      ? rollUpCounts(trx, table, fine, coarse, fromMs, toMs)
                      : table === 'tg_gpu_stat'
                        ? rollUpGpuStats(trx, fine, coarse, fromMs, toMs)
                        : table === 'tg_signal'
                          ? rollUpSignals(trx, fine, coarse, fromMs, toMs)
                          : rollUpBucketHists(trx, fine, coarse, fromMs, toMs),
              ),
          )
        }
      }
    }
    // Retention: move the level's watermark first (queries stop using the level before it), then delete.
    // Only rows already merged into the next level are deleted, except on the coarsest level.
    for (let i = 0; i < this.#levels.length; i++) {
      const level = this.#levels[i]!
      if (level.retentionMs === null) continue
      const coarsest = i === this.#levels.length - 1
      const cutoff = floorTo(nowMs - level.retentionMs, this.#steps[i + 1] ?? level.stepMs)
      deleted += await this.#retrying(() =>
        this.#db.transaction().execute(async (trx) => {
          await trx
            .insertInto('tg_level_state')
            .values({ step_ms: level.stepMs, deleted_before_ms: cutoff })
            .onConflict((oc) =>
              oc.column('step_ms').doUpdateSet({
                deleted_before_ms: sql<number>`case when excluded.deleted_before_ms > tg_level_state.deleted_before_ms then excluded.deleted_before_ms else tg_level_state.deleted_before_ms end`,
              }),
            )
            .execute()
          let n = 0
          for (const table of ROLLUP_TABLES) {
            let q = trx.deleteFrom(table).where('step_ms', '=', level.stepMs).where('bucket_ms', '<', cutoff)
            if (!coarsest) q = q.where('consumed', '=', 1)
            const res = await q.executeTakeFirst()
            n += Number(res.numDeletedRows)
          }
          return n
        }),
      )
    }
    // GPU events are kept as long as the second level (1 min: 14 days by default), and never less than the
    // inventory's hour; per-report process rows as long as the finest level (they are not rolled up).
    const eventRetention = this.#levels[Math.min(1, this.#levels.length - 1)]!.retentionMs
    const processRetention = this.#levels[0]!.retentionMs
    deleted += await this.#retrying(() =>
      deleteOldGpuRows(
        this.#db,
        eventRetention === null ? null : nowMs - Math.max(eventRetention, GPU_RECENT_EVENTS_MS),
        processRetention === null ? null : nowMs - processRetention,
      ),
    )
    // Dedupe keys are needed only while agents may retry: as long as the finest level is kept.
    const finestRetention = this.#levels[0]!.retentionMs
    if (finestRetention !== null)
      await this.#db
        .deleteFrom('tg_report')
        .where('received_at_ms', '<', nowMs - finestRetention)
        .execute()
    // Keeps SQLite's planner statistics current as the tables grow (cheap; a no-op when nothing changed).
    if (this.dialect === 'sqlite') await sql`pragma optimize`.execute(this.#db)
    if (rolledUp > 0 || deleted > 0) {
      this.#wrote(rolledUp + deleted)
      this.#log(
        `store: compacted ${rolledUp} rollup rows, deleted ${deleted} rows in ${this.#clock() - startedMs} ms`,
      )
    }
    return { rolledUp, deleted }
  }

  async ping(): Promise<boolean> {
    try {
      await sql`select 1`.execute(this.#db)
      return true
    } catch {
      return false
    }
  }

  async close(): Promise<void> {
    await this.#closing()
    await this.#db.destroy()
  }

  #outputStep(stepMs: number): number {
    if (!(stepMs > 0) || !Number.isFinite(stepMs))
      throw new BadRequest(`step: expected a positive number of ms, got ${stepMs}`)
    return Math.max(this.#finestMs, ceilTo(stepMs, this.#finestMs))
  }

  /** Plans each step-aligned output bucket on its own, so no row straddles two output buckets. */
  #planSteps(range: TimeRange, step: number, available: (stepMs: number) => number): Segment[] {
    const segments: Segment[] = []
    for (let t = floorTo(range.fromMs, step); t < range.toMs; t += step)
      segments.push(
        ...planSegments(Math.max(t, range.fromMs), Math.min(t + step, range.toMs), this.#steps, available),
      )
    return joinSegments(segments)
  }

  /** Runs `fn` in one read snapshot with the retention watermarks of every level. */
  async #read(
    fn: (trx: Transaction<DB>, available: (stepMs: number) => number) => Promise<void>,
  ): Promise<void> {
    let tx = this.#db.transaction()
    if (this.dialect === 'postgres') tx = tx.setIsolationLevel('repeatable read').setAccessMode('read only')
    // Not retried: `fn` accumulates results as it goes (and a read-only snapshot cannot deadlock).
    await this.#retrying(
      () =>
        tx.execute(async (trx) => {
          const marks = new Map<number, number>()
          for (const r of await trx.selectFrom('tg_level_state').selectAll().execute())
            marks.set(Number(r.step_ms), Number(r.deleted_before_ms))
          await fn(trx, (stepMs) => marks.get(stepMs) ?? -Infinity)
        }),
      1,
    )
  }

  /**
   * The histogram rows a plan counts. A selector on the service alone (or on nothing) reads the service
   * rows on every level (one per service and bucket, or per report and service on the finest level, not one
   * per replica); any other label reads per-replica rows throughout.
   */
  async #histRows(
    trx: Transaction<DB>,
    selector: Selector,
    segments: readonly Segment[],
    metrics: readonly Metric[],
  ): Promise<
    Array<Row & { metric: string; histogram: string; series_id: number | null; service: string | null }>
  > {
    const terms = fetchTerms(segments, this.#steps, MAX_SQL_RANGES_PER_LEVEL)
    if (terms.length === 0) return []
    const read = (t: FetchTerm) => {
      const consumed = t.unconsumedOnly ? [0] : [0, 1]
      if (byServiceOnly(selector)) {
        let q = trx
          .selectFrom('tg_hist_service')
          .select(['step_ms', 'bucket_ms', 'consumed', 'metric', 'histogram'])
          .select(sql<number | null>`cast(null as integer)`.as('series_id'))
          .select((eb) => eb.ref('service').$castTo<string | null>().as('service'))
          .where('metric', 'in', metrics)
        if (selector.service !== undefined) q = q.where('service', '=', selector.service)
        return q
          .where('step_ms', '=', t.stepMs)
          .where('consumed', 'in', consumed)
          .where('bucket_ms', '>=', t.fromMs)
          .where('bucket_ms', '<', t.toMs)
      }
      // Per replica: one select per `consumed` value, each through its own index (see perReplicaTerm).
      const [unconsumed, rolledUp] = consumed.map((c) =>
        trx
          .selectFrom('tg_hist')
          .select(['step_ms', 'bucket_ms', 'consumed', 'metric', 'histogram'])
          .select((eb) => eb.ref('series_id').$castTo<number | null>().as('series_id'))
          .select(sql<string | null>`cast(null as text)`.as('service'))
          .where('metric', 'in', metrics)
          .where(seriesFilter(selector))
          .where(perReplicaTerm(t, c)),
      )
      return rolledUp ? unconsumed!.unionAll(rolledUp) : unconsumed!
    }
    let q = read(terms[0]!)
    for (const t of terms.slice(1)) q = q.unionAll(read(t))
    const rows = (await this.#execute(trx, q)).filter((r) => counted(segments, r))
    if (byServiceOnly(selector)) return rows
    const packs = await this.#packs(trx, selector, segments, terms, 'histograms')
    for (const p of packs.rows)
      for (const h of unpackHistograms(
        { series_ids: p.series_ids, histograms: p.payload },
        metrics,
        packs.keep,
      ))
        rows.push({
          step_ms: p.step_ms,
          bucket_ms: p.bucket_ms,
          consumed: p.consumed,
          metric: h.metric,
          histogram: h.histogram,
          series_id: h.seriesId,
          service: null,
        })
    return rows
  }

  /**
   * The finest level's packs a per-replica read counts (`tg_pack`), with only the column it needs as `payload`,
   * and the ids of the series the selector matches (a pack holds up to 64 replicas of its service, not only the
   * wanted ones).
   */
  async #packs(
    trx: Transaction<DB>,
    selector: Selector,
    segments: readonly Segment[],
    terms: readonly FetchTerm[],
    column: 'histograms' | 'counts',
  ): Promise<{
    rows: Array<Row & { series_ids: string; payload: string }>
    keep: ReadonlySet<number>
  }> {
    const none = { rows: [], keep: new Set<number>() }
    const finest = terms.filter((t) => t.stepMs === this.#finestMs)
    if (finest.length === 0) return none
    const ids = await trx.selectFrom('tg_series').select('id').where(labelConds(selector)).execute()
    if (ids.length === 0) return none
    const keep = new Set(ids.map((r) => Number(r.id)))
    // Packs hold a service's replicas in id order, 64 a row: only rows whose id range meets the wanted ids' range.
    let lo = Infinity
    let hi = -Infinity
    for (const id of keep) {
      if (id < lo) lo = id
      if (id > hi) hi = id
    }
    const read = (t: FetchTerm) => {
      let q = trx
        .selectFrom('tg_pack')
        .select(['step_ms', 'bucket_ms', 'consumed', 'series_ids'])
        .select((eb) => eb.ref(column).as('payload'))
        .where('step_ms', '=', t.stepMs)
        .where('consumed', 'in', t.unconsumedOnly ? [0] : [0, 1])
        .where('bucket_ms', '>=', t.fromMs)
        .where('bucket_ms', '<', t.toMs)
        .where('max_series_id', '>=', lo)
        .where('min_series_id', '<=', hi)
      if (selector.service !== undefined) q = q.where('service', '=', selector.service)
      return q
    }
    let q = read(finest[0]!)
    for (const t of finest.slice(1)) q = q.unionAll(read(t))
    return { rows: (await q.execute()).filter((r) => counted(segments, r)), keep }
  }

  async #countRows(
    trx: Transaction<DB>,
    selector: Selector,
    segments: readonly Segment[],
  ): Promise<CountRow[]> {
    const terms = fetchTerms(segments, this.#steps, MAX_SQL_RANGES_PER_LEVEL)
    if (terms.length === 0) return []
    // A selector on the service alone (or on nothing) reads the service rows, as #histRows does.
    const read = (t: FetchTerm) => {
      const consumed = t.unconsumedOnly ? [0] : [0, 1]
      if (byServiceOnly(selector)) {
        let q = trx
          .selectFrom('tg_count_service')
          .select([...COUNT_SELECT])
          .select(sql<number | null>`cast(null as integer)`.as('series_id'))
          .select((eb) => eb.ref('service').$castTo<string | null>().as('service'))
        if (selector.service !== undefined) q = q.where('service', '=', selector.service)
        return q
          .where('step_ms', '=', t.stepMs)
          .where('consumed', 'in', consumed)
          .where('bucket_ms', '>=', t.fromMs)
          .where('bucket_ms', '<', t.toMs)
      }
      const [unconsumed, rolledUp] = consumed.map((c) =>
        trx
          .selectFrom('tg_count')
          .select([...COUNT_SELECT])
          .select((eb) => eb.ref('series_id').$castTo<number | null>().as('series_id'))
          .select(sql<string | null>`cast(null as text)`.as('service'))
          .where(seriesFilter(selector))
          .where(perReplicaTerm(t, c)),
      )
      return rolledUp ? unconsumed!.unionAll(rolledUp) : unconsumed!
    }
    let q = read(terms[0]!)
    for (const t of terms.slice(1)) q = q.unionAll(read(t))
    const rows = (await this.#execute(trx, q)).filter((r) => counted(segments, r))
    if (byServiceOnly(selector)) return rows
    const packs = await this.#packs(trx, selector, segments, terms, 'counts')
    for (const p of packs.rows)
      for (const c of unpackCounts({ series_ids: p.series_ids, counts: p.payload }, packs.keep))
        rows.push({
          step_ms: p.step_ms,
          bucket_ms: p.bucket_ms,
          consumed: p.consumed,
          ...c.columns,
          series_id: c.seriesId,
          service: null,
        })
    return rows
  }

  /**
   * Runs a read of per-replica or service rows. On SQLite its per-replica selects name their index
   * ({@link withReplicaIndexes}): without planner statistics, or with some, SQLite chose the compaction index and
   * scanned every row of the time range (one replica over 5 minutes of 10,000-series data: 177 ms, 2 ms through
   * its index).
   */
  async #execute<O>(
    trx: Transaction<DB>,
    q: { compile(): CompiledQuery<O>; execute(): Promise<O[]> },
  ): Promise<O[]> {
    if (this.dialect !== 'sqlite') return q.execute()
    const compiled = q.compile()
    const text = withReplicaIndexes(compiled.sql)
    return (await trx.executeQuery(CompiledQuery.raw(text, [...compiled.parameters]))).rows as O[]
  }

  /**
   * Retries a transaction that PostgreSQL aborted for a deadlock or serialization failure. Any other
   * database error becomes `StoreUnavailable` (503: the agent keeps the report and retries).
   */
  async #retrying<T>(fn: () => Promise<T>, maxAttempts = MAX_RETRIES): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn()
      } catch (err) {
        if (err instanceof TailguardError) throw err
        const code = (err as { code?: unknown }).code
        if (attempt >= maxAttempts || typeof code !== 'string' || !RETRYABLE_PG_CODES.has(code))
          throw new StoreUnavailable(`store: ${(err as Error).message}`, { cause: err })
        this.#log(`store: retrying after ${code} (attempt ${attempt})`)
      }
    }
  }
}

/** A counter row of either table: `series_id` on tg_count, `service` on tg_count_service (the other null). */
type CountRow = Row & CountColumns & { series_id: number | null; service: string | null }

/**
 * Creates the store over an open kysely handle; `createStore` is the public entry point.
 *
 * @example const store = createSqlStore({ db, dialect: 'sqlite', levels: DEFAULT_ROLLUPS, migrationSchema: undefined, clock: Date.now, logger: () => {} })
 */
export function createSqlStore(opts: SqlStoreOptions): Store {
  return new SqlStore(opts)
}

/**
 * The internals the benchmark's bulk loader needs: the kysely handle and the row writer. Returns
 * `undefined` for a store that is not a {@link SqlStore}.
 *
 * @example await storeInternals(store)!.writeHistRows(rows)
 */
export function storeInternals(store: Store):
  | {
      readonly db: Kysely<DB>
      seriesId(labels: SeriesLabels, seenMs: number): Promise<number>
      writeHistRows(rows: readonly HistRow[]): Promise<void>
    }
  | undefined {
  return store instanceof SqlStore ? store : undefined
}

function pickLabels(l: SeriesLabels): SeriesLabels {
  return { service: l.service, model: l.model, version: l.version, replica: l.replica, node: l.node }
}

function counted(segments: readonly Segment[], r: Row): boolean {
  return rowCounts(segments, {
    stepMs: Number(r.step_ms),
    bucketMs: Number(r.bucket_ms),
    consumed: Number(r.consumed) === 1,
  })
}

/**
 * The next batch of waiting reports, taken off the front: as many as fit {@link INGEST_BATCH_MAX_ROWS} series
 * rows and {@link INGEST_BATCH_MAX_REPORTS}, and always the first.
 */
function takeBatch(waiting: WaitingReport[]): WaitingReport[] {
  let rows = 0
  let n = 0
  while (n < waiting.length && n < INGEST_BATCH_MAX_REPORTS) {
    const p = waiting[n]!.prepared
    rows += p.seriesRows
    if (n > 0 && rows > INGEST_BATCH_MAX_ROWS) break
    n++
  }
  return waiting.splice(0, n)
}

/** Column types of the bulk-inserted tables, for PostgreSQL's typed arrays. */
const BULK_TYPES: Readonly<Record<string, string>> = {
  step_ms: 'bigint',
  bucket_ms: 'bigint',
  series_id: 'integer',
  consumed: 'integer',
  ok_count: 'bigint',
  error_count: 'bigint',
  shed_count: 'bigint',
  output_tokens: 'bigint',
  metric: 'text',
  service: 'text',
  histogram: 'text',
  error_classes: 'text',
  series_ids: 'text',
  min_series_id: 'integer',
  max_series_id: 'integer',
  histograms: 'text',
  counts: 'text',
}
/** Rows per PostgreSQL bulk statement: one statement carries every row of a typical report. */
const BULK_CHUNK_ROWS = 20_000

/**
 * Inserts rows with statements whose text does not depend on the values: PostgreSQL reads one typed array per
 * column (`unnest`), one statement per {@link BULK_CHUNK_ROWS}; SQLite takes multi-row INSERTs of a few fixed sizes
 * ({@link statementSizes}) with positional parameters, whose prepared statements the connection keeps
 * ({@link withBulkStatementCache}). Ingest's hot path: kysely's per-value compilation and preparing a new multi-row
 * INSERT per chunk cost more than the database's own work, and SQLite reading the rows out of one JSON array
 * (`json_each`, before) cost 1.5x the bound parameters (10,000-series reports: 500 vs 345 ms each).
 */
async function insertChunked<
  T extends 'tg_hist' | 'tg_hist_service' | 'tg_count' | 'tg_count_service' | 'tg_pack',
>(trx: Db, table: T, rows: ReadonlyArray<RowOf<T>>): Promise<void> {
  if (rows.length === 0) return
  const columns = Object.keys(rows[0]!)
  const all = rows as ReadonlyArray<Record<string, unknown>>
  if (!(trx.getExecutor().adapter instanceof PostgresAdapter)) {
    let at = 0
    for (const size of statementSizes(all.length, columns.length)) {
      const values: unknown[] = new Array(size * columns.length)
      let k = 0
      for (let i = at; i < at + size; i++) {
        const r = all[i]!
        for (const c of columns) values[k++] = r[c]
      }
      at += size
      await trx.executeQuery(CompiledQuery.raw(bulkInsertSql(table, columns, size), values))
    }
    return
  }
  if (table === 'tg_pack') {
    // A few rows of megabytes each: bound as plain values (an array literal of them cost PostgreSQL 1.6x).
    for (let i = 0; i < all.length; i += INSERT_CHUNK_ROWS) {
      const chunk = all.slice(i, i + INSERT_CHUNK_ROWS)
      const values = chunk.map((r) => sql`(${sql.join(columns.map((c) => r[c]))})`)
      await sql`insert into ${sql.table(table)} (${sql.join(columns.map((c) => sql.ref(c)))}) values ${sql.join(values)}`.execute(
        trx,
      )
    }
    return
  }
  for (let i = 0; i < all.length; i += BULK_CHUNK_ROWS) {
    const chunk = all.slice(i, i + BULK_CHUNK_ROWS)
    const target = sql`${sql.table(table)} (${sql.join(columns.map((c) => sql.ref(c)))})`
    const arrays = columns.map((c) => sql`${chunk.map((r) => r[c])}::${sql.raw(BULK_TYPES[c]!)}[]`)
    await sql`insert into ${target} select * from unnest(${sql.join(arrays)})`.execute(trx)
  }
}

/** Whether a selector sets no label but the service: then the service rows answer it. @example byServiceOnly({ service: 'chat' }) // true */
function byServiceOnly(selector: Selector): boolean {
  return (['model', 'version', 'replica', 'node'] as const).every((k) => selector[k] === undefined)
}

/** `series_id in (…)` for the labels the selector sets; always true when it sets none. */
function seriesFilter(selector: Selector): RawBuilder<SqlBool> {
  if (LABELS.every((k) => selector[k] === undefined)) return sql<SqlBool>`1 = 1`
  return sql<SqlBool>`series_id in (select id from tg_series where ${labelConds(selector)})`
}

const LABELS = ['service', 'model', 'version', 'replica', 'node'] as const

/** The condition on `tg_series` for the labels the selector sets; always true when it sets none. */
function labelConds(selector: Selector): RawBuilder<SqlBool> {
  const conds = LABELS.filter((k) => selector[k] !== undefined).map(
    (k) => sql`${sql.ref(k)} = ${selector[k]!}`,
  )
  return conds.length === 0 ? sql<SqlBool>`1 = 1` : sql<SqlBool>`${sql.join(conds, sql` and `)}`
}

/**
 * Rolls the unconsumed `fine` histogram rows of `[fromMs, toMs)` of one table up into `coarse` rows of it, in the
 * caller's transaction: per replica (`tg_hist`) or per service (`tg_hist_service`, whose finest rows ingest writes).
 * Each table follows the `consumed` rule on its own, so each answers its queries exactly whenever the other is
 * rolled up (a query reads one of them: service rows for a service alone, per-replica rows for anything else).
 */
async function rollUpHist(
  trx: Transaction<DB>,
  table: 'tg_hist' | 'tg_hist_service',
  fine: number,
  coarse: number,
  fromMs: number,
  toMs: number,
): Promise<number> {
  if (table === 'tg_hist_service') {
    const perService = new Merge<readonly [string, string, number]>()
    for (const g of await claimGroups(
      trx,
      'tg_hist_service',
      ['service', 'metric', 'histogram'],
      fine,
      coarse,
      fromMs,
      toMs,
      (r) => `${r.service}/${r.metric}`,
    ))
      for (const r of g.rows) perService.add([r.service, r.metric, g.bucketMs], r.histogram)
    await insertChunked(
      trx,
      'tg_hist_service',
      perService.rows().map(([[service, metric, bucketMs], histogram]) => ({
        step_ms: coarse,
        bucket_ms: bucketMs,
        service,
        metric,
        consumed: 0,
        histogram,
      })),
    )
    return perService.size
  }
  const perSeries = new Merge<readonly [number, string, number]>()
  for (const g of await claimGroups(
    trx,
    'tg_hist',
    ['series_id', 'metric', 'histogram'],
    fine,
    coarse,
    fromMs,
    toMs,
    (r) => `${r.series_id}/${r.metric}`,
  ))
    for (const r of g.rows) perSeries.add([Number(r.series_id), r.metric, g.bucketMs], r.histogram)
  await insertChunked(
    trx,
    'tg_hist',
    perSeries.rows().map(([[seriesId, metric, bucketMs], histogram]) => ({
      step_ms: coarse,
      bucket_ms: bucketMs,
      series_id: seriesId,
      metric,
      consumed: 0,
      histogram,
    })),
  )
  return perSeries.size
}

/**
 * Unpacks the finest level's unconsumed packs of `[fromMs, toMs)` (`tg_pack`) into `coarse` per-replica rows of
 * `tg_hist` and `tg_count`, in the caller's transaction. Their service rows are `tg_hist_service` and
 * `tg_count_service` rows of the finest level, which {@link rollUpHist} and {@link rollUpCounts} roll up on their own.
 */
async function rollUpPacks(
  trx: Transaction<DB>,
  fine: number,
  coarse: number,
  fromMs: number,
  toMs: number,
): Promise<number> {
  const perSeries = new Merge<readonly [number, string, number]>()
  const counts = new Map<string, { seriesId: number; bucketMs: number; rows: CountColumns[] }>()
  for (const g of await claimGroups(
    trx,
    'tg_pack',
    ['series_ids', 'histograms', 'counts'],
    fine,
    coarse,
    fromMs,
    toMs,
    () => '',
  ))
    for (const r of g.rows) {
      for (const h of unpackHistograms(r, null, null))
        perSeries.add([h.seriesId, h.metric, g.bucketMs], h.histogram)
      for (const c of unpackCounts(r, null)) {
        const key = `${c.seriesId}/${g.bucketMs}`
        const sum = counts.get(key)
        if (sum) sum.rows.push(c.columns)
        else counts.set(key, { seriesId: c.seriesId, bucketMs: g.bucketMs, rows: [c.columns] })
      }
    }
  await insertChunked(
    trx,
    'tg_hist',
    perSeries.rows().map(([[seriesId, metric, bucketMs], histogram]) => ({
      step_ms: coarse,
      bucket_ms: bucketMs,
      series_id: seriesId,
      metric,
      consumed: 0,
      histogram,
    })),
  )
  await insertChunked(
    trx,
    'tg_count',
    [...counts.values()].map((c) => ({
      step_ms: coarse,
      bucket_ms: c.bucketMs,
      series_id: c.seriesId,
      consumed: 0,
      ...countColumns(sumCounts(c.rows)),
    })),
  )
  return perSeries.size + counts.size
}

/**
 * Moves `last_seen_ms` of known series forward, each to its own time (never back), in id order so that
 * concurrent transactions lock rows in one order.
 */
async function refreshSeries(
  db: Db,
  rows: ReadonlyArray<readonly [id: number, seenMs: number]>,
): Promise<void> {
  if (rows.length === 0) return
  const sorted = [...rows].sort((a, b) => a[0] - b[0])
  // PostgreSQL: one statement with ids and times as two arrays (20 statements of 500 parameters cost 2-3x as much).
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`update tg_series set last_seen_ms = v.seen_ms
      from unnest(${sorted.map((r) => r[0])}::integer[], ${sorted.map((r) => r[1])}::bigint[]) as v(id, seen_ms)
      where tg_series.id = v.id and tg_series.last_seen_ms < v.seen_ms`.execute(db)
    return
  }
  // SQLite (one writer, no lock order to keep): one statement per time, the reports of a batch share few.
  const byTime = new Map<number, number[]>()
  for (const [id, seenMs] of sorted) {
    const ids = byTime.get(seenMs)
    if (ids) ids.push(id)
    else byTime.set(seenMs, [id])
  }
  for (const [seenMs, ids] of byTime)
    for (let i = 0; i < ids.length; i += INSERT_CHUNK_ROWS)
      await db
        .updateTable('tg_series')
        .set({ last_seen_ms: seenMs })
        .where('id', 'in', ids.slice(i, i + INSERT_CHUNK_ROWS))
        .where('last_seen_ms', '<', seenMs)
        .execute()
}

/**
 * Inserts the dedupe key (agent instance, seq) of each report of a batch, in key order, and tells which are new:
 * `duplicate` for a key already stored, by another transaction or by an earlier copy in this batch (the first
 * copy to arrive is the one stored).
 */
async function insertReportKeys(trx: Db, batch: readonly PreparedReport[]): Promise<IngestOutcome[]> {
  const order = batch
    .map((p, i) => i)
    .sort(
      (i, j) =>
        byText(batch[i]!.agentInstance, batch[j]!.agentInstance) || batch[i]!.seq - batch[j]!.seq || i - j,
    )
  const out = new Array<IngestOutcome>(batch.length)
  for (const i of order) {
    const p = batch[i]!
    const fresh = await trx
      .insertInto('tg_report')
      .values({
        agent_instance: p.agentInstance,
        seq: p.seq,
        interval_start_ms: p.intervalStartMs,
        received_at_ms: p.receivedAtMs,
      })
      .onConflict((oc) => oc.columns(['agent_instance', 'seq']).doNothing())
      .returning('seq')
      .execute()
    out[i] = fresh.length === 0 ? { kind: 'duplicate' } : { kind: 'stored' }
  }
  return out
}

/** Code-unit order of two strings (a sort's comparator). */
function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/**
 * A fetch term's rows of one `consumed` value in a per-replica table: level, `consumed` and bucket range. The
 * `consumed` value is a literal, not a bound parameter: the per-replica indexes are partial, one for consumed rows
 * and one for the others (migration 2026-11-26T2200), and a planner uses a partial index only where it can prove
 * the query's condition implies the index's, which it cannot from a parameter (SQLite never, PostgreSQL not in a
 * generic plan).
 */
function perReplicaTerm(t: FetchTerm, consumed: number): RawBuilder<SqlBool> {
  return sql<SqlBool>`step_ms = ${t.stepMs} and consumed = ${sql.lit(consumed === 1 ? 1 : 0)} and bucket_ms >= ${t.fromMs} and bucket_ms < ${t.toMs}`
}

/**
 * SQLite: the per-replica selects of a read (`from "tg_hist" where …` or `tg_count`, joined by `union all`) with
 * the index each must use: the one of unconsumed rows (`…_fresh`) or of consumed rows (`…_lookup`), by the
 * `consumed` literal {@link perReplicaTerm} writes. Other selects are left as they are.
 *
 * @example withReplicaIndexes('select … from "tg_hist" where … consumed = 0 …') // 'select … from "tg_hist" indexed by "tg_hist_fresh" where …'
 */
export function withReplicaIndexes(text: string): string {
  return text
    .split(' union all ')
    .map((member) => {
      for (const table of ['tg_hist', 'tg_count']) {
        const from = `from "${table}" where `
        if (!member.includes(from)) continue
        const consumed = /\bconsumed = ([01]) and bucket_ms >= /.exec(member)?.[1]
        if (consumed === undefined) return member
        return member.replace(
          from,
          `from "${table}" indexed by "${table}_${consumed === '1' ? 'lookup' : 'fresh'}" where `,
        )
      }
      return member
    })
    .join(' union all ')
}

/** The service of each series id. */
async function serviceOf(trx: Transaction<DB>, ids: readonly number[]): Promise<Map<number, string>> {
  const unique = [...new Set(ids)]
  const out = new Map<number, string>()
  for (let i = 0; i < unique.length; i += INSERT_CHUNK_ROWS)
    for (const r of await trx
      .selectFrom('tg_series')
      .select(['id', 'service'])
      .where('id', 'in', unique.slice(i, i + INSERT_CHUNK_ROWS))
      .execute())
      out.set(Number(r.id), r.service)
  return out
}

/**
 * Rolls the unconsumed `fine` counter rows of `[fromMs, toMs)` of one table up into `coarse` rows of it, per
 * replica (`tg_count`) or per service (`tg_count_service`), in the caller's transaction, as {@link rollUpHist} does.
 */
async function rollUpCounts(
  trx: Transaction<DB>,
  table: 'tg_count' | 'tg_count_service',
  fine: number,
  coarse: number,
  fromMs: number,
  toMs: number,
): Promise<number> {
  const columns = ['consumed', ...COUNT_COLUMNS] as const
  if (table === 'tg_count_service') {
    const perService = await claimGroups(
      trx,
      'tg_count_service',
      ['service', ...columns],
      fine,
      coarse,
      fromMs,
      toMs,
      (r) => r.service,
    )
    await insertChunked(
      trx,
      'tg_count_service',
      perService.map((g) => ({
        step_ms: coarse,
        bucket_ms: g.bucketMs,
        service: g.rows[0]!.service,
        consumed: 0,
        ...countColumns(sumCounts(g.rows)),
      })),
    )
    return perService.length
  }
  const perSeries = await claimGroups(
    trx,
    'tg_count',
    ['series_id', ...columns],
    fine,
    coarse,
    fromMs,
    toMs,
    (r) => String(r.series_id),
  )
  await insertChunked(
    trx,
    'tg_count',
    perSeries.map((g) => ({
      step_ms: coarse,
      bucket_ms: g.bucketMs,
      series_id: Number(g.rows[0]!.series_id),
      consumed: 0,
      ...countColumns(sumCounts(g.rows)),
    })),
  )
  return perSeries.length
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key)
  if (list) list.push(value)
  else map.set(key, [value])
}

/** Count rows summed per `step`-aligned bucket, oldest first. */
function countBuckets(
  rows: readonly CountRow[],
  step: number,
): Array<{ readonly tMs: EpochMs; readonly counts: RequestCounts }> {
  const buckets = new Map<number, CountRow[]>()
  for (const row of rows) pushTo(buckets, floorTo(Number(row.bucket_ms), step), row)
  return [...buckets.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([tMs, list]) => ({ tMs, counts: sumCounts(list) }))
}

const COUNT_COLUMNS = ['ok_count', 'error_count', 'shed_count', 'output_tokens', 'error_classes'] as const
/** What #countRows reads of either counter table besides the row's series or service. */
const COUNT_SELECT = ['step_ms', 'bucket_ms', 'consumed', ...COUNT_COLUMNS] as const

function sumCounts(rows: readonly CountColumns[]): RequestCounts {
  if (rows.length === 0) return EMPTY_COUNTS
  let ok = 0
  let error = 0
  let shed = 0
  let outputTokens = 0
  const errorClasses = new Map<string, number>()
  for (const r of rows) {
    ok += Number(r.ok_count)
    error += Number(r.error_count)
    shed += Number(r.shed_count)
    outputTokens += Number(r.output_tokens)
    const classes = JSON.parse(r.error_classes) as Record<string, number>
    for (const [name, n] of Object.entries(classes)) errorClasses.set(name, (errorClasses.get(name) ?? 0) + n)
  }
  return { ok, error, shed, errorClasses: Object.fromEntries(errorClasses), outputTokens }
}

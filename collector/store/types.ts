import type { PreparedReport } from './prepare.js'
import type {
  GpuField,
  GpuStat,
  Histogram,
  IntervalReport,
  Metric,
  SeriesLabels,
  SignalCounter,
  SignalGauge,
} from '../report/index.js'

/** Milliseconds since the Unix epoch. */
export type EpochMs = number

/** Which series a query covers. A label left out (undefined) matches every value. */
export interface Selector {
  readonly service?: string
  readonly model?: string
  readonly version?: string
  readonly replica?: string
  readonly node?: string
}

/** A half-open time range `[fromMs, toMs)`. */
export interface TimeRange {
  readonly fromMs: EpochMs
  readonly toMs: EpochMs
}

/** Request counters summed over a selector and range. */
export interface RequestCounts {
  readonly ok: number
  readonly error: number
  readonly shed: number
  readonly errorClasses: Readonly<Record<string, number>>
  readonly outputTokens: number
}

/** One series that has reported, with the last time it did. */
export interface ServiceInfo {
  readonly service: string
  readonly model: string
  readonly version: string
  readonly replica: string
  readonly node: string
  readonly lastSeenMs: EpochMs
  readonly firstSeenMs: EpochMs
}

export type IngestOutcome = { readonly kind: 'stored' } | { readonly kind: 'duplicate' }

/** Which GPUs a GPU query covers. A key left out matches every GPU. */
export interface GpuSelector {
  readonly node?: string
  /** The physical GPU's UUID: selects the GPU and all its MIG instances. */
  readonly uuid?: string
}

/** Who a GPU row is: node, physical GPU, MIG instance (absent for a whole GPU) and the source that read it. */
export interface GpuIdentity {
  readonly node: string
  readonly uuid: string
  readonly index: number
  readonly name: string | null
  readonly pciBusId: string | null
  readonly source: string
  readonly mig: {
    readonly gpuInstanceId: number
    readonly computeInstanceId: number | null
    readonly uuid: string | null
    readonly profile: string | null
  } | null
}

/** One GPU event, with the GPU it happened on. */
export interface GpuEventInfo extends GpuIdentity {
  readonly timeMs: EpochMs
  readonly kind: string
  readonly xid: number | null
  readonly data: number | null
  readonly gpuInstanceId: number | null
  readonly computeInstanceId: number | null
  readonly message: string | null
}

/** One process on a GPU in the GPU's newest report, with the replica the agent attributed it to. */
export interface GpuProcessInfo {
  readonly pid: number
  readonly timeMs: EpochMs
  readonly gpuInstanceId: number | null
  readonly computeInstanceId: number | null
  readonly usedMemoryBytes: GpuStat | null
  readonly smUtilPct: GpuStat | null
  readonly memUtilPct: GpuStat | null
  readonly replica: {
    readonly service: string
    readonly model: string
    readonly version: string
    readonly replica: string
  } | null
  readonly podUid: string | null
  readonly containerId: string | null
}

/** One GPU in the inventory: identity, when it was seen, the state of its newest report, events and processes. */
export interface GpuInfo extends GpuIdentity {
  readonly firstSeenMs: EpochMs
  readonly lastSeenMs: EpochMs
  /** End of the interval the state below covers. */
  readonly lastReportMs: EpochMs
  readonly samples: number
  readonly fields: Readonly<Partial<Record<GpuField, GpuStat>>>
  readonly clockEventReasonsSeen: readonly string[]
  readonly unsupported: readonly string[]
  readonly k8s: Readonly<{ namespace?: string; pod?: string; container?: string }> | null
  /** Events of the last hour (before the `nowMs` given to {@link Store.gpus}), newest first. */
  readonly events: readonly GpuEventInfo[]
  readonly processes: readonly GpuProcessInfo[]
}

/** One folded GPU counter per step bucket: min, sample-weighted mean, max, and the last value. */
export interface GpuPoint {
  readonly tMs: EpochMs
  readonly min: number
  readonly mean: number
  readonly max: number
  readonly last: number
}

/** One GPU's series of one field. */
export interface GpuSeries extends GpuIdentity {
  readonly points: readonly GpuPoint[]
}

/** Per priority class, in one step bucket: what admission control held and shed. */
export interface ClassSignalPoint {
  readonly priorityClass: number
  readonly inFlight: GpuStat | null
  readonly queued: GpuStat | null
  readonly admitted: number
  readonly shed: Readonly<Record<string, number>>
}

/** One series' live signals in one step bucket: gauges folded min/mean/max/last, counters summed. */
export interface SignalPoint {
  readonly tMs: EpochMs
  readonly gauges: Readonly<Partial<Record<SignalGauge, GpuStat>>>
  readonly counters: Readonly<Partial<Record<SignalCounter, number>>>
  readonly byClass: readonly ClassSignalPoint[]
}

/**
 * How exact an imported latency histogram is: `buckets` (Prometheus buckets, quantiles interpolated within a
 * bucket), `summary` (a server-side summary's quantiles, plus count and sum), `mean` (count and sum only).
 */
export type ImportedPrecision = 'buckets' | 'summary' | 'mean'

/** An imported (bucket-form) latency histogram merged over a range: never HDR-exact. */
export interface ImportedHistogram {
  readonly precision: ImportedPrecision
  readonly boundsMs: readonly number[]
  readonly counts: readonly number[]
  readonly count: number
  readonly sumMs: number
  /** The newest summary quantiles in the range, when the server exports a summary. */
  readonly quantilesMs: ReadonlyArray<{ readonly q: number; readonly ms: number }> | null
  /** Distinct bucket layouts seen (more than 1: the server changed its buckets; see `otherLayoutsCount`). */
  readonly layouts: number
  readonly otherLayoutsCount: number
  readonly sources: readonly string[]
}

/** One step bucket of an imported histogram. */
export interface ImportedHistogramPoint extends ImportedHistogram {
  readonly tMs: EpochMs
}

/** One series' live signals over a range: step points, the sources that sent them and imported histograms. */
export interface SignalSeries {
  readonly labels: SeriesLabels
  readonly sources: readonly string[]
  readonly points: readonly SignalPoint[]
  readonly histograms: Readonly<
    Partial<
      Record<
        Metric,
        { readonly total: ImportedHistogram; readonly points: readonly ImportedHistogramPoint[] }
      >
    >
  >
}

/** The rollup resolutions, finest first. The finest is the storage grid every report is folded into. */
export interface RollupLevel {
  readonly name: string
  readonly stepMs: number
  /** How long rows of this level are kept; `null` keeps them forever. */
  readonly retentionMs: number | null
}

/**
 * Everything the collector's routes, the SLO engine and the controller need from storage. Only
 * `createStore(config)` knows whether SQLite or PostgreSQL sits behind it.
 *
 * Time ranges are aligned to the finest rollup step (10 s by default): a bucket belongs to a range
 * when its start lies in `[fromMs, toMs)`.
 *
 * @example
 * ```ts
 * const store = await createStore({ db: 'sqlite:./tailguard.db' })
 * await store.ingest(report, Date.now())
 * const h = await store.histograms({ service: 'chat' }, { fromMs, toMs }, ['total'])
 * ```
 */
export interface Store {
  readonly dialect: 'sqlite' | 'postgres'
  /** The rollup levels' steps, finest first (default time-series steps snap to them). */
  readonly rollupStepsMs?: readonly number[]
  /** Applies pending migrations; never throws for a migration failure, returns it. */
  migrate(): Promise<
    { kind: 'ok'; applied: readonly string[] } | { kind: 'failed'; migration: string; error: string }
  >
  /**
   * Stores one report durably (one transaction), or reports it as a duplicate of one already stored
   * (same agent instance and seq). Resolves only once the data is committed.
   */
  ingest(report: IntervalReport, receivedAtMs: EpochMs): Promise<IngestOutcome>
  /** {@link ingest} of a report already checked and turned into rows (`prepareReport`, maybe on a worker thread). */
  ingestPrepared(prepared: PreparedReport): Promise<IngestOutcome>
  /** The finest level's step: what `prepareReport` needs to place a report's rows. */
  readonly finestStepMs: number
  /** Merged histograms per metric over the selector and range, using the coarsest rollups that fit. */
  histograms(
    selector: Selector,
    range: TimeRange,
    metrics: readonly Metric[],
  ): Promise<Map<Metric, Histogram>>
  /** One merged histogram per step-aligned bucket, oldest first; buckets with no data are absent. */
  timeseries(
    selector: Selector,
    range: TimeRange,
    metric: Metric,
    stepMs: number,
  ): Promise<Array<{ readonly tMs: EpochMs; readonly histogram: Histogram }>>
  /** Request counters over the selector and range. */
  counts(selector: Selector, range: TimeRange): Promise<RequestCounts>
  /** Request counters per step-aligned bucket (for error-rate series and SLO windows). */
  countSeries(
    selector: Selector,
    range: TimeRange,
    stepMs: number,
  ): Promise<Array<{ readonly tMs: EpochMs; readonly counts: RequestCounts }>>
  /**
   * {@link Store.countSeries} of every service at once, in one read: service → its buckets (services without a
   * request in the range are absent).
   */
  countSeriesByService(
    range: TimeRange,
    stepMs: number,
  ): Promise<Map<string, Array<{ readonly tMs: EpochMs; readonly counts: RequestCounts }>>>
  /**
   * {@link Store.histograms} of every service at once, in one read: service → metric → merged histogram (services
   * without data in the range are absent; a present service has every metric, empty where it has none).
   */
  histogramsByService(
    range: TimeRange,
    metrics: readonly Metric[],
  ): Promise<Map<string, Map<Metric, Histogram>>>
  /**
   * Live signals (gauges, counters, per-class admission) and imported bucket histograms per series and
   * step-aligned bucket, oldest first, from the coarsest rollups that fit. Series without any are absent.
   */
  signals(selector: Selector, range: TimeRange, stepMs: number): Promise<SignalSeries[]>
  /** Every series that has reported, with first and last seen times. */
  services(): Promise<ServiceInfo[]>
  /**
   * Every GPU (and MIG instance) that has reported: the state of its newest report, its events of the hour
   * before `nowMs` (default: the store's clock), and the processes of its newest report with their replicas.
   */
  gpus(nowMs?: EpochMs): Promise<GpuInfo[]>
  /** One GPU field per GPU per step-aligned bucket (oldest first; empty buckets absent), from the coarsest rollups that fit. */
  gpuSeries(selector: GpuSelector, range: TimeRange, field: GpuField, stepMs: number): Promise<GpuSeries[]>
  /** GPU events whose time lies in the range, newest first. */
  gpuEvents(range: TimeRange, selector?: GpuSelector): Promise<GpuEventInfo[]>
  /** Builds closed rollups and deletes rows past retention. Safe to run from several collectors at once. */
  compact(nowMs: EpochMs): Promise<{ readonly rolledUp: number; readonly deleted: number }>
  /** True when the database answers. */
  ping(): Promise<boolean>
  close(): Promise<void>
}

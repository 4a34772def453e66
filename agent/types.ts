import type {
  BucketHistogram,
  Metric,
  Phase,
  RequestStatus,
  SeriesLabels,
  SignalCounter,
  SignalGauge,
} from '../collector/index.js'

/** Microseconds, as recorded in histograms. */
export type DurationUs = number
/** Milliseconds, as spoken by the API and configs. */
export type DurationMs = number

/**
 * One finished request as a source saw it. Phases it did not go through are left out.
 *
 * @example
 * ```ts
 * sink.recordRequest({ labels, status: 'ok', phasesUs: { queue: 800, kernel: 4200, total: 5600 }, outputTokens: 42 })
 * ```
 */
export interface RequestSample {
  readonly labels: SeriesLabels
  readonly status: RequestStatus
  /** Error class (`timeout`, `oom`, `http_500`, …) when `status` is `error` or the shed reason when `shed`. */
  readonly errorClass?: string
  readonly phasesUs: Readonly<Partial<Record<Phase, DurationUs>>>
  readonly ttftUs?: DurationUs
  readonly tpotUs?: DurationUs
  readonly outputTokens?: number
}

/**
 * Live signals one source observed for one series at one moment: each gauge is one sample (folded min/mean/max/last
 * over the interval), each counter and bucket histogram an increment since the source's previous observation.
 *
 * @example
 * ```ts
 * sink.recordSignals?.(labels, { source: 'scrape:vllm', gauges: { running: 12, waiting: 3, kvCacheUsage: 0.62 },
 *   counters: { outputTokens: 5120 }, requests: { ok: 40, error: 0 } })
 * ```
 */
export interface SignalObservation {
  /** Where the signals come from (`scrape:vllm`, `proxy`, `sdk`, `otlp`, …). */
  readonly source: string
  readonly gauges?: Readonly<Partial<Record<SignalGauge, number>>>
  readonly counters?: Readonly<Partial<Record<SignalCounter, number>>>
  /** Per priority class (the proxy's admission control). Gauges are samples, counts are increments. */
  readonly byClass?: ReadonlyArray<{
    readonly priorityClass: number
    readonly inFlight?: number
    readonly queued?: number
    readonly admitted?: number
    readonly shed?: Readonly<Record<string, number>>
  }>
  /** Latency histograms in Prometheus bucket form: increments since the previous observation, per metric. */
  readonly buckets?: Readonly<Partial<Record<Metric, BucketHistogram>>>
  /** Finished requests counted by the source (a scraped server's success and failure counters), increments. */
  readonly requests?: { readonly ok: number; readonly error: number }
}

/** Where sources put what they observe. The recorder implements it; it never throws. */
export interface SampleSink {
  /** Records one finished request: its phases, status and token figures. */
  recordRequest(sample: RequestSample): void
  /** Records one latency observation outside a whole request (e.g. a span that carries one phase only). */
  recordLatency(labels: SeriesLabels, metric: Metric, durationUs: DurationUs): void
  /** Counts an observation refused by a source, by reason. */
  drop(reason: string, n?: number): void
  /** Records live signals (gauges, counters, per-class admission, bucket histograms) of one series. */
  recordSignals?(labels: SeriesLabels, observation: SignalObservation): void
}

export type SourceStatus =
  { readonly state: 'ok' } | { readonly state: 'unavailable'; readonly reason: string }

/** Every agent source implements this (STYLE.md section 7). */
export interface Source {
  readonly name: string
  status(): SourceStatus
  start(sink: SampleSink): void | Promise<void>
  stop(): Promise<void>
}

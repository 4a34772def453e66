import type { Metric, Phase, RequestStatus, SeriesLabels } from '../collector/index.js'

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

/** Where sources put what they observe. The recorder implements it; it never throws. */
export interface SampleSink {
  /** Records one finished request: its phases, status and token figures. */
  recordRequest(sample: RequestSample): void
  /** Records one latency observation outside a whole request (e.g. a span that carries one phase only). */
  recordLatency(labels: SeriesLabels, metric: Metric, durationUs: DurationUs): void
  /** Counts an observation refused by a source, by reason. */
  drop(reason: string, n?: number): void
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

/**
 * Types of the collector's query API responses (collector/routes/query.ts), as the dashboard reads them.
 * Times are ISO strings, latencies milliseconds as floats.
 *
 * @example
 * ```ts
 * import type { BreakdownResponse } from './api-types.js'
 * const p99 = (b: BreakdownResponse) => b.total.quantiles['0.99'] ?? null
 * ```
 */

/** Quantile (as decimal text, e.g. `"0.99"`) to milliseconds, `null` when there is no data. */
export type Quantiles = Readonly<Record<string, number | null>>

/** One reporting series, as listed by `GET /api/v1/services`. */
export interface ServiceSeries {
  readonly service: string
  readonly model: string
  readonly version: string
  readonly replica: string
  readonly node: string
  readonly firstSeen: string
  readonly lastSeen: string
}

/** `GET /api/v1/services`. */
export interface ServicesResponse {
  readonly services: readonly ServiceSeries[]
}

/** Count, extremes, mean and quantiles of one latency histogram (ms). */
export interface LatencySummary {
  readonly count: number
  readonly min: number | null
  readonly max: number | null
  readonly mean: number | null
  readonly quantiles: Quantiles
}

/** `GET /api/v1/latency`. */
export interface LatencyResponse extends LatencySummary {
  readonly phase: string
  readonly from: string
  readonly to: string
}

/** One phase (or token metric) of a breakdown; `share` is its part of total time, `null` for ttft/tpot. */
export interface PhaseSummary extends LatencySummary {
  readonly phase: string
  readonly share: number | null
}

/** Request outcome counts of a breakdown. */
export interface RequestCounts {
  readonly ok: number
  readonly error: number
  readonly shed: number
  readonly errorClasses: Readonly<Record<string, number>>
  readonly outputTokens: number
}

/** `GET /api/v1/breakdown`. */
export interface BreakdownResponse {
  readonly from: string
  readonly to: string
  readonly total: LatencySummary
  readonly phases: readonly PhaseSummary[]
  readonly requests: RequestCounts
}

/** One bucket of a time series. */
export interface TimeseriesPoint {
  readonly t: string
  readonly count: number
  readonly ratePerSecond: number
  readonly quantiles: Quantiles
}

/** `GET /api/v1/timeseries`. */
export interface TimeseriesResponse {
  readonly from: string
  readonly to: string
  readonly phase: string
  readonly stepMs: number
  readonly quantiles: readonly string[]
  readonly points: readonly TimeseriesPoint[]
}

/** The body of every API error. */
export interface ApiErrorBody {
  readonly code: string
  readonly statusCode: number
  readonly message: string
}

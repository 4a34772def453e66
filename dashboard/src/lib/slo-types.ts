/**
 * Types of the collector's SLO API responses (collector/routes/slos.ts), as the dashboard reads them.
 * Ratios are 0..1 floats; times are ISO strings; `null` before the first evaluation or without traffic.
 *
 * @example
 * ```ts
 * import type { SloListResponse } from './slo-types.js'
 * const names = (r: SloListResponse) => r.slos.map((s) => s.name)
 * ```
 */

/** One burn-rate alert tier of an SLO at its last evaluation. */
export interface SloAlertStatus {
  readonly tier: string
  /** `page` or `ticket`. */
  readonly severity: string
  /** The burn rate both windows must exceed for the alert's condition to hold. */
  readonly factor: number
  readonly longWindow: string
  readonly shortWindow: string
  readonly longBurnRate: number
  readonly shortBurnRate: number
  readonly condition: boolean
  /** `inactive`, `pending`, `firing`, `silenced` or `resolved`. */
  readonly state: string
  readonly firedAt: string | null
  readonly resolvedAt: string | null
  readonly silenceId: string | null
}

/** The error budget as events, ratios and time. */
export interface SloErrorBudget {
  readonly totalEvents: number
  readonly consumedEvents: number
  readonly remainingEvents: number
  readonly consumedRatio: number
  readonly remainingRatio: number
  readonly totalTimeMs: number
  readonly remainingTimeMs: number
}

/** `forecast.state`: `never`, `exhausted`, `at` (with `exhaustedAt`), or `unknown` before an evaluation. */
export interface SloForecast {
  readonly state: string
  readonly exhaustedAt: string | null
}

/** One SLO's status (an element of `GET /api/v1/slos`). */
export interface SloStatus {
  readonly name: string
  readonly description: string
  /** `file` or `api`. */
  readonly source: string
  /** `latency`, `availability` or `llm`. */
  readonly kind: string
  readonly selector: Readonly<Record<string, string>>
  readonly objective: number
  readonly window: string
  readonly budgeting: string
  readonly thresholdMs: number | null
  readonly phase: string | null
  readonly sli: number | null
  readonly budgetRemaining: number | null
  readonly events: { readonly good: number; readonly total: number }
  readonly errorBudget: SloErrorBudget | null
  /** Burn rate per window text (`5m`, `1h`, …, and the SLO window). */
  readonly burnRates: Readonly<Record<string, number>>
  readonly forecast: SloForecast
  readonly alerts: readonly SloAlertStatus[]
  readonly windowStart: string | null
  readonly evaluatedAt: string | null
}

/** `GET /api/v1/slos`. */
export interface SloListResponse {
  readonly slos: readonly SloStatus[]
}

/** `GET /api/v1/slos/{name}`: the status, the hourly burn-down and the definition. */
export interface SloDetailResponse extends SloStatus {
  readonly burnDown: ReadonlyArray<{ readonly t: string; readonly remainingRatio: number }>
  readonly definition: Readonly<Record<string, unknown>>
}

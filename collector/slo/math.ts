/**
 * SLO math: pure functions over plain numbers and HDR histograms (STYLE.md section 10). Nothing here
 * touches the store, the clock or fastify.
 */
import type { Histogram } from '../report/index.js'

export const MINUTE_MS = 60_000
export const HOUR_MS = 3_600_000
export const DAY_MS = 86_400_000

/**
 * How many times faster than "exactly on budget" errors are arriving: 1 means the budget would be spent
 * exactly at the end of the window; 14.4 spends a 30-day budget in 50 hours.
 *
 * @example burnRate(15, 1000, 0.999) // 15
 */
export const burnRate = (bad: number, total: number, objective: number): number =>
  total <= 0 ? 0 : bad / total / (1 - objective)

/** Whether an alert tier pages someone or opens a ticket. */
export type Severity = 'page' | 'ticket'

/** One multiwindow burn-rate alert tier. Windows are in ms. */
export interface BurnTier {
  /** Stable identifier, used in alert names and silences (`page-1h`). */
  readonly id: string
  readonly factor: number
  readonly longWindowMs: number
  readonly shortWindowMs: number
  readonly severity: Severity
}

/**
 * The Google SRE workbook's tiers for a 30-day SLO. {@link alertTiers} rescales them for other windows.
 *
 * @example DEFAULT_BURN_TIERS[0] // { id: 'page-1h', factor: 14.4, longWindowMs: 3600000, shortWindowMs: 300000, severity: 'page' }
 */
export const DEFAULT_BURN_TIERS: readonly BurnTier[] = [
  { id: 'page-1h', factor: 14.4, longWindowMs: HOUR_MS, shortWindowMs: 5 * MINUTE_MS, severity: 'page' },
  { id: 'page-6h', factor: 6, longWindowMs: 6 * HOUR_MS, shortWindowMs: 30 * MINUTE_MS, severity: 'page' },
  { id: 'ticket-1d', factor: 3, longWindowMs: DAY_MS, shortWindowMs: 2 * HOUR_MS, severity: 'ticket' },
  { id: 'ticket-3d', factor: 1, longWindowMs: 3 * DAY_MS, shortWindowMs: 6 * HOUR_MS, severity: 'ticket' },
]

/** The SLO window the default tiers are written for. */
export const REFERENCE_WINDOW_MS = 30 * DAY_MS

/**
 * The tiers for an SLO window: the alert windows scale with `windowMs / 30 d` (as pyrra scales its 28-day
 * table), rounded to whole multiples of `granularityMs` (at least one), and the factors stay the same,
 * so each tier still means "this share of the budget spent in this share of the window".
 *
 * @example alertTiers(7 * DAY_MS)[0].longWindowMs // 840000 (14 min)
 */
export function alertTiers(
  windowMs: number,
  tiers: readonly BurnTier[] = DEFAULT_BURN_TIERS,
  granularityMs = MINUTE_MS,
): BurnTier[] {
  const scale = windowMs / REFERENCE_WINDOW_MS
  const round = (ms: number) =>
    Math.max(granularityMs, Math.round((ms * scale) / granularityMs) * granularityMs)
  return tiers.map((t) => ({
    ...t,
    longWindowMs: round(t.longWindowMs),
    shortWindowMs: round(t.shortWindowMs),
  }))
}

/**
 * Share of the whole window's budget that burning at `rate` for `durationMs` consumes.
 *
 * @example budgetConsumedBy(14.4, HOUR_MS, 30 * DAY_MS) // 0.02
 */
export const budgetConsumedBy = (rate: number, durationMs: number, windowMs: number): number =>
  (rate * durationMs) / windowMs

/**
 * The error budget as time: how long the service may be fully down within the window.
 *
 * @example budgetTimeMs(0.999, 30 * DAY_MS) // 2592000 (43.2 minutes)
 */
export const budgetTimeMs = (objective: number, windowMs: number): number => (1 - objective) * windowMs

/**
 * A number without binary floating-point noise, for answers people read: 12 significant digits, far below any
 * figure the API means but far above the noise of `(1 − 0.999) × 25200` (`25.200000000000024` → `25.2`).
 *
 * @example withoutFloatNoise(25.200000000000024) // 25.2
 */
export const withoutFloatNoise = (x: number): number => (Number.isFinite(x) ? Number(x.toPrecision(12)) : x)

/**
 * An {@link ErrorBudget} with every figure passed through {@link withoutFloatNoise}, as the API serves it.
 *
 * @example tidyBudget(errorBudget(25_000, 25_200, 0.999, DAY_MS)).totalEvents // 25.2
 */
export function tidyBudget(b: ErrorBudget): ErrorBudget {
  return Object.fromEntries(
    Object.entries(b).map(([k, v]) => [k, withoutFloatNoise(v as number)]),
  ) as unknown as ErrorBudget
}

/**
 * The step of the burn-down series for data that spans `spanMs`: the finest of 1 min, 5 min, 15 min and 1 h
 * that keeps it at 360 points or fewer, so a chart of minutes of data is not a single hourly point.
 *
 * @example burnDownStepMs(20 * MINUTE_MS) // 60000
 */
export function burnDownStepMs(spanMs: number): number {
  for (const step of [MINUTE_MS, 5 * MINUTE_MS, 15 * MINUTE_MS]) if (spanMs / step <= 360) return step
  return HOUR_MS
}

/**
 * A cumulative burn-down series cut to its data: the points before the first one with events are dropped
 * but one (where the budget is still whole), so the chart zooms to the data instead of drawing a flat 100% line
 * over a 30-day window. A series without events is returned as it is.
 *
 * @example trimToData([{ tMs: 1, total: 0 }, { tMs: 2, total: 0 }, { tMs: 3, total: 5 }]) // [{ tMs: 2, … }, { tMs: 3, … }]
 */
export function trimToData<T extends { readonly total: number }>(points: readonly T[]): T[] {
  const first = points.findIndex((p) => p.total > 0)
  return first < 0 ? [...points] : points.slice(Math.max(0, first - 1))
}

/** The error budget of one SLO over its window, as ratios (0..1), events and time. */
export interface ErrorBudget {
  /** Bad events the window allows given the events seen so far: `(1 − objective) × total`. */
  readonly totalEvents: number
  readonly consumedEvents: number
  readonly remainingEvents: number
  /** Consumed share of the budget; above 1 when the budget is overspent. */
  readonly consumedRatio: number
  /** `1 − consumedRatio`; negative when overspent. */
  readonly remainingRatio: number
  /** The budget as full-outage time, `(1 − objective) × window`. */
  readonly totalTimeMs: number
  readonly remainingTimeMs: number
}

/**
 * Error budget from good and total events over the SLO window.
 *
 * @example errorBudget(999_500, 1_000_000, 0.999, 30 * DAY_MS).remainingRatio // 0.5
 */
export function errorBudget(good: number, total: number, objective: number, windowMs: number): ErrorBudget {
  const allowed = (1 - objective) * total
  const bad = Math.max(0, total - good)
  const consumedRatio = allowed > 0 ? bad / allowed : 0
  const totalTimeMs = budgetTimeMs(objective, windowMs)
  return {
    totalEvents: allowed,
    consumedEvents: bad,
    remainingEvents: allowed - bad,
    consumedRatio,
    remainingRatio: 1 - consumedRatio,
    totalTimeMs,
    remainingTimeMs: (1 - consumedRatio) * totalTimeMs,
  }
}

/** When the budget runs out if the current burn continues. */
export type BudgetForecast =
  | { readonly kind: 'never' }
  | { readonly kind: 'exhausted' }
  | { readonly kind: 'at'; readonly atMs: number; readonly inMs: number }

/**
 * Forecast of budget exhaustion at a constant burn rate: the remaining share of the budget divided by
 * the share spent per ms (`rate / windowMs`).
 *
 * @example forecastExhaustion(0.5, 2, 30 * DAY_MS, 0) // { kind: 'at', atMs: 648000000, inMs: 648000000 } (7.5 days)
 */
export function forecastExhaustion(
  remainingRatio: number,
  rate: number,
  windowMs: number,
  nowMs: number,
): BudgetForecast {
  if (remainingRatio <= 0) return { kind: 'exhausted' }
  if (!(rate > 0)) return { kind: 'never' }
  const inMs = Math.round((remainingRatio * windowMs) / rate)
  return { kind: 'at', atMs: nowMs + inMs, inMs }
}

/**
 * Events at or below `thresholdUs` in a latency histogram, at any threshold. Whole buckets below the
 * threshold count fully; the one bucket that straddles it counts in proportion to the share of it at or
 * below the threshold (values are spread evenly inside a bucket), so the error is at most one bucket's
 * width, ≤ 0.1% of the value. The result is linear in the counts, so per-bucket results add up to the
 * result on the merged histogram.
 *
 * @example
 * ```ts
 * const h = newHistogram(); h.recordValue(150_000); h.recordValue(250_000)
 * countAtOrBelow(h, 187_000) // 1
 * ```
 */
export function countAtOrBelow(h: Histogram, thresholdUs: number): number {
  return h.countAtOrBelow(thresholdUs)
}

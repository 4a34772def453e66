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

/** The part of hdr-histogram-js's JsHistogram that {@link countAtOrBelow} reads. */
interface BucketedHistogram {
  readonly totalCount: number
  readonly minNonZeroValue: number
  readonly maxValue: number
  countsArrayIndex(value: number): number
  getCountAtIndex(index: number): number
  lowestEquivalentValue(value: number): number
  highestEquivalentValue(value: number): number
}

function bucketed(h: Histogram): BucketedHistogram | undefined {
  const b = h as unknown as Partial<BucketedHistogram>
  return typeof b.getCountAtIndex === 'function' && typeof b.countsArrayIndex === 'function'
    ? (b as BucketedHistogram)
    : undefined
}

/**
 * Events at or below `thresholdUs` in an HDR histogram, at any threshold. Whole buckets below the
 * threshold count fully; the one bucket that straddles it counts in proportion to the share of its
 * integer values at or below the threshold (values are spread evenly inside a bucket), so the error is
 * at most one bucket's width, ≤ 0.1% of the value. The result is linear in the counts, so per-bucket
 * results add up to the result on the merged histogram.
 *
 * @example
 * ```ts
 * const h = newHistogram(); h.recordValue(150_000); h.recordValue(250_000)
 * countAtOrBelow(h, 187_000) // 1
 * ```
 */
export function countAtOrBelow(h: Histogram, thresholdUs: number): number {
  if (h.totalCount === 0 || !(thresholdUs >= 0)) return 0
  const b = bucketed(h)
  if (!b) throw new TypeError('countAtOrBelow needs a JS HDR histogram (newHistogram())')
  const t = Math.floor(thresholdUs)
  if (t >= h.maxValue) return h.totalCount
  const index = b.countsArrayIndex(t)
  // Recorded zeros sit at index 0, below minNonZeroValue.
  const first = b.getCountAtIndex(0) > 0 ? 0 : b.countsArrayIndex(h.minNonZeroValue)
  if (index < first) return 0
  const last = b.countsArrayIndex(h.maxValue)
  const inBucket = b.getCountAtIndex(index)
  const share =
    inBucket > 0
      ? (inBucket * (t - b.lowestEquivalentValue(t) + 1)) /
        (b.highestEquivalentValue(t) - b.lowestEquivalentValue(t) + 1)
      : 0
  // Walk whichever side of the threshold holds fewer buckets.
  if (index - first <= last - index) {
    let below = 0
    for (let i = first; i < index; i++) below += b.getCountAtIndex(i)
    return below + share
  }
  let above = 0
  for (let i = index + 1; i <= last; i++) above += b.getCountAtIndex(i)
  return h.totalCount - above - inBucket + share
}

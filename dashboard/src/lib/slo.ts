/**
 * Pure transforms for the SLO pages: SLO API responses → table rows, bar widths, chart rows and text.
 * Every budget figure comes from the API (STYLE.md section 13): these functions only reshape, clamp for
 * drawing and format; they never recompute an SLI, a budget or a burn rate.
 *
 * @example
 * ```ts
 * budgetBar(0.52) // { widthPct: 52, label: '52%', tone: 'ok' }
 * ```
 */
import type { SloAlertStatus, SloDetailResponse, SloForecast, SloStatus } from './slo-types.js'

const DASH = '–'

/** Text shown when the collector has no SLO. */
export const NO_SLOS = 'No SLOs defined — see the README to add some'

/** Rounds to `digits` significant digits and drops trailing zeros. */
const sig = (value: number, digits: number) => (value === 0 ? '0' : String(Number(value.toPrecision(digits))))

/**
 * An objective as a percentage with every digit it has (`0.999` → `99.9%`, `0.9995` → `99.95%`).
 *
 * @example formatObjective(0.9995) // '99.95%'
 */
export function formatObjective(ratio: number): string {
  return `${String(Number((ratio * 100).toPrecision(10)))}%`
}

/**
 * An SLI as a percentage with five significant digits, so that 99.95% and 99.90% differ (`null` → dash).
 *
 * @example formatSli(0.99952) // '99.952%'
 */
export function formatSli(ratio: number | null | undefined): string {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return DASH
  return `${sig(ratio * 100, 5)}%`
}

/**
 * A burn rate as a multiple of the sustainable rate, three significant digits.
 *
 * @example formatBurnRate(14.4) // '14.4×'
 */
export function formatBurnRate(rate: number | null | undefined): string {
  if (rate === null || rate === undefined || !Number.isFinite(rate)) return DASH
  return `${sig(rate, 3)}×`
}

/**
 * A span of time in the largest unit that keeps it readable (budget time: `43.2 min`, `2.5 d`).
 *
 * @example formatSpan(2_592_000) // '43.2 min'
 */
export function formatSpan(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return DASH
  const sign = ms < 0 ? '-' : ''
  const abs = Math.abs(ms)
  if (abs < 60_000) return `${sign}${sig(abs / 1000, 3)} s`
  if (abs < 3_600_000) return `${sign}${sig(abs / 60_000, 3)} min`
  if (abs < 86_400_000) return `${sign}${sig(abs / 3_600_000, 3)} h`
  return `${sign}${sig(abs / 86_400_000, 3)} d`
}

/** How a budget bar is drawn. */
export interface BudgetBar {
  /** Width of the filled part, 0..100 (an overspent budget draws empty). */
  readonly widthPct: number
  /** The remaining ratio as text: `52%`, `-900%` when overspent, a dash without data. */
  readonly label: string
  /** `ok` above 25% left, `warn` above 0, `bad` when spent, `none` without data. */
  readonly tone: 'ok' | 'warn' | 'bad' | 'none'
}

/**
 * The error-budget bar for the API's `budgetRemaining` (0..1, negative when overspent, null without data).
 *
 * @example budgetBar(-0.5) // { widthPct: 0, label: '-50%', tone: 'bad' }
 */
export function budgetBar(remaining: number | null | undefined): BudgetBar {
  if (remaining === null || remaining === undefined || !Number.isFinite(remaining))
    return { widthPct: 0, label: DASH, tone: 'none' }
  const widthPct = Math.min(100, Math.max(0, remaining * 100))
  const tone = remaining <= 0 ? 'bad' : remaining < 0.25 ? 'warn' : 'ok'
  return { widthPct, label: `${sig(remaining * 100, 3)}%`, tone }
}

const STATE_ORDER: Readonly<Record<string, number>> = {
  firing: 0,
  pending: 1,
  silenced: 2,
  resolved: 3,
  inactive: 4,
}
const SEVERITY_ORDER: Readonly<Record<string, number>> = { page: 0, ticket: 1 }

/**
 * The alerts worth listing (every state but `inactive`), firing first, then pages before tickets.
 *
 * @example activeAlerts(status).map((a) => `${a.state} ${a.tier}`) // ['firing page-1h']
 */
export function activeAlerts(status: Pick<SloStatus, 'alerts'>): SloAlertStatus[] {
  return status.alerts
    .filter((a) => a.state !== 'inactive')
    .sort(
      (a, b) =>
        (STATE_ORDER[a.state] ?? 9) - (STATE_ORDER[b.state] ?? 9) ||
        (SEVERITY_ORDER[a.severity] ?? 9) - (SEVERITY_ORDER[b.severity] ?? 9),
    )
}

/**
 * The SLO's overall state for the list: the most urgent alert state (`firing`, `pending`, `silenced`),
 * `ok`, or `no-data` before the first evaluation or without events.
 *
 * @example sloState(status) // 'firing'
 */
export function sloState(
  status: Pick<SloStatus, 'alerts' | 'sli'>,
): 'firing' | 'pending' | 'silenced' | 'ok' | 'no-data' {
  const top = activeAlerts(status)[0]?.state
  if (top === 'firing' || top === 'pending' || top === 'silenced') return top
  return status.sli === null ? 'no-data' : 'ok'
}

/** One alert tier as the pages show it: the API's figures plus which window is over the threshold. */
export interface TierRow extends SloAlertStatus {
  readonly longOver: boolean
  readonly shortOver: boolean
}

/**
 * The alert tiers in the API's order, each marked with which of its windows burns above its factor.
 *
 * @example tierRows(status)[0] // { tier: 'page-1h', factor: 14.4, longBurnRate: 20, longOver: true, … }
 */
export function tierRows(status: Pick<SloStatus, 'alerts'>): TierRow[] {
  return status.alerts.map((a) => ({
    ...a,
    longOver: a.longBurnRate > a.factor,
    shortOver: a.shortBurnRate > a.factor,
  }))
}

/** One bar group of the burn-rate chart. */
export interface BurnRateRow {
  readonly tier: string
  /** Axis label: `page-1h (1h / 5m)`. */
  readonly label: string
  readonly long: number
  readonly short: number
  readonly factor: number
}

/**
 * Rows of the burn-rate chart: per tier, the long and short windows' burn rates and the tier's factor.
 *
 * @example burnRateRows(status) // [{ tier: 'page-1h', label: 'page-1h (1h / 5m)', long: 0.5, short: 0.4, factor: 14.4 }, …]
 */
export function burnRateRows(status: Pick<SloStatus, 'alerts'>): BurnRateRow[] {
  return status.alerts.map((a) => ({
    tier: a.tier,
    label: `${a.tier} (${a.longWindow} / ${a.shortWindow})`,
    long: a.longBurnRate,
    short: a.shortBurnRate,
    factor: a.factor,
  }))
}

/** One point of the burn-down chart. */
export interface BurnDownRow {
  readonly tMs: number
  /** Remaining error budget in percent (negative when overspent). */
  readonly remainingPct: number
}

/**
 * The API's hourly burn-down series as chart rows (percent), oldest first.
 *
 * @example burnDownRows({ burnDown: [{ t: '2026-01-01T01:00:00.000Z', remainingRatio: 0.9 }] }) // [{ tMs: 1767229200000, remainingPct: 90 }]
 */
export function burnDownRows(detail: Pick<SloDetailResponse, 'burnDown'>): BurnDownRow[] {
  return detail.burnDown
    .map((p) => ({ tMs: Date.parse(p.t), remainingPct: p.remainingRatio * 100 }))
    .filter((p) => Number.isFinite(p.tMs) && Number.isFinite(p.remainingPct))
    .sort((a, b) => a.tMs - b.tMs)
}

/**
 * The y range of the burn-down chart in percent: 0..100, widened down to the lowest point when overspent,
 * with its low end on a whole tick (see {@link burnDownTicks}).
 *
 * @example burnDownDomain([{ tMs: 0, remainingPct: -40 }]) // [-50, 100]
 */
export function burnDownDomain(rows: readonly BurnDownRow[]): [number, number] {
  const low = rows.reduce((m, r) => Math.min(m, r.remainingPct), 0)
  const step = tickStep(100 - low)
  return [Math.floor(low / step) * step, 100]
}

const tickStep = (span: number): number =>
  [25, 50, 100, 250, 500, 1000, 2500, 5000].find((s) => span / s <= 6) ??
  10 ** Math.ceil(Math.log10(span / 6))

/**
 * Evenly spaced y ticks for a burn-down domain, through 0 and 100 (`0, 25, 50, 75, 100`; `-50, 0, 50, 100`),
 * instead of the chart library's own picks from the data (`100, 84, 54, 24, −6`).
 *
 * @example burnDownTicks([-50, 100]) // [-50, 0, 50, 100]
 */
export function burnDownTicks(domain: readonly [number, number]): number[] {
  const step = tickStep(domain[1] - domain[0])
  const ticks: number[] = []
  for (let t = Math.ceil(domain[0] / step) * step; t <= domain[1]; t += step) ticks.push(t)
  if (!ticks.includes(100)) ticks.push(100)
  return ticks
}

/**
 * The forecast as a sentence, relative to `nowMs`.
 *
 * @example forecastText({ state: 'at', exhaustedAt: '2026-01-03T00:00:00.000Z' }, Date.parse('2026-01-01T00:00:00Z')) // 'Runs out 2026-01-03 00:00 UTC (in 2 d) at the last hour’s burn rate'
 */
export function forecastText(forecast: SloForecast, nowMs: number): string {
  switch (forecast.state) {
    case 'never':
      return 'Lasts the window at the last hour’s burn rate'
    case 'exhausted':
      return 'Budget exhausted'
    case 'at': {
      const at = forecast.exhaustedAt === null ? NaN : Date.parse(forecast.exhaustedAt)
      if (!Number.isFinite(at)) return 'Runs out at the last hour’s burn rate'
      const when = new Date(at).toISOString().replace('T', ' ').slice(0, 16)
      return `Runs out ${when} UTC (in ${formatSpan(Math.max(0, at - nowMs))}) at the last hour’s burn rate`
    }
    default:
      return 'Not evaluated yet'
  }
}

/**
 * What an SLO measures, in a few words: `latency ≤ 187 ms (total)`, `availability`, `ttft ≤ 500 ms`.
 *
 * @example sliText({ kind: 'latency', thresholdMs: 187, phase: 'total' }) // 'latency ≤ 187 ms (total)'
 */
export function sliText(status: Pick<SloStatus, 'kind' | 'thresholdMs' | 'phase'>): string {
  if (status.kind === 'availability') return 'availability'
  const threshold = status.thresholdMs === null ? '' : ` ≤ ${sig(status.thresholdMs, 6)} ms`
  if (status.kind === 'llm') return `${status.phase ?? 'llm'}${threshold}`
  return `latency${threshold}${status.phase ? ` (${status.phase})` : ''}`
}

/**
 * The selector as `service=chat, model=llama`; `all series` when it is empty.
 *
 * @example selectorText({ service: 'chat' }) // 'service=chat'
 */
export function selectorText(selector: Readonly<Record<string, string>>): string {
  const parts = Object.entries(selector).map(([k, v]) => `${k}=${v}`)
  return parts.length > 0 ? parts.join(', ') : 'all series'
}

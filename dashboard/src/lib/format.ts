/**
 * Number and time formatting for the dashboard. Pure functions: no DOM, no locale-dependent output.
 *
 * @example
 * ```ts
 * formatMs(0.42) // '420 µs'
 * formatMs(1234) // '1.23 s'
 * ```
 */

const DASH = '–'

/** Rounds to `digits` significant digits and drops trailing zeros. */
function sig(value: number, digits: number): string {
  if (value === 0) return '0'
  return String(Number(value.toPrecision(digits)))
}

/**
 * A latency in milliseconds as short text with a fitting unit (µs, ms, s, min), three significant digits.
 * `null`/non-finite values give an en dash.
 *
 * @example formatMs(12.345) // '12.3 ms'
 */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return DASH
  const abs = Math.abs(ms)
  if (abs === 0) return '0 ms'
  if (abs < 1) return `${sig(ms * 1000, 3)} µs`
  if (abs < 1000) return `${sig(ms, 3)} ms`
  if (abs < 60_000) return `${sig(ms / 1000, 3)} s`
  return `${sig(ms / 60_000, 3)} min`
}

/**
 * A rate per second, e.g. `12.5/s`; rates under 0.1 are shown per minute.
 *
 * @example formatRate(0.05) // '3/min'
 */
export function formatRate(perSecond: number | null | undefined): string {
  if (perSecond === null || perSecond === undefined || !Number.isFinite(perSecond)) return DASH
  if (perSecond === 0) return '0/s'
  if (perSecond < 0.1) return `${sig(perSecond * 60, 2)}/min`
  return `${sig(perSecond, 3)}/s`
}

/**
 * A ratio in [0, 1] as a percentage with up to 3 significant digits (`null` gives an en dash).
 *
 * @example formatPercent(0.0123) // '1.23%'
 */
export function formatPercent(ratio: number | null | undefined): string {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return DASH
  return `${sig(ratio * 100, 3)}%`
}

/**
 * An integer count with thin grouping (`1 234 567`), independent of the browser's locale.
 *
 * @example formatCount(1234567) // '1 234 567'
 */
export function formatCount(n: number): string {
  const s = String(Math.round(Math.abs(n))).replace(/\B(?=(\d{3})+(?!\d))/g, '\u2009')
  return n < 0 ? `-${s}` : s
}

/**
 * How long ago `thenMs` was, relative to `nowMs`, in the largest whole unit: `just now`, `42 s ago`, `5 min ago`,
 * `3 h ago`, `2 d ago`.
 *
 * @example formatAgo(Date.parse('2026-01-01T00:00:00Z'), Date.parse('2026-01-01T00:05:00Z')) // '5 min ago'
 */
export function formatAgo(thenMs: number, nowMs: number): string {
  if (!Number.isFinite(thenMs)) return DASH
  const s = Math.floor((nowMs - thenMs) / 1000)
  if (s < 5) return 'just now'
  if (s < 60) return `${s} s ago`
  if (s < 3600) return `${Math.floor(s / 60)} min ago`
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`
  return `${Math.floor(s / 86_400)} d ago`
}

/**
 * A UTC clock time for chart axes: `HH:MM:SS` for spans up to 15 minutes (ticks there are seconds apart),
 * `HH:MM` up to a day, `MM-DD HH:MM` beyond.
 *
 * @example formatAxisTime(Date.parse('2026-03-04T05:06:07Z'), 3_600_000) // '05:06'
 */
export function formatAxisTime(tMs: number, spanMs: number): string {
  const iso = new Date(tMs).toISOString()
  if (spanMs <= 15 * 60_000) return iso.slice(11, 19)
  const hm = iso.slice(11, 16)
  return spanMs > 86_400_000 ? `${iso.slice(5, 10)} ${hm}` : hm
}

/**
 * A quantile key (`"0.5"`, `"0.99"`, `"0.999"`) as a percentile label (`p50`, `p99`, `p99.9`).
 *
 * @example quantileLabel('0.999') // 'p99.9'
 */
export function quantileLabel(q: string): string {
  const pct = Number(q) * 100
  if (!Number.isFinite(pct)) return q
  return `p${String(Number(pct.toPrecision(6)))}`
}

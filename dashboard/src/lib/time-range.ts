/**
 * The time ranges of the range picker. Ranges are sent to the API as relative times (`from=-1h&to=now`) so
 * that the collector's clock decides what "now" is.
 *
 * @example
 * ```ts
 * timeRange('6h').from // '-6h'
 * ```
 */

/** A preset range: key used in URLs, label shown, `from` sent to the API, and its length. */
export interface TimeRange {
  readonly key: string
  readonly label: string
  readonly from: string
  readonly durationMs: number
}

/** The picker's presets, shortest first. */
export const TIME_RANGES: readonly TimeRange[] = [
  { key: '5m', label: '5 min', from: '-5m', durationMs: 5 * 60_000 },
  { key: '1h', label: '1 hour', from: '-1h', durationMs: 3_600_000 },
  { key: '6h', label: '6 hours', from: '-6h', durationMs: 6 * 3_600_000 },
  { key: '24h', label: '24 hours', from: '-24h', durationMs: 86_400_000 },
  { key: '7d', label: '7 days', from: '-7d', durationMs: 7 * 86_400_000 },
]

/** The range a detail page opens with. */
export const DEFAULT_RANGE = '1h'

/**
 * The preset with this key, or the default (1 hour) for an unknown key.
 *
 * @example timeRange('nope').key // '1h'
 */
export function timeRange(key: string | null | undefined): TimeRange {
  return (
    TIME_RANGES.find((r) => r.key === key) ?? (TIME_RANGES.find((r) => r.key === DEFAULT_RANGE) as TimeRange)
  )
}

/** The quantiles the picker offers. */
export const QUANTILE_CHOICES: readonly string[] = ['0.5', '0.9', '0.95', '0.99', '0.999']

/** The quantiles a detail page opens with. */
export const DEFAULT_QUANTILES: readonly string[] = ['0.5', '0.99']

/**
 * Reads a `q=0.5,0.99` URL value: known choices only, in the picker's order, deduplicated; the defaults when
 * none is left.
 *
 * @example parseQuantileList('0.99,0.5,0.5,7') // ['0.5', '0.99']
 */
export function parseQuantileList(text: string | null | undefined): string[] {
  const asked = new Set((text ?? '').split(',').map((s) => s.trim()))
  const out = QUANTILE_CHOICES.filter((q) => asked.has(q))
  return out.length > 0 ? out : [...DEFAULT_QUANTILES]
}

/**
 * A hash link with the shared range: `range=<key>` added to its query (replacing one there), left out for the
 * default range. Pages that chart a range (fleet, service, GPUs, alerts) all read the same `range` parameter, so
 * links that carry it keep the range from page to page.
 *
 * @example withRange('#/slos', '6h') // '#/slos?range=6h'
 * @example withRange('#/?range=6h', '1h') // '#/'
 */
export function withRange(href: string, key: string): string {
  const [path = '', query = ''] = href.split('?', 2)
  const params = new URLSearchParams(query)
  if (timeRange(key).key === DEFAULT_RANGE) params.delete('range')
  else params.set('range', timeRange(key).key)
  const rest = params.toString()
  return `${path}${rest ? `?${rest}` : ''}`
}

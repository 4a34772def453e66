/**
 * Pure transforms of the service page's split (one line per replica, node or version): which label values to
 * draw, and the rows that put one value per line side by side on a shared time axis.
 *
 * @example
 * ```ts
 * splitValues(services, { service: 'chat', model: '' }, 'replica', Date.now() - 3_600_000)
 * // { shown: ['chat-0', 'chat-1'], rest: [] }
 * ```
 */
import type { ServiceSeries } from './api-types.js'
import type { SplitLabel } from './route.js'
import type { SignalRow } from './signals.js'

/** Lines (or heatmaps) drawn at most per chart when split; the values after these are named in a note. */
export const MAX_SPLIT_VALUES = 12

/** The values of a split label to draw, in name order, and those left out beyond {@link MAX_SPLIT_VALUES}. */
export interface SplitValues {
  readonly shown: readonly string[]
  readonly rest: readonly string[]
}

/**
 * The values of `label` among the series of a service (and model, when given) seen since `sinceMs`, sorted by
 * name: the first {@link MAX_SPLIT_VALUES} to draw, the rest to name.
 *
 * @example splitValues(series, { service: 'chat', model: '' }, 'node', fromMs).shown // ['node-a', 'node-b']
 */
export function splitValues(
  series: readonly ServiceSeries[],
  of: { readonly service: string; readonly model: string },
  label: SplitLabel,
  sinceMs: number,
): SplitValues {
  const values = new Set<string>()
  for (const s of series) {
    if (s.service !== of.service || (of.model !== '' && s.model !== of.model)) continue
    const last = Date.parse(s.lastSeen)
    if (Number.isFinite(last) && last < sinceMs) continue
    values.add(s[label])
  }
  const sorted = [...values].sort()
  return { shown: sorted.slice(0, MAX_SPLIT_VALUES), rest: sorted.slice(MAX_SPLIT_VALUES) }
}

/** The row key of the i-th split value (an index, since values may hold dots, which recharts reads as paths). */
export const splitKey = (i: number): string => `s${i}`

/**
 * One row per time of any series, with the i-th series' `field` under {@link splitKey}(i) (null where that series
 * has no value at that time, so its line breaks there).
 *
 * @example splitRows([[{ tMs: 0, p99: 12 }], [{ tMs: 0, p99: 30 }]], 'p99') // [{ tMs: 0, s0: 12, s1: 30 }]
 */
export function splitRows(series: ReadonlyArray<readonly SignalRow[]>, field: string): SignalRow[] {
  const byTime = new Map<number, Record<string, number | null>>()
  series.forEach((rows, i) => {
    for (const r of rows) {
      let row = byTime.get(r.tMs)
      if (!row) {
        row = { tMs: r.tMs }
        for (let j = 0; j < series.length; j++) row[splitKey(j)] = null
        byTime.set(r.tMs, row)
      }
      const v = r[field]
      row[splitKey(i)] = typeof v === 'number' && Number.isFinite(v) ? v : null
    }
  })
  return [...byTime.values()].sort((a, b) => (a.tMs as number) - (b.tMs as number)) as SignalRow[]
}

const SPLIT_COLORS = [
  '#3a6ea5',
  '#d96c4f',
  '#2e8b57',
  '#8e44ad',
  '#c28a00',
  '#17818f',
  '#b03a74',
  '#5d6d7e',
  '#6c5fc7',
  '#a0522d',
  '#1f5f3f',
  '#c0392b',
] as const

/**
 * The line colour of the i-th split value (12 distinct colours, repeated beyond).
 *
 * @example splitColor(0) // '#3a6ea5'
 */
export function splitColor(i: number): string {
  return SPLIT_COLORS[i % SPLIT_COLORS.length] as string
}

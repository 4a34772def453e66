import type { RollupLevel } from './types.js'

const SECOND_MS = 1000
const MINUTE_MS = 60 * SECOND_MS
const HOUR_MS = 60 * MINUTE_MS
const DAY_MS = 24 * HOUR_MS

/**
 * The default rollup levels, finest first: 10 s rows kept 2 days, 1 min rows 14 days, 1 h rows 90 days,
 * 1 d rows forever. Every report lands on the finest level; `compact` builds the others.
 *
 * @example
 * ```ts
 * const store = await createStore({ url: ':memory:', rollups: DEFAULT_ROLLUPS })
 * ```
 */
export const DEFAULT_ROLLUPS: readonly RollupLevel[] = Object.freeze([
  Object.freeze({ name: '10s', stepMs: 10 * SECOND_MS, retentionMs: 2 * DAY_MS }),
  Object.freeze({ name: '1m', stepMs: MINUTE_MS, retentionMs: 14 * DAY_MS }),
  Object.freeze({ name: '1h', stepMs: HOUR_MS, retentionMs: 90 * DAY_MS }),
  Object.freeze({ name: '1d', stepMs: DAY_MS, retentionMs: null }),
])

/**
 * Checks rollup levels and applies retention overrides by level name. Returns the problems found, or the
 * frozen levels. Each step must be a whole number of seconds and divide the next one.
 *
 * @example resolveRollups(DEFAULT_ROLLUPS, { '10s': 6 * 3600_000 }) // { ok: true, levels: [...] }
 */
export function resolveRollups(
  levels: readonly RollupLevel[],
  retention: Readonly<Record<string, number | null>> | undefined,
): { ok: true; levels: readonly RollupLevel[] } | { ok: false; problems: string[] } {
  const problems: string[] = []
  if (levels.length === 0) problems.push('rollups: at least one level is needed')
  const names = new Set(levels.map((l) => l.name))
  for (const name of Object.keys(retention ?? {}))
    if (!names.has(name)) problems.push(`retention.${name}: no rollup level has this name`)
  const out = levels.map((l, i) => {
    const override = retention?.[l.name]
    const retentionMs = override === undefined ? l.retentionMs : override
    if (!Number.isInteger(l.stepMs) || l.stepMs < SECOND_MS || l.stepMs % SECOND_MS !== 0)
      problems.push(`rollups[${i}] (${l.name}): stepMs must be a whole number of seconds, got ${l.stepMs}`)
    const prev = levels[i - 1]
    if (prev && (l.stepMs <= prev.stepMs || l.stepMs % prev.stepMs !== 0))
      problems.push(`rollups[${i}] (${l.name}): stepMs ${l.stepMs} must be a multiple of ${prev.stepMs}`)
    if (retentionMs !== null && !(Number.isFinite(retentionMs) && retentionMs > 0))
      problems.push(`retention of ${l.name}: expected a positive number of ms or null, got ${retentionMs}`)
    return Object.freeze({ name: l.name, stepMs: l.stepMs, retentionMs })
  })
  return problems.length > 0 ? { ok: false, problems } : { ok: true, levels: Object.freeze(out) }
}

/**
 * A piece of a query: the rows of level `stepMs` whose bucket starts in `[fromMs, toMs)`, plus the rows of
 * finer levels there that no rollup holds yet (`consumed = 0`). Segments are aligned to their step.
 */
export interface Segment {
  readonly stepMs: number
  readonly fromMs: number
  readonly toMs: number
}

/** `t` rounded down to a multiple of `step`. @example floorTo(25_000, 10_000) // 20_000 */
export const floorTo = (t: number, step: number): number => Math.floor(t / step) * step
/** `t` rounded up to a multiple of `step`. @example ceilTo(25_000, 10_000) // 30_000 */
export const ceilTo = (t: number, step: number): number => Math.ceil(t / step) * step

/**
 * Splits `[fromMs, toMs)` into segments, coarsest levels in the middle and finer ones at the edges. A level
 * is usable only from its retention watermark on (`availableFromMs`: before it, compaction may have deleted
 * its rows, whose content then lives in the next coarser level). Where no level is both aligned and kept,
 * the time is not covered: its data survives only at a coarser resolution whose buckets start outside the range.
 * Segments come back sorted and disjoint.
 *
 * @example
 * ```ts
 * planSegments(50 * MIN, 3 * HOUR + 30 * SEC, [10_000, MIN, HOUR], () => -Infinity)
 * // [{ 1 min, 50 min..1 h }, { 1 h, 1 h..3 h }, { 10 s, 3 h..3 h 30 s }]
 * ```
 */
export function planSegments(
  fromMs: number,
  toMs: number,
  steps: readonly number[],
  availableFromMs: (stepMs: number) => number,
): Segment[] {
  const out: Segment[] = []
  const walk = (a: number, b: number, maxIndex: number): void => {
    for (let i = maxIndex; i >= 0 && a < b; i--) {
      const step = steps[i]!
      const start = Math.max(ceilTo(a, step), ceilTo(availableFromMs(step), step))
      const end = floorTo(b, step)
      if (start >= end) continue
      walk(a, start, i - 1)
      out.push({ stepMs: step, fromMs: start, toMs: end })
      walk(end, b, i - 1)
      return
    }
  }
  // A finest bucket belongs to the range when its start does: snap both ends up to the finest grid.
  walk(ceilTo(fromMs, steps[0]!), ceilTo(toMs, steps[0]!), steps.length - 1)
  return out
}

/** Joins neighbouring segments of the same level. @example joinSegments([{ stepMs: 10, fromMs: 0, toMs: 10 }, { stepMs: 10, fromMs: 10, toMs: 20 }]) // one segment 0..20 */
export function joinSegments(segments: readonly Segment[]): Segment[] {
  const out: Segment[] = []
  for (const s of segments) {
    const last = out[out.length - 1]
    if (last && last.stepMs === s.stepMs && last.toMs === s.fromMs)
      out[out.length - 1] = { stepMs: s.stepMs, fromMs: last.fromMs, toMs: s.toMs }
    else out.push(s)
  }
  return out
}

/**
 * Whether a row belongs to the plan: its bucket lies in a segment, and it is either of that segment's level
 * or a finer row not yet merged into a rollup. `segments` must be sorted and disjoint.
 *
 * @example rowCounts([{ stepMs: MIN, fromMs: 0, toMs: HOUR }], { stepMs: 10_000, bucketMs: 0, consumed: false }) // true
 */
export function rowCounts(
  segments: readonly Segment[],
  row: { readonly stepMs: number; readonly bucketMs: number; readonly consumed: boolean },
): boolean {
  let lo = 0
  let hi = segments.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const s = segments[mid]!
    if (row.bucketMs < s.fromMs) hi = mid - 1
    else if (row.bucketMs >= s.toMs) lo = mid + 1
    else return row.stepMs === s.stepMs || (row.stepMs < s.stepMs && !row.consumed)
  }
  return false
}

/** One indexed range read: the rows of one level in `[fromMs, toMs)`, or only its unconsumed ones. */
export interface FetchTerm {
  readonly stepMs: number
  readonly fromMs: number
  readonly toMs: number
  readonly unconsumedOnly: boolean
}

/**
 * The range reads that fetch every row a plan counts, each on one level (an equality on `step_ms` keeps
 * every read on an index). Per level: its own segments (all rows), and the coarser levels' segments
 * (rows not yet consumed). Past `maxRangesPerStep` ranges, one read over their hull replaces them. The
 * reads never overlap, so no row comes back twice; the result is a superset to filter with {@link rowCounts}.
 *
 * @example fetchTerms([{ stepMs: MIN, fromMs: 0, toMs: HOUR }], [10_000, MIN], 16) // 10 s unconsumed + 1 min all, 0..1 h
 */
export function fetchTerms(
  segments: readonly Segment[],
  steps: readonly number[],
  maxRangesPerStep: number,
): FetchTerm[] {
  const out: FetchTerm[] = []
  for (const step of steps) {
    const own = joinSegments(segments.filter((s) => s.stepMs === step))
    const coarser = joinSegments(
      segments.filter((s) => s.stepMs > step).map((s) => ({ stepMs: 0, fromMs: s.fromMs, toMs: s.toMs })),
    )
    if (own.length + coarser.length === 0) continue
    if (own.length + coarser.length > maxRangesPerStep) {
      const all = [...own, ...coarser]
      out.push({
        stepMs: step,
        fromMs: Math.min(...all.map((s) => s.fromMs)),
        toMs: Math.max(...all.map((s) => s.toMs)),
        unconsumedOnly: false,
      })
      continue
    }
    for (const s of own) out.push({ stepMs: step, fromMs: s.fromMs, toMs: s.toMs, unconsumedOnly: false })
    for (const s of coarser) out.push({ stepMs: step, fromMs: s.fromMs, toMs: s.toMs, unconsumedOnly: true })
  }
  return out
}

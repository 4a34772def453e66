import { BadRequest } from './errors.js'

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
}

/** The largest time (epoch ms) JavaScript dates hold: 8.64e15, about the year 275760. @example isoTime(MAX_TIME_MS) */
export const MAX_TIME_MS = 8_640_000_000_000_000
/** The longest duration the API takes (100 years): larger ones are refused by name. @example parseDurationMs('36500d') */
export const MAX_DURATION_MS = 100 * 365 * 86_400_000

/**
 * Parses a duration such as `10s`, `5m`, `1h`, `30d`, `250ms` (or a bare number of milliseconds) into ms.
 * Returns `undefined` for anything else, and for durations over {@link MAX_DURATION_MS} (100 years).
 *
 * @example parseDurationMs('5m') // 300000
 */
export function parseDurationMs(text: string): number | undefined {
  const m = /^(\d{1,20}(?:\.\d{1,9})?)(ms|s|m|h|d|w)?$/.exec(text.trim())
  if (!m) return undefined
  const value = Math.round(Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] ?? 1))
  return Number.isSafeInteger(value) && value <= MAX_DURATION_MS ? value : undefined
}

/**
 * Parses an API time: an ISO 8601 time, `now`, a relative time (`-1h`, `-30m`, `-7d`) or epoch milliseconds.
 * Throws a coded {@link BadRequest} naming `field` when the text is none of these.
 *
 * @example parseTimeMs('-1h', 'from', Date.parse('2026-01-01T01:00:00Z')) // 1767225600000
 */
export function parseTimeMs(text: string, field: string, nowMs: number): number {
  const t = text.trim()
  const shown = text.length > 40 ? text.slice(0, 40) + '…' : text
  if (t === 'now') return nowMs
  if (t.startsWith('-')) {
    const d = parseDurationMs(t.slice(1))
    if (d !== undefined && nowMs - d >= 0) return nowMs - d
    if (d === undefined && /^-\d+(\.\d+)?(ms|s|m|h|d|w)?$/.test(t))
      throw new BadRequest(`${field}: relative time '${shown}' is longer than 100 years`)
    if (d !== undefined) throw new BadRequest(`${field}: relative time '${shown}' reaches before 1970`)
  } else if (/^\d{1,16}$/.test(t)) {
    const ms = Number(t)
    if (ms <= MAX_TIME_MS) return ms
    throw new BadRequest(`${field}: epoch ms ${shown} is past the largest date (${MAX_TIME_MS})`)
  } else if (/^\d{4}-\d{2}-\d{2}/.test(t)) {
    const ms = Date.parse(t)
    if (Number.isFinite(ms) && ms >= 0) return ms
  }
  throw new BadRequest(
    `${field}: expected an ISO time, 'now', a relative time like -1h, or epoch ms; got '${shown}'`,
  )
}

/** Resolves `from`/`to` query text into a range, defaulting to the last `defaultMs` (5 minutes). */
export function parseRange(
  from: string | undefined,
  to: string | undefined,
  nowMs: number,
  defaultMs = 5 * 60_000,
): { fromMs: number; toMs: number } {
  const toMs = to === undefined ? nowMs : parseTimeMs(to, 'to', nowMs)
  const fromMs = from === undefined ? toMs - defaultMs : parseTimeMs(from, 'from', nowMs)
  if (!(fromMs < toMs))
    throw new BadRequest(
      `from must be before to (from=${new Date(fromMs).toISOString()}, to=${new Date(toMs).toISOString()})`,
    )
  return { fromMs, toMs }
}

/** The most points a time-series answer may have. */
export const MAX_SERIES_POINTS = 2_000

/** Multiples of a rollup step tried as default time-series steps (each must divide the next level's step). */
const STEP_MULTIPLES = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30]
/** Multiples of the coarsest level tried as default steps (days, for the default levels). */
const COARSEST_MULTIPLES = [1, 2, 7, 14, 30, 90, 365]

/**
 * The default step candidates for rollup levels `levelStepsMs` (finest first): each level's step and its
 * multiples that divide the next level's step (1 min, 5 min, 15 min, 30 min, 1 h, 3 h, 6 h, 12 h, 1 d, 7 d,
 * … for the default levels). A bucket of such a step starts and ends on the grid of its level, so it is
 * answered from whole rollup rows of that level; only the range's two ends read finer rows.
 *
 * @example rollupAlignedSteps([10_000, 60_000]) // [10000, 20000, 30000, 60000, 120000, …]
 */
export function rollupAlignedSteps(levelStepsMs: readonly number[]): number[] {
  const out = new Set<number>()
  levelStepsMs.forEach((step, i) => {
    const next = levelStepsMs[i + 1]
    for (const k of next === undefined ? COARSEST_MULTIPLES : STEP_MULTIPLES)
      if (next === undefined || (k * step <= next && next % (k * step) === 0)) out.add(k * step)
  })
  return [...out].sort((a, b) => a - b)
}

/**
 * The bucket width of a time series: the `step` query text (a duration of at least 1 s), or by default
 * about 60 points, rounded up to a step aligned with the rollup levels when `levelStepsMs` is given (see
 * {@link rollupAlignedSteps}), else to a multiple of 10 s. Throws a coded {@link BadRequest} naming
 * `step` when the text is not a duration or would give more than {@link MAX_SERIES_POINTS} points.
 *
 * @example resolveStepMs(undefined, { fromMs: 0, toMs: 7 * 86_400_000 }, [10_000, 60_000, 3_600_000, 86_400_000]) // 10800000 (3 h)
 */
export function resolveStepMs(
  step: string | undefined,
  range: { fromMs: number; toMs: number },
  levelStepsMs?: readonly number[],
): number {
  const span = range.toMs - range.fromMs
  let stepMs: number
  if (step !== undefined) {
    const parsed = parseDurationMs(step)
    if (parsed === undefined || parsed < 1000)
      throw new BadRequest(`step: expected a duration of at least 1s like 10s, 1m, 1h; got '${step}'`)
    stepMs = parsed
  } else {
    const target = Math.max(10_000, Math.ceil(span / 60 / 10_000) * 10_000)
    const aligned = levelStepsMs && levelStepsMs.length > 0 ? rollupAlignedSteps(levelStepsMs) : []
    stepMs = aligned.find((s) => s >= target) ?? target
  }
  if (span / stepMs > MAX_SERIES_POINTS)
    throw new BadRequest(
      `step: ${step ?? stepMs + 'ms'} gives more than ${MAX_SERIES_POINTS} points over this range; use a larger step`,
    )
  return stepMs
}

/** Epoch ms as the API writes times (ISO 8601, UTC). @example isoTime(0) // '1970-01-01T00:00:00.000Z' */
export const isoTime = (ms: number): string => new Date(ms).toISOString()

/** True for a time given relative to the clock: left out (now), `now`, or `-<duration>`. */
const relativeTime = (text: string | undefined): boolean =>
  text === undefined || text.trim() === 'now' || text.trim().startsWith('-')

/**
 * Polled chart ranges end on a multiple of this (or of the step, when shorter): the finest stored bucket. A longer
 * alignment (the step, 1 min for an hour) would hide the newest minute, and on a fresh start every number.
 */
export const POLL_ALIGN_MS = 10_000

/**
 * The range of a chart query, polled: when `to` is relative to the clock (left out, `now`, `-5m`), its end aligned
 * down to {@link POLL_ALIGN_MS} (or `stepMs` when shorter) and a relative `from` moved back with it (the span kept);
 * absolute times stay as given. Polls within those 10 s then cover the same range, so they get the same body (and
 * `ETag`, hence a 304) until data changes; the last 10 s still filling are left out. A range that alignment would
 * empty (an absolute `from` within the last 10 s) is kept as given.
 *
 * @example alignedRange({ fromMs: 5_000, toMs: 125_000 }, { from: '-2m' }, 60_000) // { fromMs: 0, toMs: 120_000 }
 * @example alignedRange({ fromMs: 5_000, toMs: 125_000 }, { from: '5000', to: '125000' }, 60_000) // as given
 */
export function alignedRange(
  range: { fromMs: number; toMs: number },
  query: { readonly from?: string | undefined; readonly to?: string | undefined },
  stepMs: number,
): { fromMs: number; toMs: number } {
  if (!relativeTime(query.to)) return range
  const align = Math.min(stepMs, POLL_ALIGN_MS)
  const toMs = Math.floor(range.toMs / align) * align
  const fromMs = relativeTime(query.from) ? range.fromMs - (range.toMs - toMs) : range.fromMs
  return fromMs < toMs ? { fromMs, toMs } : range
}

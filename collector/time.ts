import { BadRequest } from './errors.js'

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
}

/**
 * Parses a duration such as `10s`, `5m`, `1h`, `30d`, `250ms` (or a bare number of milliseconds) into ms.
 * Returns `undefined` for anything else.
 *
 * @example parseDurationMs('5m') // 300000
 */
export function parseDurationMs(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$/.exec(text.trim())
  if (!m) return undefined
  const value = Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] ?? 1)
  return Number.isFinite(value) ? Math.round(value) : undefined
}

/**
 * Parses an API time: an ISO 8601 time, `now`, a relative time (`-1h`, `-30m`, `-7d`) or epoch milliseconds.
 * Throws a coded {@link BadRequest} naming `field` when the text is none of these.
 *
 * @example parseTimeMs('-1h', 'from', Date.parse('2026-01-01T01:00:00Z')) // 1767225600000
 */
export function parseTimeMs(text: string, field: string, nowMs: number): number {
  const t = text.trim()
  if (t === 'now') return nowMs
  if (t.startsWith('-')) {
    const d = parseDurationMs(t.slice(1))
    if (d !== undefined) return nowMs - d
  } else if (/^\d{10,}$/.test(t)) {
    return Number(t)
  } else if (/^\d{4}-\d{2}-\d{2}/.test(t)) {
    const ms = Date.parse(t)
    if (Number.isFinite(ms)) return ms
  }
  throw new BadRequest(
    `${field}: expected an ISO time, 'now', a relative time like -1h, or epoch ms; got '${text}'`,
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

/**
 * The bucket width of a time series: the `step` query text (a duration of at least 1 s), or by default a
 * multiple of 10 s that gives about 60 points. Throws a coded {@link BadRequest} naming `step` when the text
 * is not a duration or would give more than {@link MAX_SERIES_POINTS} points.
 *
 * @example resolveStepMs(undefined, { fromMs: 0, toMs: 3_600_000 }) // 60000
 */
export function resolveStepMs(step: string | undefined, range: { fromMs: number; toMs: number }): number {
  const span = range.toMs - range.fromMs
  let stepMs: number
  if (step !== undefined) {
    const parsed = parseDurationMs(step)
    if (parsed === undefined || parsed < 1000)
      throw new BadRequest(`step: expected a duration of at least 1s like 10s, 1m, 1h; got '${step}'`)
    stepMs = parsed
  } else {
    stepMs = Math.max(10_000, Math.ceil(span / 60 / 10_000) * 10_000)
  }
  if (span / stepMs > MAX_SERIES_POINTS)
    throw new BadRequest(
      `step: ${step ?? stepMs + 'ms'} gives more than ${MAX_SERIES_POINTS} points over this range; use a larger step`,
    )
  return stepMs
}

/** Epoch ms as the API writes times (ISO 8601, UTC). @example isoTime(0) // '1970-01-01T00:00:00.000Z' */
export const isoTime = (ms: number): string => new Date(ms).toISOString()

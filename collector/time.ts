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

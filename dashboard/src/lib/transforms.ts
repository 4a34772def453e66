/**
 * Pure transforms from API responses to what the pages and charts draw (recharts rows, table rows, tiles).
 * No DOM and no React here, so they are unit-tested in node (test/dashboard/transforms.test.ts).
 *
 * @example
 * ```ts
 * const rows = timeseriesRows(response) // [{ tMs, count, ratePerSecond, p50, p99 }, …]
 * ```
 */
import type { BreakdownResponse, LatencySummary, ServiceSeries, TimeseriesResponse } from './api-types.js'
import { formatAgo, quantileLabel } from './format.js'

/**
 * The key under which a quantile's value sits in a chart row: its label with `.` replaced by `_`
 * (`"0.999"` → `p99_9`), because recharts reads dotted keys as paths.
 *
 * @example quantileKey('0.99') // 'p99'
 */
export function quantileKey(q: string): string {
  return quantileLabel(q).replace('.', '_')
}

/**
 * One chart row of a time series: bucket start, count, rate and one key per quantile (ms or null). The rate is
 * `null` in the last bucket when it reaches past the range's end (still filling, so its rate would read low).
 */
export interface TimeseriesRow {
  readonly tMs: number
  readonly count: number
  readonly ratePerSecond: number | null
  readonly [quantile: string]: number | null
}

/** The most rows {@link timeseriesRows} fills a range with (the API's own limit on points). */
export const MAX_ROWS = 2_000

/**
 * Turns `GET /api/v1/timeseries` into recharts rows, one per step-aligned bucket from `from` to `to`, sorted
 * by time. The collector leaves out buckets without data; they come back here as rows with count and rate 0
 * and `null` quantiles, so that latency lines break over the gap instead of bridging it, and the x axis spans
 * the whole range. (A range that would need more than {@link MAX_ROWS} rows is not filled.) A bucket that ends
 * after `to` is still filling: its rate is `null` (left out of the rate line) instead of dropping toward zero.
 *
 * @example
 * timeseriesRows({ from: '2026-01-01T00:00:00Z', to: '2026-01-01T00:00:20Z', stepMs: 10_000, quantiles: ['0.5'],
 *   points: [{ t: '2026-01-01T00:00:10Z', count: 3, ratePerSecond: 0.3, quantiles: { '0.5': 12 } }] })
 * // [{ tMs: 1767225600000, count: 0, ratePerSecond: 0, p50: null }, { tMs: 1767225610000, count: 3, ratePerSecond: 0.3, p50: 12 }]
 */
export function timeseriesRows(
  ts: Pick<TimeseriesResponse, 'from' | 'to' | 'stepMs' | 'quantiles' | 'points'>,
): TimeseriesRow[] {
  const byTime = new Map<number, TimeseriesRow>()
  for (const p of ts.points) {
    const row: Record<string, number | null> = {
      tMs: Date.parse(p.t),
      count: p.count,
      ratePerSecond: p.ratePerSecond,
    }
    for (const q of ts.quantiles) {
      const v = p.quantiles[q]
      row[quantileKey(q)] = p.count > 0 && typeof v === 'number' && Number.isFinite(v) ? v : null
    }
    byTime.set(row.tMs as number, row as TimeseriesRow)
  }
  const fromMs = Date.parse(ts.from)
  const toMs = Date.parse(ts.to)
  const step = ts.stepMs
  if (step > 0 && Number.isFinite(fromMs) && toMs > fromMs && (toMs - fromMs) / step <= MAX_ROWS) {
    for (let t = Math.floor(fromMs / step) * step; t < toMs; t += step) {
      if (byTime.has(t)) continue
      const row: Record<string, number | null> = { tMs: t, count: 0, ratePerSecond: 0 }
      for (const q of ts.quantiles) row[quantileKey(q)] = null
      byTime.set(t, row as TimeseriesRow)
    }
  }
  const rows = [...byTime.values()].sort((a, b) => a.tMs - b.tMs)
  return Number.isFinite(toMs) && step > 0
    ? rows.map((r) => (r.tMs + step > toMs ? { ...r, ratePerSecond: null } : r))
    : rows
}

/**
 * The seconds of a time series' range that its data covers: from the start of the first bucket with requests
 * to the end of the last one (cut at `to`), or `null` without data. Rates over a range divide by this, not by
 * the whole range, so that a service that started ten minutes ago does not read at a sixth of its rate on the
 * 1 h range.
 *
 * @example
 * dataSeconds({ to: '2026-01-01T00:01:00Z', stepMs: 10_000, points: [{ t: '2026-01-01T00:00:30Z', count: 5, … }] })
 * // 30
 */
export function dataSeconds(
  ts: Pick<TimeseriesResponse, 'from' | 'to' | 'stepMs' | 'points'>,
): number | null {
  let first = Infinity
  let last = -Infinity
  for (const p of ts.points) {
    if (p.count <= 0) continue
    const t = Date.parse(p.t)
    first = Math.min(first, t)
    last = Math.max(last, t)
  }
  if (!Number.isFinite(first)) return null
  const fromMs = Date.parse(ts.from)
  const toMs = Date.parse(ts.to)
  const start = Number.isFinite(fromMs) ? Math.max(first, fromMs) : first
  const end = Number.isFinite(toMs) ? Math.min(last + ts.stepMs, toMs) : last + ts.stepMs
  return end > start ? (end - start) / 1000 : null
}

/**
 * True when a time series holds at least one request (charts show their empty state otherwise).
 *
 * @example hasTimeseriesData({ points: [{ count: 0, … }] }) // false
 */
export function hasTimeseriesData(ts: Pick<TimeseriesResponse, 'points'>): boolean {
  return ts.points.some((p) => p.count > 0)
}

/** The part of total time not covered by any phase share. */
export const UNATTRIBUTED = 'unattributed'

/** One segment of the stacked share bar. */
export interface ShareSegment {
  readonly phase: string
  /** Share of total time, 0..1. */
  readonly share: number
  readonly meanMs: number | null
}

/** The stacked share bar of a breakdown: its segments and the single recharts row that draws them. */
export interface ShareBar {
  readonly segments: readonly ShareSegment[]
  /** `{ name: 'share', <phase>: percent, … }`: one row, one key per segment, values in percent. */
  readonly row: Readonly<Record<string, number | string>>
}

/**
 * Builds the stacked "share of total time" bar from a breakdown: phases with a positive share in API order
 * (ttft/tpot have no share and are left out), plus an `unattributed` segment for time no phase covers.
 * Shares are not rescaled; when phases overlap (e.g. `kernel` inside `decode`) they can sum past 100%.
 *
 * @example
 * shareBar({ phases: [{ phase: 'queue', share: 0.25, mean: 5, … }, { phase: 'kernel', share: 0.5, mean: 10, … }], … })
 * // segments: queue 0.25, kernel 0.5, unattributed 0.25
 */
export function shareBar(b: Pick<BreakdownResponse, 'phases'>): ShareBar {
  const segments: ShareSegment[] = []
  let sum = 0
  for (const p of b.phases) {
    if (p.phase === 'total' || p.share === null || !(p.share > 0)) continue
    segments.push({ phase: p.phase, share: p.share, meanMs: p.mean })
    sum += p.share
  }
  if (segments.length > 0 && sum < 0.995) segments.push({ phase: UNATTRIBUTED, share: 1 - sum, meanMs: null })
  const row: Record<string, number | string> = { name: 'share' }
  for (const s of segments) row[s.phase] = Math.round(s.share * 10_000) / 100
  return { segments, row }
}

/** One row of the per-phase table. */
export interface PhaseTableRow {
  readonly phase: string
  readonly count: number
  readonly meanMs: number | null
  readonly share: number | null
  /** Quantile key (`"0.99"`) to ms. */
  readonly quantiles: Readonly<Record<string, number | null>>
}

/**
 * The per-phase table of a breakdown: `total` first, then every phase with data in API order.
 *
 * @example phaseTableRows(breakdown).map((r) => r.phase) // ['total', 'queue', 'kernel', 'ttft']
 */
export function phaseTableRows(b: Pick<BreakdownResponse, 'total' | 'phases'>): PhaseTableRow[] {
  const row = (phase: string, s: LatencySummary, share: number | null): PhaseTableRow => ({
    phase,
    count: s.count,
    meanMs: s.mean,
    share,
    quantiles: s.quantiles,
  })
  const rows = b.total.count > 0 ? [row('total', b.total, 1)] : []
  for (const p of b.phases) if (p.phase !== 'total' && p.count > 0) rows.push(row(p.phase, p, p.share))
  return rows
}

/**
 * The latency summary of one phase in a breakdown (`total` is the breakdown's total), or `null` when the phase
 * has no data: what the tiles show when a phase is picked.
 *
 * @example phaseSummary(breakdown, 'ttft')?.quantiles['0.99'] // 210.5
 */
export function phaseSummary(
  b: Pick<BreakdownResponse, 'total' | 'phases'>,
  phase: string,
): LatencySummary | null {
  if (phase === 'total') return b.total
  return b.phases.find((p) => p.phase === phase) ?? null
}

/** Request totals of a breakdown over its range. */
export interface RequestStats {
  readonly total: number
  readonly ratePerSecond: number
  /** error / total, `null` without requests. */
  readonly errorRate: number | null
  /** shed / total, `null` without requests. */
  readonly shedRate: number | null
}

/**
 * Request rate, error rate and shed rate over a breakdown's range. Requests are ok + error + shed; when no
 * outcome counts were reported the count of the `total` histogram stands in. The rate divides by
 * `coveredSeconds` (the time with data, see {@link dataSeconds}) when given, else by the whole range.
 *
 * @example
 * requestStats({ from: '2026-01-01T00:00:00Z', to: '2026-01-01T00:01:40Z', total: { count: 0, … }, requests: { ok: 90, error: 10, shed: 0, … } })
 * // { total: 100, ratePerSecond: 1, errorRate: 0.1, shedRate: 0 }
 */
export function requestStats(
  b: Pick<BreakdownResponse, 'from' | 'to' | 'total' | 'requests'>,
  coveredSeconds?: number | null,
): RequestStats {
  const outcomes = b.requests.ok + b.requests.error + b.requests.shed
  const total = outcomes > 0 ? outcomes : b.total.count
  const rangeSeconds = (Date.parse(b.to) - Date.parse(b.from)) / 1000
  const seconds = coveredSeconds && coveredSeconds > 0 ? Math.min(coveredSeconds, rangeSeconds) : rangeSeconds
  return {
    total,
    ratePerSecond: seconds > 0 ? total / seconds : 0,
    errorRate: outcomes > 0 ? b.requests.error / outcomes : null,
    shedRate: outcomes > 0 ? b.requests.shed / outcomes : null,
  }
}

/** One service/model pair of the service list, folded over its versions, replicas and nodes. */
export interface ServiceGroup {
  readonly service: string
  readonly model: string
  readonly versions: readonly string[]
  readonly replicas: number
  readonly nodes: number
  readonly firstSeenMs: number
  readonly lastSeenMs: number
}

/**
 * Folds the series of `GET /api/v1/services` into one entry per (service, model), sorted by service then
 * model, with the distinct versions, the number of distinct replicas and nodes, and the earliest first-seen and
 * latest last-seen times.
 *
 * @example
 * groupServices([{ service: 'chat', model: 'llama', replica: 'r0', … }, { service: 'chat', model: 'llama', replica: 'r1', … }])
 * // [{ service: 'chat', model: 'llama', replicas: 2, … }]
 */
export function groupServices(series: readonly ServiceSeries[]): ServiceGroup[] {
  const groups = new Map<
    string,
    {
      service: string
      model: string
      versions: Set<string>
      replicas: Set<string>
      nodes: Set<string>
      first: number
      last: number
    }
  >()
  for (const s of series) {
    const key = `${s.service}\u0000${s.model}`
    let g = groups.get(key)
    if (!g) {
      g = {
        service: s.service,
        model: s.model,
        versions: new Set(),
        replicas: new Set(),
        nodes: new Set(),
        first: Infinity,
        last: -Infinity,
      }
      groups.set(key, g)
    }
    g.versions.add(s.version)
    g.replicas.add(`${s.node}\u0000${s.replica}`)
    g.nodes.add(s.node)
    g.first = Math.min(g.first, Date.parse(s.firstSeen))
    g.last = Math.max(g.last, Date.parse(s.lastSeen))
  }
  return [...groups.values()]
    .map((g) => ({
      service: g.service,
      model: g.model,
      versions: [...g.versions].sort(),
      replicas: g.replicas.size,
      nodes: g.nodes.size,
      firstSeenMs: g.first,
      lastSeenMs: g.last,
    }))
    .sort((a, b) => a.service.localeCompare(b.service) || a.model.localeCompare(b.model))
}

/** The text of a chart's empty state. */
export const NO_DATA = 'No data in this range'

/**
 * The empty-state text of a detail page: says when the service last reported if that was before the range
 * began, so that "no data" reads as "it went quiet", not as a broken chart.
 *
 * @example emptyRangeText(Date.parse('2026-01-01T00:00:00Z'), Date.parse('2026-01-01T03:00:00Z'), 3_600_000)
 * // 'No data in this range: last report 3 h ago. Pick a longer range.'
 */
export function emptyRangeText(lastSeenMs: number | null, nowMs: number, rangeMs: number): string {
  if (lastSeenMs === null || !Number.isFinite(lastSeenMs) || lastSeenMs >= nowMs - rangeMs) return NO_DATA
  return `${NO_DATA}: last report ${formatAgo(lastSeenMs, nowMs)}. Pick a longer range.`
}

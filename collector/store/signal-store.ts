import type { Transaction } from 'kysely'
import {
  bucketHistogramProblem,
  isMetric,
  mergeBuckets,
  SIGNAL_COUNTERS,
  SIGNAL_GAUGES,
} from '../report/index.js'
import type {
  BucketHistogram,
  GpuStat,
  IntervalReport,
  Metric,
  SeriesLabels,
  SignalCounter,
  SignalGauge,
} from '../report/index.js'
import { BadRequest } from '../errors.js'
import { floorTo } from './levels.js'
import { claimGroups } from './rollup.js'
import { mergeStats } from './gpu-store.js'
import type { BucketHistTable, DB, SignalTable } from './schema.js'
import type {
  ClassSignalPoint,
  EpochMs,
  ImportedHistogram,
  ImportedHistogramPoint,
  SignalPoint,
  SignalSeries,
} from './types.js'

/** Rows per multi-row INSERT (12 columns: stays under SQLite's 32,766 parameters). */
const INSERT_CHUNK_ROWS = 500
const GAUGE_SET: ReadonlySet<string> = new Set(SIGNAL_GAUGES)
const COUNTER_SET: ReadonlySet<string> = new Set(SIGNAL_COUNTERS)

const isStat = (s: GpuStat | undefined): s is GpuStat =>
  s !== undefined &&
  Number.isFinite(s.min) &&
  Number.isFinite(s.mean) &&
  Number.isFinite(s.max) &&
  Number.isFinite(s.last)

/**
 * Checks a report's imported bucket histograms before anything is written: known metrics, ascending bounds,
 * one count per bucket. Throws a {@link BadRequest} naming the field.
 *
 * @example checkBucketHistograms(report) // throws on series[0].bucketHistograms.ttft: boundsMs must ascend
 */
export function checkBucketHistograms(report: IntervalReport): void {
  report.series.forEach((s, i) => {
    for (const [metric, h] of Object.entries(s.bucketHistograms ?? {}) as Array<
      [string, BucketHistogram | undefined]
    >) {
      if (h === undefined) continue
      if (!isMetric(metric)) throw new BadRequest(`series[${i}].bucketHistograms: unknown metric "${metric}"`)
      const problem = bucketHistogramProblem(h)
      if (problem !== null) throw new BadRequest(`series[${i}].bucketHistograms.${metric}: ${problem}`)
    }
  })
}

type SignalRow = SignalTable
type BucketRow = BucketHistTable

/**
 * The `tg_signal` and `tg_bucket_hist` rows of one report on the finest level. `idOf` gives the series id of a
 * label set (already upserted in the same transaction).
 *
 * @example const { signals, buckets } = signalRows(report, 10_000, (labels) => ids.get(seriesKey(labels))!)
 */
export function signalRows(
  report: IntervalReport,
  finestMs: number,
  idOf: (labels: SeriesLabels) => number,
): { signals: SignalRow[]; buckets: BucketRow[] } {
  const bucketMs = floorTo(report.intervalStartMs, finestMs)
  const lastMs = report.intervalEndMs
  const signals: SignalRow[] = []
  const buckets: BucketRow[] = []
  const base = { step_ms: finestMs, bucket_ms: bucketMs, consumed: 0, last_ms: lastMs }
  for (const s of report.series) {
    const sig = s.signals
    const hists = s.bucketHistograms
    if (sig === undefined && hists === undefined) continue
    const seriesId = idOf(s.labels)
    const gauge = (name: string, st: GpuStat | undefined) => {
      if (!isStat(st)) return
      signals.push({
        ...base,
        series_id: seriesId,
        name,
        samples: 1,
        min_value: st.min,
        mean_value: st.mean,
        max_value: st.max,
        last_value: st.last,
        sum_value: 0,
      })
    }
    const counter = (name: string, n: number | undefined) => {
      if (n === undefined || !Number.isFinite(n)) return
      signals.push({
        ...base,
        series_id: seriesId,
        name,
        samples: 1,
        min_value: n,
        mean_value: n,
        max_value: n,
        last_value: n,
        sum_value: n,
      })
    }
    if (sig !== undefined) {
      for (const [g, st] of Object.entries(sig.gauges ?? {})) gauge(`g:${g}`, st)
      for (const [c, n] of Object.entries(sig.counters ?? {})) counter(`c:${c}`, n)
      for (const k of sig.byClass ?? []) {
        gauge(`k:${k.priorityClass}:inFlight`, k.inFlight)
        gauge(`k:${k.priorityClass}:queued`, k.queued)
        counter(`k:${k.priorityClass}:admitted`, k.admitted)
        for (const [reason, n] of Object.entries(k.shed ?? {}))
          counter(`k:${k.priorityClass}:shed:${reason}`, n)
      }
      for (const src of new Set(sig.sources ?? [])) counter(`s:${src}`, 1)
    }
    for (const [metric, h] of Object.entries(hists ?? {}) as Array<[string, BucketHistogram | undefined]>) {
      if (h === undefined) continue
      buckets.push({
        ...base,
        series_id: seriesId,
        metric,
        bounds: JSON.stringify(h.boundsMs),
        counts: JSON.stringify(h.counts),
        sum_ms: h.sumMs,
        quantiles: h.quantilesMs && h.quantilesMs.length > 0 ? JSON.stringify(h.quantilesMs) : null,
        source: h.source ?? 'unknown',
      })
    }
  }
  return { signals, buckets }
}

/**
 * Inserts rows in chunks (inside the caller's transaction).
 *
 * @example await insertSignalRows(trx, signals, buckets)
 */
export async function insertSignalRows(
  trx: Transaction<DB>,
  signals: readonly SignalRow[],
  buckets: readonly BucketRow[],
): Promise<void> {
  for (let i = 0; i < signals.length; i += INSERT_CHUNK_ROWS)
    await trx
      .insertInto('tg_signal')
      .values(signals.slice(i, i + INSERT_CHUNK_ROWS))
      .execute()
  for (let i = 0; i < buckets.length; i += INSERT_CHUNK_ROWS)
    await trx
      .insertInto('tg_bucket_hist')
      .values(buckets.slice(i, i + INSERT_CHUNK_ROWS))
      .execute()
}

/** A `tg_signal` row as read back (bigint columns may come back as strings on PostgreSQL). */
export type SignalReadRow = Pick<
  SignalRow,
  | 'series_id'
  | 'name'
  | 'samples'
  | 'min_value'
  | 'mean_value'
  | 'max_value'
  | 'last_value'
  | 'last_ms'
  | 'sum_value'
>
/** A `tg_bucket_hist` row as read back. */
export type BucketReadRow = Pick<
  BucketRow,
  'series_id' | 'metric' | 'bounds' | 'counts' | 'sum_ms' | 'quantiles' | 'last_ms' | 'source'
>

const SIGNAL_COLUMNS = [
  'series_id',
  'name',
  'samples',
  'min_value',
  'mean_value',
  'max_value',
  'last_value',
  'last_ms',
  'sum_value',
] as const
const BUCKET_COLUMNS = [
  'series_id',
  'metric',
  'bounds',
  'counts',
  'sum_ms',
  'quantiles',
  'last_ms',
  'source',
] as const

function mergeSignalRows(rows: readonly SignalReadRow[]): { stat: GpuStat; lastMs: number; sum: number } {
  const m = mergeStats(rows)
  let sum = 0
  for (const r of rows) sum += Number(r.sum_value)
  // The stat holds the four figures only (the API's schema has no room for more); when it was last set is apart.
  return { stat: { min: m.min, mean: m.mean, max: m.max, last: m.last }, lastMs: m.lastMs, sum }
}

/**
 * Merges bucket rows of one metric into an {@link ImportedHistogram}: same-layout rows add up, the newest summary
 * quantiles are kept, and the precision says what the rows can tell.
 *
 * @example const h = mergeImported(rows) // { precision: 'buckets', boundsMs, counts, count, … }
 */
export function mergeImported(rows: readonly BucketReadRow[]): ImportedHistogram | null {
  const merged = mergeBuckets(
    rows.map((r) => ({
      boundsMs: JSON.parse(r.bounds) as number[],
      counts: JSON.parse(r.counts) as number[],
      sumMs: Number(r.sum_ms),
    })),
  )
  if (merged === null) return null
  let quantiles: Array<{ q: number; ms: number }> | null = null
  let newest = -Infinity
  for (const r of rows)
    if (r.quantiles !== null && Number(r.last_ms) >= newest) {
      newest = Number(r.last_ms)
      quantiles = JSON.parse(r.quantiles) as Array<{ q: number; ms: number }>
    }
  return {
    precision: merged.boundsMs.length > 0 ? 'buckets' : quantiles !== null ? 'summary' : 'mean',
    boundsMs: merged.boundsMs,
    counts: merged.counts,
    count: merged.count,
    sumMs: merged.sumMs,
    quantilesMs: quantiles,
    layouts: merged.layouts,
    otherLayoutsCount: merged.otherLayoutsCount,
    sources: [...new Set(rows.map((r) => r.source))].sort(),
  }
}

function pointOf(tMs: EpochMs, rows: readonly SignalReadRow[]): SignalPoint {
  const byName = new Map<string, SignalReadRow[]>()
  for (const r of rows) {
    const list = byName.get(r.name)
    if (list) list.push(r)
    else byName.set(r.name, [r])
  }
  const gauges: Partial<Record<SignalGauge, GpuStat>> = {}
  const counters: Partial<Record<SignalCounter, number>> = {}
  const classes = new Map<
    number,
    { inFlight: GpuStat | null; queued: GpuStat | null; admitted: number; shed: Record<string, number> }
  >()
  const cls = (pc: number) => {
    let c = classes.get(pc)
    if (!c) classes.set(pc, (c = { inFlight: null, queued: null, admitted: 0, shed: {} }))
    return c
  }
  for (const [name, list] of byName) {
    const { stat, sum } = mergeSignalRows(list)
    if (name.startsWith('g:')) {
      const g = name.slice(2)
      if (GAUGE_SET.has(g)) gauges[g as SignalGauge] = stat
    } else if (name.startsWith('c:')) {
      const c = name.slice(2)
      if (COUNTER_SET.has(c)) counters[c as SignalCounter] = sum
    } else if (name.startsWith('k:')) {
      const [, pcText, what, reason] = name.split(':')
      const pc = Number(pcText)
      if (!Number.isInteger(pc)) continue
      if (what === 'inFlight') cls(pc).inFlight = stat
      else if (what === 'queued') cls(pc).queued = stat
      else if (what === 'admitted') cls(pc).admitted += sum
      else if (what === 'shed' && reason !== undefined)
        cls(pc).shed[reason] = (cls(pc).shed[reason] ?? 0) + sum
    }
  }
  const byClass: ClassSignalPoint[] = [...classes.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([priorityClass, c]) => ({ priorityClass, ...c }))
  return { tMs, gauges, counters, byClass }
}

/**
 * Groups signal and bucket rows (already filtered to the query plan) into one {@link SignalSeries} per series,
 * bucketed on `stepMs`, sorted by labels.
 *
 * @example const series = buildSignalSeries(labelsById, signalRows, bucketRows, 60_000)
 */
export function buildSignalSeries(
  labelsById: ReadonlyMap<number, SeriesLabels>,
  signalRowsRead: ReadonlyArray<SignalReadRow & { readonly bucket_ms: number }>,
  bucketRowsRead: ReadonlyArray<BucketReadRow & { readonly bucket_ms: number }>,
  stepMs: number,
): SignalSeries[] {
  const bySeries = new Map<
    number,
    {
      signals: Map<number, SignalReadRow[]>
      buckets: Map<string, Array<BucketReadRow & { readonly bucket_ms: number }>>
    }
  >()
  const entry = (id: number) => {
    let e = bySeries.get(id)
    if (!e) bySeries.set(id, (e = { signals: new Map(), buckets: new Map() }))
    return e
  }
  for (const r of signalRowsRead) {
    const t = floorTo(Number(r.bucket_ms), stepMs)
    const m = entry(Number(r.series_id)).signals
    const list = m.get(t)
    if (list) list.push(r)
    else m.set(t, [r])
  }
  for (const r of bucketRowsRead) {
    const m = entry(Number(r.series_id)).buckets
    const list = m.get(r.metric)
    if (list) list.push(r)
    else m.set(r.metric, [r])
  }
  const out: SignalSeries[] = []
  for (const [id, e] of bySeries) {
    const labels = labelsById.get(id)
    if (labels === undefined) continue
    const sources = new Set<string>()
    for (const rows of e.signals.values())
      for (const r of rows) if (r.name.startsWith('s:')) sources.add(r.name.slice(2))
    const histograms: Partial<
      Record<Metric, { total: ImportedHistogram; points: ImportedHistogramPoint[] }>
    > = {}
    for (const [metric, rows] of e.buckets) {
      if (!isMetric(metric)) continue
      const total = mergeImported(rows)
      if (total === null) continue
      for (const s of total.sources) sources.add(s)
      const byT = new Map<number, BucketReadRow[]>()
      for (const r of rows) {
        const t = floorTo(Number(r.bucket_ms), stepMs)
        const list = byT.get(t)
        if (list) list.push(r)
        else byT.set(t, [r])
      }
      const points = [...byT.entries()]
        .sort((a, b) => a[0] - b[0])
        .flatMap(([tMs, list]) => {
          const h = mergeImported(list)
          return h === null ? [] : [{ tMs, ...h }]
        })
      histograms[metric] = { total, points }
    }
    out.push({
      labels,
      sources: [...sources].sort(),
      points: [...e.signals.entries()].sort((a, b) => a[0] - b[0]).map(([t, rows]) => pointOf(t, rows)),
      histograms,
    })
  }
  const key = (l: SeriesLabels) => [l.service, l.model, l.version, l.replica, l.node].join('\u0000')
  return out.sort((a, b) => (key(a.labels) < key(b.labels) ? -1 : key(a.labels) > key(b.labels) ? 1 : 0))
}

/**
 * Rolls the finer level's unconsumed signal rows of `[fromMs, toMs)` into one row per series, signal and coarse
 * bucket (claim with `consumed = 1`, merge, insert: one transaction, as for `tg_count`). Returns the rows written.
 *
 * @example const n = await rollUpSignals(trx, 10_000, 60_000, fromMs, toMs)
 */
export async function rollUpSignals(
  trx: Transaction<DB>,
  fine: number,
  coarse: number,
  fromMs: number,
  toMs: number,
): Promise<number> {
  const groups = await claimGroups(
    trx,
    'tg_signal',
    SIGNAL_COLUMNS,
    fine,
    coarse,
    fromMs,
    toMs,
    (r) => `${r.series_id}\u0000${r.name}`,
  )
  const rows: SignalRow[] = groups.map((g) => {
    const { stat, lastMs, sum } = mergeSignalRows(g.rows)
    const first = g.rows[0]!
    return {
      step_ms: coarse,
      bucket_ms: g.bucketMs,
      series_id: Number(first.series_id),
      name: first.name,
      consumed: 0,
      samples: g.rows.reduce((n, r) => n + Number(r.samples), 0),
      min_value: stat.min,
      mean_value: stat.mean,
      max_value: stat.max,
      last_value: stat.last,
      last_ms: lastMs,
      sum_value: sum,
    }
  })
  await insertSignalRows(trx, rows, [])
  return rows.length
}

/**
 * Rolls the finer level's unconsumed bucket-histogram rows of `[fromMs, toMs)` into one row per series, metric,
 * coarse bucket and layout: rows of different layouts stay apart. Returns the rows written.
 *
 * @example const n = await rollUpBucketHists(trx, 10_000, 60_000, fromMs, toMs)
 */
export async function rollUpBucketHists(
  trx: Transaction<DB>,
  fine: number,
  coarse: number,
  fromMs: number,
  toMs: number,
): Promise<number> {
  const groups = await claimGroups(
    trx,
    'tg_bucket_hist',
    BUCKET_COLUMNS,
    fine,
    coarse,
    fromMs,
    toMs,
    (r) => `${r.series_id}\u0000${r.metric}\u0000${r.bounds}`,
  )
  const rows: BucketRow[] = groups.map((g) => {
    const counts = (JSON.parse(g.rows[0]!.counts) as number[]).map(() => 0)
    let sumMs = 0
    let newest = g.rows[0]!
    let withQuantiles: BucketReadRow | undefined
    for (const r of g.rows) {
      const c = JSON.parse(r.counts) as number[]
      for (let i = 0; i < counts.length; i++) counts[i]! += c[i] ?? 0
      sumMs += Number(r.sum_ms)
      if (Number(r.last_ms) >= Number(newest.last_ms)) newest = r
      if (
        r.quantiles !== null &&
        (withQuantiles === undefined || Number(r.last_ms) >= Number(withQuantiles.last_ms))
      )
        withQuantiles = r
    }
    return {
      step_ms: coarse,
      bucket_ms: g.bucketMs,
      series_id: Number(newest.series_id),
      metric: newest.metric,
      consumed: 0,
      bounds: newest.bounds,
      counts: JSON.stringify(counts),
      sum_ms: sumMs,
      quantiles: withQuantiles?.quantiles ?? null,
      last_ms: Number(newest.last_ms),
      source: newest.source,
    }
  })
  await insertSignalRows(trx, [], rows)
  return rows.length
}

import type { Metric } from '../report/index.js'
import type { CountColumns, PackTable } from './schema.js'

/**
 * The finest level's packed rows (`tg_pack`, issue #12): a row per report, service and up to
 * {@link PACK_MAX_SERIES} of its replicas holds their series ids and, in the same order, their encoded histograms per
 * metric and their counters. Ingest writes a few rows instead of one per series and metric (a 10,000-series report
 * of 10 services: 160 rows, not 30,000); reads of the finest level and compaction unpack them.
 *
 * Format: `series_ids` is the ids in increasing order joined with commas (`min_series_id` and `max_series_id` their
 * range); `histograms` a JSON object from metric to the series'
 * encoded histograms joined with commas (an empty item where a series has none: neither encoding contains a
 * comma); `counts` a JSON array of {@link PackedCounts}.
 */

/** One series' counters in a pack: ok, error, shed, output tokens, error classes; 0 when it counted nothing. */
export type PackedCounts =
  | readonly [
      ok: number,
      error: number,
      shed: number,
      outputTokens: number,
      errorClasses: Readonly<Record<string, number>>,
    ]
  | 0

/** Series one pack row holds at most: a query for one replica reads one row per report of this size. */
export const PACK_MAX_SERIES = 64

/**
 * One report's series of one service, collected while ingest checks the report (their ids are known only in the
 * transaction, so series are kept by key until {@link packRows}).
 *
 * @example
 * ```ts
 * const b = new PackBuilder('chat')
 * b.add('chat/m/1/r0/n0', [['total', encoded]], [100, 0, 0, 0, {}])
 * packRows(b, (key) => ids.get(key)!) // [{ service: 'chat', min_series_id: 7, …, series_ids: '7', histograms: '{"total":"tgh1.…"}', counts: '[[100,0,0,0,{}]]' }]
 * ```
 */
/**
 * A report's series of one service as {@link packRows} reads them: plain data (strings, arrays of strings and a
 * map of them), which a worker thread passes to the writer cheaply (structured clone of strings, no object per
 * series).
 */
export interface PackData {
  readonly service: string
  readonly keys: readonly string[]
  /** Per metric, the series' encoded histograms in the order of `keys` ('' where a series has none). */
  readonly histograms: ReadonlyMap<Metric, readonly string[]>
  /** Per series, its {@link PackedCounts} as JSON text. */
  readonly counts: readonly string[]
}

export class PackBuilder implements PackData {
  readonly service: string
  readonly keys: string[] = []
  readonly histograms = new Map<Metric, string[]>()
  readonly counts: string[] = []

  constructor(service: string) {
    this.service = service
  }

  /** Adds a series: its histograms with counts (by metric) and its counters. */
  add(key: string, histograms: ReadonlyArray<readonly [Metric, string]> | null, counts: PackedCounts): void {
    const at = this.keys.length
    this.keys.push(key)
    this.counts.push(countsText(counts))
    if (histograms === null) return
    for (const [metric, encoded] of histograms) {
      let list = this.histograms.get(metric)
      if (!list) this.histograms.set(metric, (list = []))
      // A metric first seen at this series: the series before it had none.
      while (list.length < at) list.push('')
      list.push(encoded)
    }
  }
}

/** The columns of a pack row but the level, bucket and `consumed`. */
export type PackColumns = Pick<
  PackTable,
  'service' | 'min_series_id' | 'max_series_id' | 'series_ids' | 'histograms' | 'counts'
>

/**
 * The pack rows of a report's series of one service, with their ids from `idOf`: the series in id order, at most
 * `maxSeries` a row, so that the rows of one report cover disjoint id ranges (`min_series_id`..`max_series_id`)
 * and a query for one replica reads one of them.
 */
export function packRows(
  b: PackData,
  idOf: (key: string) => number,
  maxSeries = PACK_MAX_SERIES,
): PackColumns[] {
  const n = b.keys.length
  const ids = new Float64Array(n)
  for (let i = 0; i < n; i++) ids[i] = idOf(b.keys[i]!)
  const order = Array.from({ length: n }, (_, i) => i).sort((x, y) => ids[x]! - ids[y]!)
  const out: PackColumns[] = []
  for (let from = 0; from < n; from += maxSeries) {
    const part = order.slice(from, from + maxSeries)
    let idList = ''
    for (let k = 0; k < part.length; k++) idList += (k === 0 ? '' : ',') + String(ids[part[k]!]!)
    out.push({
      service: b.service,
      min_series_id: ids[part[0]!]!,
      max_series_id: ids[part[part.length - 1]!]!,
      series_ids: idList,
      histograms: histogramsJson(b, part),
      counts: countsJson(b, part),
    })
  }
  return out
}

/**
 * The JSON of the `histograms` column for the series at `part`. Written without `JSON.stringify`, which would scan
 * megabytes of histograms for characters to escape: metric names are identifiers and ingest's check
 * (`checkHistogram` in collector/report) lets only base64 through.
 */
function histogramsJson(b: PackData, part: readonly number[]): string {
  let out = '{'
  for (const [metric, list] of b.histograms) {
    let items = ''
    for (let k = 0; k < part.length; k++) items += (k === 0 ? '' : ',') + (list[part[k]!] ?? '')
    out += `${out === '{' ? '' : ','}"${metric}":"${items}"`
  }
  return `${out}}`
}

/** One series' counters as JSON text (what `JSON.stringify` gives, faster). */
function countsText(c: PackedCounts): string {
  if (c === 0) return '0'
  let classes = '{}'
  for (const _ in c[4]) {
    classes = JSON.stringify(c[4])
    break
  }
  return `[${c[0]},${c[1]},${c[2]},${c[3]},${classes}]`
}

/** The JSON of the `counts` column for the series at `part`. */
function countsJson(b: PackData, part: readonly number[]): string {
  let out = '['
  for (let k = 0; k < part.length; k++) out += (k === 0 ? '' : ',') + b.counts[part[k]!]!
  return `${out}]`
}

/**
 * The histograms of a pack, per series and metric, for the series `keep` accepts (all with `null`) and the
 * metrics asked for (all with `null`); series without a histogram of a metric are skipped.
 *
 * @example unpackHistograms(row, ['total'], null) // [{ seriesId: 7, metric: 'total', histogram: 'tgh1.…' }]
 */
export function unpackHistograms(
  row: Pick<PackTable, 'series_ids' | 'histograms'>,
  metrics: readonly Metric[] | null,
  keep: ReadonlySet<number> | null,
): Array<{ seriesId: number; metric: Metric; histogram: string }> {
  const ids = parseIds(row.series_ids)
  const text = row.histograms
  const out: Array<{ seriesId: number; metric: Metric; histogram: string }> = []
  if (keep !== null && !ids.some((id) => keep.has(id))) return out
  // The column is read in place, not with JSON.parse: a query for one replica takes one item of a list of up to 64
  // (ingest wrote it: metric names and base64 only).
  for (const metric of metrics ?? metricsIn(text)) {
    const key = `"${metric}":"`
    const at = text.indexOf(key)
    if (at < 0) continue
    const end = text.indexOf('"', at + key.length)
    if (end < 0) throw new Error(`tg_pack: the ${metric} histograms are not closed`)
    let from = at + key.length
    for (let i = 0; i < ids.length; i++) {
      let to = text.indexOf(',', from)
      if (to < 0 || to > end) to = end
      if (i < ids.length - 1 && to === end)
        throw new Error(`tg_pack: ${i + 1} ${metric} histograms for ${ids.length} series`)
      if (to > from && (keep === null || keep.has(ids[i]!)))
        out.push({ seriesId: ids[i]!, metric, histogram: text.slice(from, to) })
      from = to + 1
    }
    if (from !== end + 1) throw new Error(`tg_pack: more ${metric} histograms than ${ids.length} series`)
  }
  return out
}

/** The metrics a `histograms` column lists, in its order. */
function metricsIn(text: string): Metric[] {
  const out: Metric[] = []
  for (const m of text.matchAll(/(?:^\{|,)"([A-Za-z0-9_]+)":"/g)) out.push(m[1] as Metric)
  return out
}

/**
 * The counters of a pack, per series, as counter columns, for the series `keep` accepts (all with `null`);
 * series that counted nothing are skipped.
 *
 * @example unpackCounts(row, null) // [{ seriesId: 7, columns: { ok_count: 100, …, error_classes: '{}' } }]
 */
export function unpackCounts(
  row: Pick<PackTable, 'series_ids' | 'counts'>,
  keep: ReadonlySet<number> | null,
): Array<{ seriesId: number; columns: CountColumns }> {
  const ids = parseIds(row.series_ids)
  const counts = JSON.parse(row.counts) as PackedCounts[]
  if (counts.length !== ids.length)
    throw new Error(`tg_pack: ${counts.length} counters for ${ids.length} series`)
  const out: Array<{ seriesId: number; columns: CountColumns }> = []
  for (let i = 0; i < ids.length; i++) {
    const c = counts[i]!
    if (c === 0 || (keep !== null && !keep.has(ids[i]!))) continue
    out.push({
      seriesId: ids[i]!,
      columns: {
        ok_count: c[0],
        error_count: c[1],
        shed_count: c[2],
        output_tokens: c[3],
        error_classes: JSON.stringify(c[4]),
      },
    })
  }
  return out
}

function parseIds(text: string): number[] {
  return text === '' ? [] : text.split(',').map(Number)
}

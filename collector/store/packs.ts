import type { Metric } from '../report/index.js'
import type { CountColumns, PackTable } from './schema.js'

/**
 * The finest level's packed rows (`tg_pack`, issue #12): one row per report and service holds the ids of the
 * report's replicas of that service and, in the same order, their encoded histograms per metric and their
 * counters. Ingest writes a few large rows instead of one per series and metric (a 10,000-series report of 10
 * services: 10 rows, not 30,000); reads of the finest level and compaction unpack them.
 *
 * Format: `series_ids` is the ids joined with commas; `histograms` a JSON object from metric to the series'
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

/**
 * One report's series of one service, collected while ingest checks the report (their ids are known only in the
 * transaction, so series are kept by key until {@link packColumns}).
 *
 * @example
 * ```ts
 * const b = new PackBuilder('chat')
 * b.add('chat/m/1/r0/n0', [['total', encoded]], [100, 0, 0, 0, {}])
 * packColumns(b, (key) => ids.get(key)!) // { series_ids: '7', histograms: '{"total":"tgh1.…"}', counts: '[[100,0,0,0,{}]]' }
 * ```
 */
export class PackBuilder {
  readonly service: string
  readonly keys: string[] = []
  readonly #histograms = new Map<Metric, string[]>()
  readonly #counts: PackedCounts[] = []

  constructor(service: string) {
    this.service = service
  }

  /** Adds a series: its histograms with counts (by metric) and its counters. */
  add(key: string, histograms: ReadonlyArray<readonly [Metric, string]> | null, counts: PackedCounts): void {
    const at = this.keys.length
    this.keys.push(key)
    this.#counts.push(counts)
    if (histograms === null) return
    for (const [metric, encoded] of histograms) {
      let list = this.#histograms.get(metric)
      if (!list) this.#histograms.set(metric, (list = []))
      // A metric first seen at this series: the series before it had none.
      while (list.length < at) list.push('')
      list.push(encoded)
    }
  }

  /**
   * The JSON of the `histograms` column: every list as long as the series list. Written without
   * `JSON.stringify`, which would scan megabytes of histograms for characters to escape: metric names are
   * identifiers and ingest's check (`checkHistogram` in collector/report) lets only base64 through.
   */
  histogramsJson(): string {
    let out = '{'
    for (const [metric, list] of this.#histograms) {
      while (list.length < this.keys.length) list.push('')
      out += `${out === '{' ? '' : ','}"${metric}":"${list.join(',')}"`
    }
    return `${out}}`
  }

  /** The JSON of the `counts` column, written item by item (what `JSON.stringify` gives, in a third of the time). */
  countsJson(): string {
    let out = '['
    for (let i = 0; i < this.#counts.length; i++) {
      const c = this.#counts[i]!
      if (i > 0) out += ','
      if (c === 0) out += '0'
      else {
        let classes = '{}'
        for (const _ in c[4]) {
          classes = JSON.stringify(c[4])
          break
        }
        out += `[${c[0]},${c[1]},${c[2]},${c[3]},${classes}]`
      }
    }
    return `${out}]`
  }
}

/** The columns of a pack row but the level, bucket and `consumed`, with the series' ids from `idOf`. */
export function packColumns(
  b: PackBuilder,
  idOf: (key: string) => number,
): Pick<PackTable, 'service' | 'series_ids' | 'histograms' | 'counts'> {
  let ids = ''
  for (let i = 0; i < b.keys.length; i++) ids += (i === 0 ? '' : ',') + String(idOf(b.keys[i]!))
  return { service: b.service, series_ids: ids, histograms: b.histogramsJson(), counts: b.countsJson() }
}

/** A pack row as read back: what {@link unpackHistograms} and {@link unpackCounts} take. */
export type PackRow = Pick<PackTable, 'series_ids' | 'histograms' | 'counts'>

/**
 * The histograms of a pack, per series and metric, for the series `keep` accepts (all with `null`) and the
 * metrics asked for (all with `null`); series without a histogram of a metric are skipped.
 *
 * @example unpackHistograms(row, ['total'], null) // [{ seriesId: 7, metric: 'total', histogram: 'tgh1.…' }]
 */
export function unpackHistograms(
  row: PackRow,
  metrics: readonly Metric[] | null,
  keep: ReadonlySet<number> | null,
): Array<{ seriesId: number; metric: Metric; histogram: string }> {
  const ids = parseIds(row.series_ids)
  const lists = JSON.parse(row.histograms) as Record<string, string>
  const out: Array<{ seriesId: number; metric: Metric; histogram: string }> = []
  for (const metric of metrics ?? (Object.keys(lists) as Metric[])) {
    const joined = lists[metric]
    if (joined === undefined) continue
    const items = joined.split(',')
    if (items.length !== ids.length)
      throw new Error(`tg_pack: ${items.length} ${metric} histograms for ${ids.length} series`)
    for (let i = 0; i < ids.length; i++) {
      const histogram = items[i]!
      if (histogram === '' || (keep !== null && !keep.has(ids[i]!))) continue
      out.push({ seriesId: ids[i]!, metric, histogram })
    }
  }
  return out
}

/**
 * The counters of a pack, per series, as counter columns, for the series `keep` accepts (all with `null`);
 * series that counted nothing are skipped.
 *
 * @example unpackCounts(row, null) // [{ seriesId: 7, columns: { ok_count: 100, …, error_classes: '{}' } }]
 */
export function unpackCounts(
  row: PackRow,
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

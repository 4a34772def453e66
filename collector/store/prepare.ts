import { isMetric, seriesKey } from '../report/index.js'
import type { IntervalReport, Metric, SeriesLabels } from '../report/index.js'
import { BadRequest } from '../errors.js'
import type { EpochMs, RequestCounts } from './types.js'
import { floorTo } from './levels.js'
import { Merge } from './merge.js'
import { PackBuilder } from './packs.js'
import type { PackData, PackedCounts } from './packs.js'
import type { CountColumns } from './schema.js'
import { checkBucketHistograms, signalRows } from './signal-store.js'

/**
 * A report checked and turned into rows, waiting for its transaction: what {@link prepareReport} makes, on the
 * collector's thread or on an ingest worker. Plain data of few objects (strings, arrays of strings), so that a
 * worker hands it over cheaply: the report's object tree is not part of it.
 */
export interface PreparedReport {
  readonly agentInstance: string
  readonly seq: number
  readonly intervalStartMs: number
  readonly receivedAtMs: number
  readonly bucketMs: number
  readonly seenMs: number
  /** The report's series by service, packed into `tg_pack` rows in the transaction (once their ids are known). */
  readonly packs: readonly PackData[]
  /** The per-replica rows the packs stand for (histograms with counts, and counters): a batch's size. */
  readonly seriesRows: number
  /** The report's series, each once, by {@link seriesKey} ({@link labelsOfKey} gives the labels back). */
  readonly keys: readonly string[]
  readonly serviceHists: ReadonlyArray<readonly [service: string, metric: string, histogram: string]>
  readonly serviceCounts: ReadonlyArray<readonly [service: string, CountColumns]>
  /** The report without its series, for its GPU items; `null` when it has none. */
  readonly gpus: IntervalReport | null
  /** The report's signal and bucket-histogram rows; their `series_id` is the index of the series in `keys`. */
  readonly signals: ReturnType<typeof signalRows>
}

/**
 * Checks a report and turns it into rows, before anything is written (a bad report leaves no trace): every
 * histogram's header, bounds and counts (one decode, merged into its service's histogram in the same pass), the
 * bucket histograms, then the packs, per-service sums and signal rows. Throws {@link BadRequest} naming the
 * field. Pure: runs on an ingest worker thread as well as on the collector's.
 *
 * @example store.ingestPrepared(prepareReport(report, Date.now(), 10_000))
 */
export function prepareReport(
  report: IntervalReport,
  receivedAtMs: EpochMs,
  finestMs: number,
): PreparedReport {
  const bucketMs = floorTo(report.intervalStartMs, finestMs)
  // Series are "seen" at the time their data covers (not when the report arrived: a spooled report sent
  // after an outage is old data), never later than now.
  const seenMs = Math.min(report.intervalEndMs, receivedAtMs)
  // Per service, the report's series to pack (kept by key: their ids, which order the packs, come in the transaction).
  const services = new Map<
    string,
    { readonly pack: PackBuilder; readonly keys: Map<string, readonly [string, string]> }
  >()
  const indexOfKey = new Map<string, number>()
  const serviceHists = new Merge<readonly [string, string]>()
  const serviceCounts = new Map<string, CountSum>()
  let seriesRows = 0
  report.series.forEach((s, i) => {
    const l = s.labels
    const key = seriesKey(l)
    if (!indexOfKey.has(key)) indexOfKey.set(key, indexOfKey.size)
    let service = services.get(l.service)
    if (!service) services.set(l.service, (service = { pack: new PackBuilder(l.service), keys: new Map() }))
    let histograms: Array<readonly [Metric, string]> | null = null
    for (const metric in s.histograms) {
      const encoded = s.histograms[metric as Metric]
      if (encoded === undefined) continue
      if (!isMetric(metric)) throw new BadRequest(`series[${i}].histograms: unknown metric "${metric}"`)
      // Headers, bounds and counts (either encoding), read in the same pass that merges the histogram into its
      // service's (one decode per histogram, not one to check and one to merge), under one key object per
      // service and metric.
      let mergeKey = service.keys.get(metric)
      if (!mergeKey) service.keys.set(metric, (mergeKey = [l.service, metric]))
      const check = serviceHists.addChecked(mergeKey, encoded)
      if (!check.ok) throw new BadRequest(`series[${i}].histograms.${metric}: ${check.error}`)
      if (check.totalCount > 0) (histograms ??= []).push([metric, encoded])
    }
    const classes = s.errorClasses ?? {}
    const tokens = s.outputTokens ?? 0
    let counts: PackedCounts = 0
    if (s.requests.ok + s.requests.error + s.requests.shed + tokens > 0 || Object.keys(classes).length > 0) {
      counts = [s.requests.ok, s.requests.error, s.requests.shed, tokens, classes]
      // Per service, the report's counters summed (its histograms were merged across replicas above): a query by
      // service reads one row per report on the finest level instead of one per replica.
      let sum = serviceCounts.get(l.service)
      if (!sum) serviceCounts.set(l.service, (sum = newCountSum()))
      addToSum(sum, counts)
    }
    if (histograms === null && counts === 0) return
    service.pack.add(key, histograms, counts)
    seriesRows += (histograms?.length ?? 0) + (counts === 0 ? 0 : 1)
  })
  checkBucketHistograms(report)
  return {
    agentInstance: report.agent.instance,
    seq: report.seq,
    intervalStartMs: report.intervalStartMs,
    receivedAtMs,
    bucketMs,
    seenMs,
    packs: [...services.values()].flatMap((v) => (v.pack.keys.length === 0 ? [] : [v.pack])),
    seriesRows,
    keys: [...indexOfKey.keys()],
    serviceHists: serviceHists.rows().map(([[service, metric], h]) => [service, metric, h] as const),
    serviceCounts: [...serviceCounts].map(([service, sum]) => [service, sumColumns(sum)] as const),
    gpus: report.gpus && report.gpus.length > 0 ? { ...report, series: [] } : null,
    signals: signalRows(report, finestMs, (l) => indexOfKey.get(seriesKey(l))!),
  }
}

/**
 * The labels of a {@link seriesKey} (label values hold no NUL, the key's separator).
 *
 * @example labelsOfKey('s\u0000m\u00001\u0000r0\u0000n') // { service: 's', model: 'm', version: '1', replica: 'r0', node: 'n' }
 */
export function labelsOfKey(key: string): SeriesLabels {
  const [service, model, version, replica, node] = key.split('\u0000') as [
    string,
    string,
    string,
    string,
    string,
  ]
  return { service, model, version, replica, node }
}

/** Counters being summed (ingest's per-service sum of a report). */
interface CountSum {
  ok: number
  error: number
  shed: number
  outputTokens: number
  readonly errorClasses: Map<string, number>
}

function newCountSum(): CountSum {
  return { ok: 0, error: 0, shed: 0, outputTokens: 0, errorClasses: new Map() }
}

function addToSum(sum: CountSum, c: Exclude<PackedCounts, 0>): void {
  sum.ok += c[0]
  sum.error += c[1]
  sum.shed += c[2]
  sum.outputTokens += c[3]
  for (const name in c[4]) sum.errorClasses.set(name, (sum.errorClasses.get(name) ?? 0) + c[4][name]!)
}

function sumColumns(sum: CountSum): CountColumns {
  return countColumns({ ...sum, errorClasses: Object.fromEntries(sum.errorClasses) })
}

/** Counts as the counter columns store them. @example countColumns(EMPTY_COUNTS) // { ok_count: 0, …, error_classes: '{}' } */
export function countColumns(c: RequestCounts): CountColumns {
  return {
    ok_count: c.ok,
    error_count: c.error,
    shed_count: c.shed,
    output_tokens: c.outputTokens,
    error_classes: JSON.stringify(c.errorClasses),
  }
}

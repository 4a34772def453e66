import type { Kysely } from 'kysely'
import {
  DEFAULT_ROLLUPS,
  createStore,
  encodeHistogram,
  mergeHistograms,
  newHistogram,
} from '../../collector/index.js'
import type { IntervalReport, Metric, RollupLevel, Store } from '../../collector/index.js'
import { storeInternals } from '../../collector/store/sql-store.js'
import type { HistRow } from '../../collector/store/sql-store.js'
import { createTestDatabase, testDialects } from '../helpers/dialects.js'
import type { TestDialect } from '../helpers/dialects.js'
import { labels, latenciesUs, rng } from '../helpers/reports.js'
import type { Bench, BenchResult } from './table.js'

const SEC = 1000
const MIN = 60 * SEC
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const NOW = Date.UTC(2026, 10, 21, 13, 37, 25)
const REPORT_METRICS: readonly Metric[] = ['queue', 'prefill', 'decode', 'total', 'ttft', 'tpot']
const INGEST_BUDGET_MS = 4000
const CONCURRENCY = 8
const NO_ROLLUP_DAYS = 1
const QUERY_REPEATS = 7

/**
 * Storage benchmark: reports/s stored (against a plain single-row INSERT of the same payload, one commit
 * each, in the same run), and the time to answer a p99 over 30 days of 10 s data with and without rollups.
 */
const bench: Bench = {
  name: 'store',
  async run(log) {
    const ingestRows: Array<Array<string | number>> = []
    const queryRows: Array<Array<string | number>> = []
    for (const dialect of testDialects()) {
      const variants: Array<[number, string]> =
        dialect === 'postgres'
          ? [
              [1, ''],
              [CONCURRENCY, ''],
            ]
          : [
              [1, ''],
              [1, '?synchronous=full'],
            ]
      for (const [concurrency, suffix] of variants) {
        const r = await ingestBench(dialect, concurrency, suffix, log)
        ingestRows.push([
          dialect + suffix.replace('?', ' '),
          concurrency,
          r.reports,
          r.reportsPerSec,
          r.baselinePerSec,
          r.reportsPerSec / r.baselinePerSec,
          r.cpuUsPerReport,
        ])
      }
      const q = await queryBench(dialect, log)
      const scale = 30 / NO_ROLLUP_DAYS
      const row = (range: string, levels: string, t: Timing, rows: number, base: Timing) => [
        dialect,
        range,
        levels,
        t.bestMs,
        t.medianMs,
        t.cpuMs,
        rows,
        t.medianMs / base.medianMs,
      ]
      queryRows.push(row('30 d', 'rollups', q.r30, q.rolledRows, q.r30))
      queryRows.push(row(`${NO_ROLLUP_DAYS} d`, 'rollups', q.r1, q.rolledRows, q.r1))
      queryRows.push(row(`${NO_ROLLUP_DAYS} d`, 'no rollups', q.f1, q.flatRows, q.r1))
      const f30: Timing = {
        bestMs: q.f1.bestMs * scale,
        medianMs: q.f1.medianMs * scale,
        cpuMs: q.f1.cpuMs * scale,
        p99: q.f1.p99,
        count: q.f1.count * scale,
      }
      queryRows.push(
        row('30 d', `no rollups (×${scale} of ${NO_ROLLUP_DAYS} d)`, f30, q.flatRows * scale, q.r30),
      )
    }
    const results: BenchResult[] = [
      {
        title: 'store: ingest (1 series × 6 metrics per report, one transaction each)',
        columns: [
          'dialect',
          'in flight',
          'reports',
          'reports/s',
          'baseline inserts/s',
          'ratio',
          'CPU µs/report (node)',
        ],
        rows: ingestRows,
        notes: [
          'Baseline: a plain single-row INSERT of the report JSON (same payload size) into a bare table, one commit each, same connection settings.',
          'ratio = reports/s ÷ baseline inserts/s (1.0 would mean storing a report costs one bare INSERT).',
        ],
      },
      {
        title:
          'store: p99 of one metric for one service (10 s data; best and median of 7 queries with rollups, 1 without)',
        columns: [
          'dialect',
          'range',
          'levels',
          'best ms',
          'median ms',
          'CPU ms (node)',
          'rows stored',
          'ratio vs rollups (median)',
        ],
        rows: queryRows,
        notes: [
          `Target: ≤ 50 ms on SQLite with rollups over 30 d. Without rollups, 30 d is extrapolated linearly from a measured ${NO_ROLLUP_DAYS} d query (decoding ${8640 * 30} histograms would take a minute).`,
          'Rollup data are loaded as compaction leaves them (10 s kept 2 d, 1 min 14 d, 1 h and 1 d all), then checked with compact() (nothing left to roll up) and against the no-rollup answer.',
        ],
      },
    ]
    return results
  },
}
export default bench

/** Six realistic 5 s histograms per report (≈ 100 requests/s), from a pool of prepared payloads. */
function reportPool(): Array<IntervalReport['series'][number]> {
  const next = rng(42)
  const medians: Record<string, number> = {
    queue: 3000,
    prefill: 40_000,
    decode: 900_000,
    total: 950_000,
    ttft: 45_000,
    tpot: 18_000,
  }
  return Array.from({ length: 16 }, () => ({
    labels: labels(),
    histograms: Object.fromEntries(
      REPORT_METRICS.map((m) => {
        const h = newHistogram()
        for (const v of latenciesUs(next, 500, medians[m]!)) h.recordValue(v)
        return [m, encodeHistogram(h)]
      }),
    ),
    requests: { ok: 498, error: 2, shed: 0 },
    errorClasses: { timeout: 2 },
    outputTokens: 120_000,
  }))
}

async function ingestBench(
  dialect: TestDialect,
  concurrency: number,
  urlSuffix: string,
  log: (line: string) => void,
): Promise<{ reports: number; reportsPerSec: number; baselinePerSec: number; cpuUsPerReport: number }> {
  const tdb = await createTestDatabase(dialect)
  const store = await createStore({ url: tdb.url + urlSuffix })
  try {
    const pool = reportPool()
    const makeReport = (i: number): IntervalReport => ({
      version: 1,
      agent: { id: 'bench', instance: 'bench-agent', node: 'n0' },
      seq: i + 1,
      intervalStartMs: NOW - DAY + i * 5000,
      intervalEndMs: NOW - DAY + i * 5000 + 5000,
      series: [pool[i % pool.length]!],
    })
    for (let i = 0; i < 20; i++) await store.ingest(makeReport(1_000_000 + i), NOW)

    let next = 0
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() - t0 < INGEST_BUDGET_MS) {
          const outcome = await store.ingest(makeReport(next++), NOW)
          if (outcome.kind !== 'stored') throw new Error('bench: unexpected duplicate')
        }
      }),
    )
    const storeMs = performance.now() - t0
    const cpu = process.cpuUsage(c0)
    const reports = next
    const cpuUsPerReport = (cpu.user + cpu.system) / reports
    const reportsPerSec = (reports / storeMs) * 1000
    log(`${dialect} ×${concurrency}: ${reports} reports in ${storeMs.toFixed(0)} ms`)

    const db = storeInternals(store)!.db as unknown as Kysely<{
      bench_baseline: { id: number; payload: string }
    }>
    await db.schema
      .createTable('bench_baseline')
      .addColumn('id', 'bigint', (c) => c.primaryKey())
      .addColumn('payload', 'text', (c) => c.notNull())
      .execute()
    const payloads = pool.map((_, i) => JSON.stringify(makeReport(i)))
    let id = 0
    const t1 = performance.now()
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (id < reports) {
          const row = id++
          await db
            .insertInto('bench_baseline')
            .values({ id: row, payload: payloads[row % payloads.length]! })
            .execute()
        }
      }),
    )
    const baselineMs = performance.now() - t1
    log(`${dialect} ×${concurrency}: baseline ${reports} inserts in ${baselineMs.toFixed(0)} ms`)
    return { reports, reportsPerSec, baselinePerSec: (reports / baselineMs) * 1000, cpuUsPerReport }
  } finally {
    await store.close()
    await tdb.drop()
  }
}

/**
 * Histogram strings for every level, consistent with each other: each minute holds the same six 10 s
 * histograms, so a 1 min row is their merge, an hour row 60 of those, a day row 24 hours.
 */
function levelHistograms(): { tenSec: string[]; byStep: Map<number, string> } {
  const next = rng(7)
  const tens = Array.from({ length: 6 }, (_, i) => {
    const h = newHistogram()
    for (const v of latenciesUs(next, 1000, 200_000 + i * 30_000)) h.recordValue(v)
    return h
  })
  const minute = mergeHistograms(tens)
  const hour = mergeHistograms(Array.from({ length: 60 }, () => minute))
  const day = mergeHistograms(Array.from({ length: 24 }, () => hour))
  return {
    tenSec: tens.map(encodeHistogram),
    byStep: new Map([
      [MIN, encodeHistogram(minute)],
      [HOUR, encodeHistogram(hour)],
      [DAY, encodeHistogram(day)],
    ]),
  }
}

/** Writes the rows a compacted store holds for `[dataFromMs, NOW)`, level by level, in big transactions. */
async function load(
  store: Store,
  levels: readonly RollupLevel[],
  dataFromMs: number,
  log: (line: string) => void,
): Promise<number> {
  const internals = storeInternals(store)!
  const seriesId = await internals.seriesId(labels(), NOW)
  const { tenSec, byStep } = levelHistograms()
  const finest = levels[0]!.stepMs
  let written = 0
  for (let i = 0; i < levels.length; i++) {
    const step = levels[i]!.stepMs
    const nextStep = levels[i + 1]?.stepMs
    const retention = levels[i]!.retentionMs
    // Rows exist from the retention cutoff on, up to the last bucket compaction has closed (all of it
    // for the finest level); a row is consumed once the next level's bucket holding it is closed.
    const from = Math.max(
      dataFromMs,
      retention === null
        ? -Infinity
        : Math.floor((NOW - retention) / (nextStep ?? step)) * (nextStep ?? step),
    )
    const to = i === 0 ? NOW : Math.floor((NOW - finest) / step) * step
    const closed = nextStep === undefined ? -Infinity : Math.floor((NOW - finest) / nextStep) * nextStep
    let batch: HistRow[] = []
    for (let b = Math.ceil(from / step) * step; b < to; b += step) {
      batch.push({
        stepMs: step,
        bucketMs: b,
        seriesId,
        metric: 'total',
        consumed: b + step <= closed,
        histogram: i === 0 ? tenSec[(b / step) % 6]! : byStep.get(step)!,
      })
      if (batch.length >= 5000) {
        await internals.writeHistRows(batch)
        written += batch.length
        batch = []
      }
    }
    await internals.writeHistRows(batch)
    written += batch.length
    log(`  level ${levels[i]!.name}: ${written} rows so far`)
  }
  const check = await store.compact(NOW)
  if (check.rolledUp !== 0) throw new Error(`bench: loader left ${check.rolledUp} buckets to roll up`)
  return written
}

interface Timing {
  readonly bestMs: number
  readonly medianMs: number
  /** CPU time of this process (median): unlike wall time, barely moved by other load on a shared machine. */
  readonly cpuMs: number
  readonly p99: number
  readonly count: number
}

async function timeP99(store: Store, fromMs: number, repeats: number): Promise<Timing> {
  const times: number[] = []
  const cpus: number[] = []
  let p99 = 0
  let count = 0
  // One untimed query first: JIT and page cache warm, as in a running collector.
  if (repeats > 1) await store.histograms({ service: 'chat' }, { fromMs, toMs: NOW }, ['total'])
  for (let i = 0; i < repeats; i++) {
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    const h = (await store.histograms({ service: 'chat' }, { fromMs, toMs: NOW }, ['total'])).get('total')!
    p99 = h.getValueAtPercentile(99)
    times.push(performance.now() - t0)
    const c = process.cpuUsage(c0)
    cpus.push((c.user + c.system) / 1000)
    count = h.totalCount
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  return { bestMs: Math.min(...times), medianMs: median(times), cpuMs: median(cpus), p99, count }
}

async function queryBench(dialect: TestDialect, log: (line: string) => void) {
  const rolledDb = await createTestDatabase(dialect)
  const flatDb = await createTestDatabase(dialect)
  const rolled = await createStore({ url: rolledDb.url })
  const flatLevels: RollupLevel[] = [{ name: '10s', stepMs: 10 * SEC, retentionMs: null }]
  const flat = await createStore({ url: flatDb.url, rollups: flatLevels })
  try {
    log(`${dialect}: loading 31 d with rollups`)
    const rolledRows = await load(rolled, DEFAULT_ROLLUPS, NOW - 31 * DAY, log)
    log(`${dialect}: loading ${NO_ROLLUP_DAYS} d without rollups`)
    const flatRows = await load(flat, flatLevels, NOW - NO_ROLLUP_DAYS * DAY, log)
    const r30 = await timeP99(rolled, NOW - 30 * DAY, QUERY_REPEATS)
    const r1 = await timeP99(rolled, NOW - NO_ROLLUP_DAYS * DAY, QUERY_REPEATS)
    const f1 = await timeP99(flat, NOW - NO_ROLLUP_DAYS * DAY, 1)
    if (r1.p99 !== f1.p99 || r1.count !== f1.count)
      throw new Error(`bench: rollup answer ${r1.p99}/${r1.count} differs from raw ${f1.p99}/${f1.count}`)
    log(
      `${dialect}: p99 30 d ${r30.medianMs.toFixed(1)} ms (${r30.count} samples); ${NO_ROLLUP_DAYS} d ${r1.medianMs.toFixed(1)} vs ${f1.medianMs.toFixed(0)} ms`,
    )
    return { r30, r1, f1, rolledRows, flatRows }
  } finally {
    await rolled.close()
    await flat.close()
    await rolledDb.drop()
    await flatDb.drop()
  }
}

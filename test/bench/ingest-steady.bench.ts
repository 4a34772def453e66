import type { Kysely } from 'kysely'
import { createStore, encodeHistogram, newHistogram } from '../../collector/index.js'
import type { IntervalReport } from '../../collector/index.js'
import { storeInternals } from '../../collector/store/sql-store.js'
import * as partialLookup from '../../migrations/2026-11-26T2200_partial_lookup.js'
import { createTestDatabase, testDialects } from '../helpers/dialects.js'
import { latenciesUs, rng } from '../helpers/reports.js'
import type { Bench, BenchResult } from './table.js'

const SERIES = Number(process.env.TG_BENCH_STEADY_SERIES ?? 1000)
const REPORTS = Number(process.env.TG_BENCH_STEADY_REPORTS ?? 240)
const INTERVAL_MS = 10_000
/** Reports between compactions: one minute of 10 s reports, as the collector's compaction loop keeps up. */
const COMPACT_EVERY = 6
const NOW = Date.UTC(2026, 10, 21, 13, 37, 25)
const METRICS = ['total', 'queue'] as const

/**
 * Ingest at steady state (issue #12): one store takes `REPORTS` 10 s reports of `SERIES` series each (two
 * histograms and a counter row per series), with a compaction after every minute of data, as a collector does for
 * its agents over 40 minutes. The `ingest` bench measures a young database; here every series already has
 * hundreds of rows, which is where series-first indexes made each report dirty one index page per row. Baseline in
 * the same run: the same store with the per-replica indexes as they were before migration 2026-11-26T2200 (full,
 * series first), put back by hand.
 */
const bench: Bench = {
  name: 'ingest-steady',
  async run(log) {
    const rows: Array<Array<string | number>> = []
    const pool = histogramPool()
    for (const dialect of testDialects()) {
      const results: Record<string, { ingestMs: number; lastThirdMs: number; compactMs: number }> = {}
      for (const layout of ['series-first indexes (before)', 'partial indexes (now)'] as const) {
        const tdb = await createTestDatabase(dialect)
        const store = await createStore({ url: tdb.url, clock: () => NOW })
        try {
          // The indexes of before, as the migration's own `down` puts them back.
          if (layout.startsWith('series-first'))
            await partialLookup.down(storeInternals(store)!.db as unknown as Kysely<unknown>)
          const times: number[] = []
          let compactMs = 0
          for (let seq = 1; seq <= REPORTS; seq++) {
            const r = report(seq, pool)
            const t0 = performance.now()
            await store.ingest(r, NOW)
            times.push(performance.now() - t0)
            if (seq % COMPACT_EVERY === 0) {
              const t1 = performance.now()
              await store.compact(r.intervalEndMs + INTERVAL_MS)
              compactMs += performance.now() - t1
            }
          }
          const ingestMs = times.reduce((a, b) => a + b, 0)
          const last = times.slice(-Math.floor(REPORTS / 3)).sort((a, b) => a - b)
          const lastThirdMs = last[last.length >> 1]!
          results[layout] = { ingestMs, lastThirdMs, compactMs }
          log(
            `${dialect}, ${layout}: median report ${lastThirdMs.toFixed(0)} ms over the last third, compaction ${(compactMs / 1000).toFixed(1)} s`,
          )
        } finally {
          await store.close()
          await tdb.drop()
        }
      }
      const before = results['series-first indexes (before)']!
      for (const [layout, r] of Object.entries(results))
        rows.push([
          dialect,
          layout,
          r.lastThirdMs,
          (SERIES / r.lastThirdMs) * 1000,
          (SERIES * REPORTS) / ((r.ingestMs + r.compactMs) / 1000),
          r.compactMs / (r.ingestMs + r.compactMs),
          before.lastThirdMs / r.lastThirdMs,
        ])
    }
    const result: BenchResult = {
      title: `ingest at steady state: ${REPORTS} reports of ${SERIES} series (${(REPORTS * INTERVAL_MS) / 60_000} min of 10 s data), compaction every minute of data`,
      columns: [
        'dialect',
        'per-replica indexes',
        'report ms (median, last third)',
        'series/s, ingest alone (last third)',
        'series/s, ingest + compaction (whole run)',
        'compaction share',
        'speed-up of the report',
      ],
      rows,
      notes: [
        'One store per row, fresh; each series gets a histogram per metric and a counter row per report, as in `ingest`. In-process (no HTTP): the store is what slows down as the tables grow.',
        'series-first indexes (before): tg_hist_lookup and tg_count_lookup as migration 2026-11-21T2100 made them, full and series first; now: partial, one for consumed and one for unconsumed rows (migration 2026-11-26T2200).',
      ],
    }
    return result
  },
}
export default bench

function histogramPool(): string[] {
  const next = rng(7)
  return Array.from({ length: 64 }, (_, i) => {
    const h = newHistogram()
    for (const v of latenciesUs(next, 100, 5_000 + 1000 * i)) h.recordValue(v)
    return encodeHistogram(h)
  })
}

function report(seq: number, pool: readonly string[]): IntervalReport {
  const startMs = NOW - 30 * 86_400_000 + seq * INTERVAL_MS
  return {
    version: 1,
    agent: { id: 'bench', instance: 'bench-steady', node: 'n0' },
    seq,
    intervalStartMs: startMs,
    intervalEndMs: startMs + INTERVAL_MS,
    series: Array.from({ length: SERIES }, (_, i) => ({
      labels: { service: `svc-${i % 10}`, model: 'm', version: '1', replica: `r${i}`, node: `n${i % 100}` },
      histograms: Object.fromEntries(METRICS.map((m, k) => [m, pool[(i + k + seq) % pool.length]!])),
      requests: { ok: 100, error: 0, shed: 0 },
    })),
  }
}

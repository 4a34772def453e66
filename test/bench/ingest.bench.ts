import type { AddressInfo } from 'node:net'
import { decodeFromCompressedBase64, encodeIntoCompressedBase64 } from 'hdr-histogram-js'
import type { Kysely } from 'kysely'
import { createStore, encodeHistogram, newHistogram } from '../../collector/index.js'
import type { IntervalReport } from '../../collector/index.js'
import { buildCollector } from '../../collector/app.js'
import { storeInternals } from '../../collector/store/sql-store.js'
import { createTestDatabase, testDialects } from '../helpers/dialects.js'
import { hdrReference } from '../helpers/hdr.js'
import { latenciesUs, rng } from '../helpers/reports.js'
import type { Bench, BenchResult } from './table.js'

const SIZES = [1, 100, 10_000]
const BUDGET_MS = 4000
const MIN_REPORTS = 3
const TOKEN = 'bench-agent-token'
const NOW = Date.UTC(2026, 10, 21, 13, 37, 25)
const METRICS = ['total', 'queue'] as const

/**
 * Ingest throughput (issue #12): series stored per second by one collector process, over real HTTP
 * (`POST /api/v1/reports`, JSON, schema validation, histogram checks, one transaction per report), at 1,
 * 100 and 10,000 series per report (two histograms each, ≈ 100 requests per series). Baselines in the same
 * run: a bare multi-row INSERT of the same histogram rows (the database's floor, one transaction per
 * report), and the pre-#12 validation alone (each histogram decoded into an HDR histogram) as series/s.
 */
const bench: Bench = {
  name: 'ingest',
  async run(log) {
    const rows: Array<Array<string | number>> = []
    const { pool, hdrPool } = histogramPools()
    const legacyPerSec = legacyValidation(hdrPool)
    for (const dialect of testDialects()) {
      for (const n of SIZES) {
        const tdb = await createTestDatabase(dialect)
        const store = await createStore({ url: tdb.url })
        const app = await buildCollector(
          {
            tokens: [{ token: TOKEN, scope: 'agent' }],
            reportBodyLimitBytes: 64 << 20,
            bodyLimitBytes: 1 << 20,
          },
          { store, clock: () => NOW },
        )
        try {
          await app.listen({ host: '127.0.0.1', port: 0 })
          const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1/reports`
          const body = (seq: number) => JSON.stringify(report(seq, n, pool))
          const post = async (seq: number) => {
            const res = await fetch(url, {
              method: 'POST',
              headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
              body: body(seq),
            })
            if (res.status !== 200) throw new Error(`ingest: ${res.status} ${await res.text()}`)
            await res.arrayBuffer()
          }
          await post(1) // first sight of every series: the upsert, as when an agent starts
          let seq = 1
          let series = 0
          let sentMs = 0
          const t0 = performance.now()
          while (performance.now() - t0 < BUDGET_MS || seq < MIN_REPORTS + 1) {
            const text = body(++seq) // built outside the timed part: that is the agent's work
            const t1 = performance.now()
            const res = await fetch(url, {
              method: 'POST',
              headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
              body: text,
            })
            if (res.status !== 200) throw new Error(`ingest: ${res.status} ${await res.text()}`)
            await res.arrayBuffer()
            sentMs += performance.now() - t1
            series += n
          }
          const perSec = (series / sentMs) * 1000
          const floor = await bareInsertPerSec(store, n, pool)
          log(
            `${dialect} ${n} series/report: ${perSec.toFixed(0)} series/s (${seq - 1} reports); bare insert ${floor.toFixed(0)}`,
          )
          rows.push([
            dialect,
            n,
            seq - 1,
            perSec,
            floor,
            perSec / floor,
            legacyPerSec,
            perSec >= 100_000 ? 'yes' : 'no',
          ])
        } finally {
          await app.close()
          await store.close()
          await tdb.drop()
        }
      }
    }
    const result: BenchResult = {
      title: `ingest: series/s per collector process (HTTP, ${METRICS.length} histograms per series, one transaction per report)`,
      columns: [
        'dialect',
        'series/report',
        'reports',
        'series/s',
        'bare INSERT series/s',
        'ratio',
        'pre-#12 validation alone, series/s',
        '≥ 100k',
      ],
      rows,
      notes: [
        'bare INSERT: the same histogram rows, multi-row INSERTs of 500 in one transaction per report, no HTTP or JSON (the database floor); ratio = series/s ÷ that.',
        'pre-#12 validation alone: decoding each histogram into an HDR histogram as ingest did before #12, CPU only; an upper bound on its ingest rate.',
      ],
    }
    return result
  },
}
export default bench

/** The same 64 histograms (≈ 100 requests each) in the sparse encoding and in the pre-#12 HDR encoding. */
function histogramPools(): { pool: string[]; hdrPool: string[] } {
  const next = rng(99)
  const pool: string[] = []
  const hdrPool: string[] = []
  for (let i = 0; i < 64; i++) {
    const h = newHistogram()
    const ref = hdrReference()
    for (const v of latenciesUs(next, 100, 5_000 + 1000 * i)) {
      h.recordValue(v)
      ref.recordValue(v)
    }
    pool.push(encodeHistogram(h))
    hdrPool.push(encodeIntoCompressedBase64(ref))
  }
  return { pool, hdrPool }
}

function report(seq: number, n: number, pool: readonly string[]): IntervalReport {
  return {
    version: 1,
    agent: { id: 'bench', instance: 'bench-ingest', node: 'n0' },
    seq,
    // Reports start 30 days back so that a fast run (hundreds of thousands of reports) never reaches the
    // collector's clock (reports over 10 minutes ahead of it are refused).
    intervalStartMs: NOW - 30 * 86_400_000 + seq * 5000,
    intervalEndMs: NOW - 30 * 86_400_000 + seq * 5000 + 5000,
    series: Array.from({ length: n }, (_, i) => ({
      labels: { service: `svc-${i % 10}`, model: 'm', version: '1', replica: `r${i}`, node: `n${i % 100}` },
      histograms: Object.fromEntries(METRICS.map((m, k) => [m, pool[(i + k + seq) % pool.length]!])),
      requests: { ok: 100, error: 0, shed: 0 },
    })),
  }
}

async function bareInsertPerSec(
  store: Awaited<ReturnType<typeof createStore>>,
  n: number,
  pool: readonly string[],
): Promise<number> {
  type Bare = { bench_bare: { bucket_ms: number; series_id: number; metric: string; histogram: string } }
  const db = storeInternals(store)!.db as unknown as Kysely<Bare>
  await db.schema
    .createTable('bench_bare')
    .addColumn('bucket_ms', 'bigint')
    .addColumn('series_id', 'integer')
    .addColumn('metric', 'text')
    .addColumn('histogram', 'text')
    .execute()
  let series = 0
  let k = 0
  const t0 = performance.now()
  while (performance.now() - t0 < BUDGET_MS / 2 || k < MIN_REPORTS) {
    const values = Array.from({ length: n }, (_, i) =>
      METRICS.map((m, j) => ({
        bucket_ms: k * 10_000,
        series_id: i,
        metric: m,
        histogram: pool[(i + j + k) % pool.length]!,
      })),
    ).flat()
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < values.length; i += 500)
        await trx
          .insertInto('bench_bare')
          .values(values.slice(i, i + 500))
          .execute()
    })
    series += n
    k++
  }
  return (series / (performance.now() - t0)) * 1000
}

/** Series/s that decoding every histogram into an HDR histogram (the check before #12) allows, CPU only. */
function legacyValidation(hdrPool: readonly string[]): number {
  const t0 = performance.now()
  let n = 0
  while (performance.now() - t0 < 1000) {
    for (let k = 0; k < METRICS.length; k++) {
      const h = hdrReference()
      h.add(decodeFromCompressedBase64(hdrPool[(n + k) % hdrPool.length]!, 32, false))
    }
    n++
  }
  return (n / (performance.now() - t0)) * 1000
}

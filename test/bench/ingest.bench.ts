import type { AddressInfo } from 'node:net'
import { Worker } from 'node:worker_threads'
import { decodeFromCompressedBase64, encodeIntoCompressedBase64 } from 'hdr-histogram-js'
import type { Kysely } from 'kysely'
import { createStore, encodeHistogram, newHistogram } from '../../collector/index.js'
import type { IntervalReport } from '../../collector/index.js'
import { buildCollector } from '../../collector/app.js'
import { storeInternals } from '../../collector/store/sql-store.js'
import { createTestDatabase, testDialects } from '../helpers/dialects.js'
import { hdrReference } from '../helpers/hdr.js'
import { latenciesUs, rng } from '../helpers/reports.js'
import type { AgentsJob, AgentsResult } from './ingest-agents.js'
import type { Bench, BenchResult } from './table.js'

/**
 * Series per report, reports in flight at once (agents sending together: the collector's group commit), and
 * ingest worker threads (0: every body prepared on the collector's thread; bodies under 256 KiB always are, so
 * workers only change the 10,000-series shapes, which run with none, one and two in the same run).
 */
const DEFAULT_SHAPES: ReadonlyArray<readonly [series: number, agents: number, workers: number]> = [
  [1, 1, 0],
  [100, 1, 0],
  [10_000, 1, 0],
  [10_000, 1, 1],
  [1, 16, 0],
  [100, 16, 0],
  [10_000, 4, 0],
  [10_000, 4, 1],
  [10_000, 4, 2],
]
/** `TG_BENCH_INGEST_SHAPES=10000x8x0,10000x8x4` (series × in flight × workers) replaces the shapes, e.g. on many cores. */
const SHAPES = parseShapes(process.env['TG_BENCH_INGEST_SHAPES']) ?? DEFAULT_SHAPES
const BUDGET_MS = Number(process.env['TG_BENCH_INGEST_BUDGET_MS'] ?? 4000)
const MIN_REPORTS = 3
const TOKEN = 'bench-agent-token'
const NOW = Date.UTC(2026, 10, 21, 13, 37, 25)
const METRICS = ['total', 'queue'] as const

/**
 * Ingest throughput (issue #12): series stored per second by one collector process, over real HTTP
 * (`POST /api/v1/reports`, JSON, schema validation, histogram checks, acknowledged after commit), at 1, 100 and
 * 10,000 series per report from one agent at a time, at 1 and 100 series per report from 16 agents at once and at
 * 10,000 from 4 (a fleet's shape: the reports that arrive while a transaction runs share the next one). Baselines in
 * the same run: a bare multi-row INSERT of the same histograms as one row per series and metric (the finest level's
 * layout before packs: its database floor, one transaction per report), and the pre-#12 validation alone (each
 * histogram decoded into an HDR histogram) as series/s.
 */
const bench: Bench = {
  name: 'ingest',
  async run(log) {
    const rows: Array<Array<string | number>> = []
    const { pool, hdrPool } = histogramPools()
    const legacyPerSec = legacyValidation(hdrPool)
    for (const dialect of testDialects()) {
      for (const [n, agents, workers] of SHAPES) {
        const tdb = await createTestDatabase(dialect)
        const store = await createStore({ url: tdb.url })
        const app = await buildCollector(
          {
            tokens: [{ token: TOKEN, scope: 'agent' }],
            reportBodyLimitBytes: 64 << 20,
            bodyLimitBytes: 1 << 20,
            ingestWorkers: workers,
          },
          { store, clock: () => NOW },
        )
        try {
          await app.listen({ host: '127.0.0.1', port: 0 })
          const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1/reports`
          // Each agent's body is made once with markers for seq and time, filled in per report by the agents'
          // thread, which runs their HTTP client beside the collector's event loop, as a fleet's agents would.
          const job: AgentsJob = {
            url,
            token: TOKEN,
            parts: Array.from({ length: agents }, (_, a) => template(a, n, pool)),
            markers: MARKERS,
            baseMs: NOW - 30 * 86_400_000,
            seriesPerReport: n,
            budgetMs: BUDGET_MS,
            minReports: MIN_REPORTS,
          }
          const done = await runAgents(job)
          const reports = done.reports
          const series = done.series
          // One agent: the time its requests took; several: the wall time they shared.
          const sentMs = agents === 1 ? done.requestMs : done.wallMs
          const perSec = (series / sentMs) * 1000
          const floor = await bareInsertPerSec(store, n, pool)
          log(
            `${dialect} ${n} series/report × ${agents} in flight, ${workers} ingest workers: ${perSec.toFixed(0)} series/s (${reports} reports); bare insert ${floor.toFixed(0)}`,
          )
          rows.push([
            dialect,
            n,
            agents,
            workers,
            reports,
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
      title: `ingest: series/s per collector process (HTTP, ${METRICS.length} histograms per series; reports in flight at once share a transaction)`,
      columns: [
        'dialect',
        'series/report',
        'in flight',
        'ingest workers',
        'reports',
        'series/s',
        'bare INSERT series/s',
        'ratio',
        'pre-#12 validation alone, series/s',
        '≥ 100k',
      ],
      rows,
      notes: [
        'bare INSERT: the same histograms as one row per series and metric (the layout of the finest level before packs), multi-row INSERTs of 500 in one transaction per report, no HTTP or JSON: that layout’s database floor; ratio = series/s ÷ that.',
        'ingest workers: threads that parse, check and prepare bodies of 256 KiB or more beside the collector’s thread (collector.ingestWorkers or --ingest-workers; default 0); the agents run on one more thread of the same process.',
        'pre-#12 validation alone: decoding each histogram into an HDR histogram as ingest did before #12, CPU only; an upper bound on its ingest rate.',
      ],
    }
    return result
  },
}
export default bench

function parseShapes(text: string | undefined): Array<[number, number, number]> | undefined {
  if (text === undefined || text.trim() === '') return undefined
  return text.split(',').map((part) => {
    const m = /^(\d+)x(\d+)x(\d+)$/.exec(part.trim())
    if (m === null)
      throw new Error(`TG_BENCH_INGEST_SHAPES: "${part}" is not SERIESxIN_FLIGHTxWORKERS (e.g. 10000x8x4)`)
    return [Number(m[1]), Number(m[2]), Number(m[3])]
  })
}

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

/** The numbers that mark the seq, the interval's start and its end in a {@link template}. */
const MARKERS = ['987654321', '987654322', '987654323'] as const

/**
 * Agent `a`'s report body, cut at {@link MARKERS} (the agents' thread fills them in per report). Series are the
 * agent's own (its replicas); histograms rotate through the pool by agent.
 */
function template(a: number, n: number, pool: readonly string[]): string[] {
  const [seq, start, end] = MARKERS.map(Number) as [number, number, number]
  const r = report(seq, n, pool, a)
  return JSON.stringify({ ...r, intervalStartMs: start, intervalEndMs: end }).split(
    new RegExp(`(${MARKERS.join('|')})`),
  )
}

/** Runs the agents on their own thread ({@link AgentsJob}) and returns what they did. */
async function runAgents(job: AgentsJob): Promise<AgentsResult> {
  const worker = new Worker(new URL('./ingest-agents.js', import.meta.url), { workerData: job })
  try {
    const reply = await new Promise<{ ok: true; result: AgentsResult } | { ok: false; error: string }>(
      (resolve, reject) => {
        worker.once('message', resolve)
        worker.once('error', reject)
      },
    )
    if (!reply.ok) throw new Error(reply.error)
    return reply.result
  } finally {
    await worker.terminate()
  }
}

function report(seq: number, n: number, pool: readonly string[], agent = 0): IntervalReport {
  return {
    version: 1,
    agent: { id: 'bench', instance: `bench-ingest-${agent}`, node: `n${agent}` },
    seq,
    // Reports start 30 days back so that a fast run (hundreds of thousands of reports) never reaches the
    // collector's clock (reports over 10 minutes ahead of it are refused).
    intervalStartMs: NOW - 30 * 86_400_000 + seq * 5000,
    intervalEndMs: NOW - 30 * 86_400_000 + seq * 5000 + 5000,
    series: Array.from({ length: n }, (_, i) => ({
      labels: {
        service: `svc-${i % 10}`,
        model: 'm',
        version: '1',
        replica: `a${agent}-r${i}`,
        node: `n${agent}`,
      },
      histograms: Object.fromEntries(METRICS.map((m, k) => [m, pool[(i + k + seq + agent) % pool.length]!])),
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

import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { storeInternals } from '../../collector/store/sql-store.js'
import { createStore, encodeHistogram, newHistogram } from '../../collector/index.js'
import type { IntervalReport, Store } from '../../collector/index.js'
import { MIGRATION_NAMES } from '../../migrations/index.js'
import { TEST_PG_URL } from '../helpers/dialects.js'
import type { TestDialect } from '../helpers/dialects.js'
import { latenciesUs, rng } from '../helpers/reports.js'

const SEC = 1000
const MIN = 60 * SEC
const HOUR = 60 * MIN
const DAY = 24 * HOUR

/** The fleet: 10 services × 10 replicas, one metric ('total') per series. */
export const SERVICES = 10
export const REPLICAS = 10
/** The data set's "now": not aligned to any rollup step, so every query has edges. */
export const FLEET_NOW = Date.UTC(2026, 10, 21, 13, 37, 25)
export const FLEET_DAYS = 31

/**
 * Bump when the generated data would differ (report cadence, histogram pool, store layout). The key also
 * holds the migration names, so a new migration regenerates the cached data set.
 */
const DATA_VERSION = 'fleet-v1'

/**
 * Report cadence by age, as a running fleet would leave the layout after compaction, but thinner: one
 * report per series per hour before the 1 min level's retention (14 d), one per 10 min inside it, one per
 * minute inside the 10 s level's retention (2 d). Every report lands in a real 10 s bucket; compaction
 * builds the 1 min, 1 h and 1 d rows and applies retention as the simulated clock moves on.
 */
function cadenceMs(ageMs: number): number {
  if (ageMs > 14 * DAY) return HOUR
  if (ageMs > 2 * DAY) return 10 * MIN
  return MIN
}

/** A pool of encoded 5 s histograms per service (≈ 500 requests each, log-normal around the service's median). */
function histogramPool(poolSize: number): string[][] {
  const next = rng(1234)
  return Array.from({ length: SERVICES }, (_, s) =>
    Array.from({ length: poolSize }, () => {
      const h = newHistogram()
      for (const v of latenciesUs(next, 500, 20_000 * (s + 1))) h.recordValue(v)
      return encodeHistogram(h)
    }),
  )
}

/** The store's tables the PostgreSQL copy takes over. */
const COPIED_TABLES = [
  'tg_series',
  'tg_report',
  'tg_hist',
  'tg_hist_service',
  'tg_count',
  'tg_count_service',
  'tg_level_state',
]

/** Where a cached data set lives, and whether it is complete. */
export interface FleetData {
  readonly url: string
  readonly generatedMs: number | null
  readonly reports: number
  readonly seriesHistograms: number
}

function cacheKey(): string {
  let h = 0
  for (const c of `${DATA_VERSION}|${MIGRATION_NAMES.join(',')}`) h = (Math.imul(h, 31) + c.charCodeAt(0)) | 0
  return `${DATA_VERSION}_${(h >>> 0).toString(16)}`
}

/**
 * Opens (generating on first use) the 31-day, 100-series data set for `dialect`: a SQLite file under the
 * temp dir, or a PostgreSQL schema on the test database, both named by the cache key. Generation goes
 * through `store.ingest` and `store.compact` only (on SQLite; PostgreSQL gets a row-for-row copy).
 *
 * @example const data = await fleetData('sqlite', log) // { url, generatedMs: 95000 | null (cached), … }
 */
export async function fleetData(dialect: TestDialect, log: (line: string) => void): Promise<FleetData> {
  const key = cacheKey()
  const sqlite = await sqliteData(key, log)
  if (dialect === 'sqlite') return sqlite
  return postgresData(key, sqlite, log)
}

async function sqliteData(key: string, log: (line: string) => void): Promise<FleetData> {
  const dir = join(tmpdir(), `tailguard-bench-${key}`)
  const file = join(dir, 'fleet.db')
  const url = `sqlite:${file}`
  if (existsSync(file)) return { url, generatedMs: null, reports: 0, seriesHistograms: 0 }
  mkdirSync(dir, { recursive: true })
  const partial = join(dir, 'partial.db')
  for (const f of [partial, `${partial}-wal`, `${partial}-shm`]) rmSync(f, { force: true })
  const r = await generate(`sqlite:${partial}`, log)
  renameSync(partial, file)
  return { url, ...r }
}

/**
 * The PostgreSQL copy: the SQLite data set's tables, row for row, into a schema migrated by the store (so
 * both dialects answer from the same data; generating twice through ingest would double a slow step).
 */
async function postgresData(key: string, source: FleetData, log: (line: string) => void): Promise<FleetData> {
  // An unquoted identifier: letters, digits and underscores only (the key carries a version like `v2-…`).
  const schema = `tg_bench_${key}`.toLowerCase().replace(/[^a-z0-9_]/g, '_')
  const sep = TEST_PG_URL.includes('?') ? '&' : '?'
  const url = `${TEST_PG_URL}${sep}options=${encodeURIComponent(`-c search_path=${schema}`)}`
  const client = new pg.Client({ connectionString: TEST_PG_URL })
  await client.connect()
  try {
    const done = await client.query(
      `select 1 from information_schema.tables where table_schema = $1 and table_name = 'bench_done'`,
      [schema],
    )
    if (done.rowCount === 1) return { url, generatedMs: null, reports: 0, seriesHistograms: 0 }
    await client.query(`drop schema if exists ${schema} cascade`)
    await client.query(`create schema ${schema}`)
    const t0 = performance.now()
    const from = await createStore({ url: source.url })
    const to = await createStore({ url })
    try {
      const src = storeInternals(from)!.db as unknown as Kysely<Record<string, Record<string, unknown>>>
      const dst = storeInternals(to)!.db as unknown as Kysely<Record<string, Record<string, unknown>>>
      for (const table of COPIED_TABLES) {
        const rows = await src.selectFrom(table).selectAll().execute()
        for (let i = 0; i < rows.length; i += 2000)
          await dst
            .insertInto(table)
            .values(rows.slice(i, i + 2000))
            .execute()
        log(`postgres copy: ${table} ${rows.length} rows`)
      }
      // Identity columns continue after the copied ids.
      await sql`select setval(pg_get_serial_sequence('tg_series', 'id'), (select max(id) from tg_series))`.execute(
        dst,
      )
      await sql`analyze`.execute(dst)
    } finally {
      await from.close()
      await to.close()
    }
    await client.query(`create table ${schema}.bench_done (at bigint)`)
    const generatedMs = (source.generatedMs ?? 0) + performance.now() - t0
    return { url, generatedMs, reports: source.reports, seriesHistograms: source.seriesHistograms }
  } finally {
    await client.end()
  }
}

async function generate(
  url: string,
  log: (line: string) => void,
): Promise<{ generatedMs: number; reports: number; seriesHistograms: number }> {
  const t0 = performance.now()
  const pool = histogramPool(32)
  const store: Store = await createStore({ url })
  let seq = 0
  let series = 0
  try {
    const start = Math.floor((FLEET_NOW - FLEET_DAYS * DAY) / HOUR) * HOUR
    let nextCompact = start + 6 * HOUR
    let nextLog = start + 7 * DAY
    for (let t = start; t < FLEET_NOW; t += cadenceMs(FLEET_NOW - t)) {
      const report: IntervalReport = {
        version: 1,
        agent: { id: 'bench', instance: 'bench-fleet', node: 'n0' },
        seq: ++seq,
        intervalStartMs: t,
        intervalEndMs: t + 5 * SEC,
        series: Array.from({ length: SERVICES * REPLICAS }, (_, i) => {
          const s = Math.floor(i / REPLICAS)
          const r = i % REPLICAS
          return {
            labels: {
              service: `svc-${s}`,
              model: 'm',
              version: '1',
              replica: `r${r}`,
              node: `n${r}`,
            },
            histograms: { total: pool[s]![(seq * 7 + r) % pool[s]!.length]! },
            requests: { ok: 500, error: 0, shed: 0 },
          }
        }),
      }
      await store.ingest(report, t + 5 * SEC)
      series += report.series.length
      if (t >= nextCompact) {
        await store.compact(t)
        nextCompact += 6 * HOUR
      }
      if (t >= nextLog) {
        log(
          `generating: ${new Date(t).toISOString()} (${seq} reports, ${((performance.now() - t0) / 1000).toFixed(0)} s)`,
        )
        nextLog += 7 * DAY
      }
    }
    await store.compact(FLEET_NOW)
  } finally {
    await store.close()
  }
  const generatedMs = performance.now() - t0
  log(`generated ${seq} reports (${series} series histograms) in ${(generatedMs / 1000).toFixed(1)} s`)
  return { generatedMs, reports: seq, seriesHistograms: series }
}

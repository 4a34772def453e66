// Test helpers: a small in-test data source on the real HDR codec (the real store is built on another
// branch), and SQLite / PostgreSQL databases with the SLO migration applied.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sqliteDriver } from '../../../collector/store/sqlite-driver.js'
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely'
import pg from 'pg'
import { mergeHistograms, newHistogram } from '../../../collector/index.js'
import type { Histogram, Metric, Store } from '../../../collector/index.js'
import type { SloDataSource } from '../../../collector/slo/series.js'
import type { SloSelector } from '../../../collector/slo/definition.js'
import type { SloTables } from '../../../collector/slo/tables.js'
import { up } from '../../../migrations/2026-11-21T2200_slo.js'

export const GRID_MS = 10_000

/** Requests per 10 s bucket in {@link scenario}. */
export const PER_BUCKET = 2000

/**
 * Counts per bucket: 1 error of {@link PER_BUCKET} (0.05%) except `errors` during [from, to).
 *
 * @example scenario(30, stepAt, stepAt + 90 * 60_000)(stepAt) // { ok: 1970, error: 30, shed: 0 }
 */
export function scenario(errors: number, from: number, to: number, perBucket = PER_BUCKET) {
  return (t: number) => ({
    ok: perBucket - (t >= from && t < to ? errors : 1),
    error: t >= from && t < to ? errors : 1,
    shed: 0,
  })
}

/**
 * The alert reference for a 99.9% availability SLO: the first evaluation time at which both windows
 * exceed factor × (1 − objective) over the raw counts (one bucket every `gridMs`), and the first one after
 * that at which they no longer do.
 *
 * @example reference(counts, evalTimes, { factor: 14.4, longMs: 3_600_000, shortMs: 300_000 })
 */
export function reference(
  counts: (t: number) => { ok: number; error: number } | undefined,
  evalTimes: number[],
  tier: { factor: number; longMs: number; shortMs: number },
  gridMs = GRID_MS,
  objective = 0.999,
): { firedAt: number | null; resolvedAt: number | null } {
  const ratio = (end: number, w: number) => {
    let bad = 0
    let total = 0
    for (let t = end - w; t < end; t += gridMs) {
      const c = counts(t)
      if (!c) continue
      bad += c.error
      total += c.ok + c.error
    }
    return total === 0 ? 0 : bad / total
  }
  let firedAt: number | null = null
  let resolvedAt: number | null = null
  const limit = tier.factor * (1 - objective)
  for (const t of evalTimes) {
    const holds = ratio(t, tier.longMs) > limit && ratio(t, tier.shortMs) > limit
    if (firedAt === null && holds) firedAt = t
    else if (firedAt !== null && resolvedAt === null && !holds) resolvedAt = t
  }
  return { firedAt, resolvedAt }
}

export interface BucketCounts {
  ok: number
  error: number
  shed: number
}

/**
 * A data source whose counts per 10 s bucket come from a function of time (one series), and whose
 * latency histograms are explicit per-bucket HDR histograms. Reads aggregate 10 s buckets into the
 * requested step, as the store's rollups do.
 */
export class FunctionSource implements SloDataSource {
  reads = 0
  readonly histograms = new Map<number, Map<Metric, Histogram>>()
  constructor(
    private readonly counts: (tMs: number) => BucketCounts | undefined,
    private readonly matches: (s: SloSelector) => boolean = () => true,
  ) {}

  record(tMs: number, metric: Metric, valueUs: number): void {
    const t = Math.floor(tMs / GRID_MS) * GRID_MS
    let m = this.histograms.get(t)
    if (!m) this.histograms.set(t, (m = new Map()))
    let h = m.get(metric)
    if (!h) m.set(metric, (h = newHistogram()))
    h.recordValue(valueUs)
  }

  async countSeries(selector: SloSelector, range: { fromMs: number; toMs: number }, stepMs: number) {
    this.reads++
    const out: Array<{ tMs: number; counts: BucketCounts }> = []
    if (!this.matches(selector)) return out
    const from = Math.ceil(range.fromMs / GRID_MS) * GRID_MS
    let cur: { tMs: number; counts: BucketCounts } | undefined
    for (let t = from; t < range.toMs; t += GRID_MS) {
      const c = this.counts(t)
      if (!c) continue
      const b = Math.floor(t / stepMs) * stepMs
      if (!cur || cur.tMs !== b) {
        cur = { tMs: b, counts: { ok: 0, error: 0, shed: 0 } }
        out.push(cur)
      }
      cur.counts.ok += c.ok
      cur.counts.error += c.error
      cur.counts.shed += c.shed
    }
    return out
  }

  async timeseries(
    selector: SloSelector,
    range: { fromMs: number; toMs: number },
    metric: Metric,
    stepMs: number,
  ) {
    this.reads++
    const groups = new Map<number, Histogram[]>()
    if (!this.matches(selector)) return []
    for (const [t, m] of this.histograms) {
      if (t < range.fromMs || t >= range.toMs) continue
      const h = m.get(metric)
      if (!h) continue
      const b = Math.floor(t / stepMs) * stepMs
      const list = groups.get(b) ?? []
      list.push(h)
      groups.set(b, list)
    }
    return [...groups.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([tMs, hs]) => ({ tMs, histogram: mergeHistograms(hs) }))
  }
}

/** A fresh in-memory SQLite database with the SLO migration applied. */
export async function sqliteDb(file = ':memory:'): Promise<Kysely<SloTables>> {
  const db = new Kysely<SloTables>({
    dialect: new SqliteDialect({ database: new (sqliteDriver().Database)(file) }),
  })
  return db
}

/** Applies the SLO migration. */
export async function migrate(db: Kysely<SloTables>): Promise<void> {
  await up(db as unknown as Kysely<unknown>)
}

/** A database with the SLO migration applied; `reopen()` connects again (a collector restart). */
export interface TestDb {
  readonly db: Kysely<SloTables>
  reopen(): Kysely<SloTables>
  drop(): Promise<void>
}

const pgPool = (schema: string) =>
  new pg.Pool({
    host: '127.0.0.1',
    port: 5432,
    user: 'postgres',
    database: 'test',
    options: `-c search_path=${schema}`,
    max: 4,
  })

export { testDialects } from '../../helpers/dialects.js'

/** SQLite in a temporary file, or PostgreSQL in its own random schema (dropped by `drop()`). */
export async function openDb(dialect: 'sqlite' | 'postgres'): Promise<TestDb> {
  const opened: Array<Kysely<SloTables>> = []
  if (dialect === 'postgres') {
    const schema = `tg_slo_${Math.random().toString(36).slice(2, 10)}`
    const admin = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' })
    await admin.connect()
    await admin.query(`create schema ${schema}`)
    await admin.end()
    const open = () => {
      const k = new Kysely<SloTables>({ dialect: new PostgresDialect({ pool: pgPool(schema) }) })
      opened.push(k)
      return k
    }
    const db = open()
    await migrate(db)
    return {
      db,
      reopen: open,
      drop: async () => {
        const k = new Kysely<SloTables>({ dialect: new PostgresDialect({ pool: pgPool('public') }) })
        await sql.raw(`drop schema ${schema} cascade`).execute(k)
        await k.destroy()
        for (const o of opened) await o.destroy().catch(() => undefined)
      },
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'tg-slo-db-'))
  const file = join(dir, 'slo.db')
  const open = () => {
    const k = new Kysely<SloTables>({
      dialect: new SqliteDialect({ database: new (sqliteDriver().Database)(file) }),
    })
    opened.push(k)
    return k
  }
  const db = open()
  await migrate(db)
  return {
    db,
    reopen: open,
    drop: async () => {
      for (const o of opened) await o.destroy().catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

// The collector's Store satisfies the SLO engine's narrow data source (checked by the compiler).
export const storeIsASource = (s: Store): SloDataSource => s

/**
 * A `Store` for `buildCollector` in route tests: the SLO reads come from `source`; everything else is
 * empty (the real store is on another branch).
 */
export function storeFrom(source: SloDataSource): Store {
  const zero = { ok: 0, error: 0, shed: 0, errorClasses: {}, outputTokens: 0 }
  return {
    dialect: 'sqlite',
    migrate: async () => ({ kind: 'ok', applied: [] }),
    ingest: async () => ({ kind: 'stored' }),
    ingestPrepared: async () => ({ kind: 'stored' }),
    finestStepMs: 10_000,
    histograms: async () => new Map(),
    timeseries: async (sel, range, metric, step) => [...(await source.timeseries(sel, range, metric, step))],
    counts: async () => zero,
    countSeries: async (sel, range, step) =>
      (await source.countSeries(sel, range, step)).map((r) => ({
        tMs: r.tMs,
        counts: { ...zero, ...r.counts },
      })),
    countSeriesByService: async () => new Map(),
    histogramsByService: async () => new Map(),
    signals: async () => [],
    services: async () => [],
    gpus: async () => [],
    gpuSeries: async () => [],
    gpuEvents: async () => [],
    compact: async () => ({ rolledUp: 0, deleted: 0 }),
    ping: async () => true,
    close: async () => undefined,
  }
}

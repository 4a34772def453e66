// Acceptance 6: one evaluation cycle of 1,000 SLOs over 30-day windows, from rollups. The engine caches
// good/total per closed bucket, so a steady-state cycle reads only the newest minutes; the baseline is
// the full recompute (every SLO re-reads 30 days of hourly rollups and 6 h of minute buckets).
import { sqliteDriver } from '../../collector/store/sqlite-driver.js'
import { Kysely, SqliteDialect } from 'kysely'
import { newHistogram } from '../../collector/index.js'
import type { Histogram, Metric } from '../../collector/index.js'
import { createSloEngine } from '../../collector/slo/engine.js'
import { validateSlo } from '../../collector/slo/definition.js'
import type { SloDefinition, SloSelector } from '../../collector/slo/definition.js'
import type { SloDataSource } from '../../collector/slo/series.js'
import type { SloTables } from '../../collector/slo/tables.js'
import { up } from '../../migrations/2026-11-21T2200_slo.js'
import type { Bench } from './table.js'

const MIN = 60_000
const HOUR = 60 * MIN
const SLO_COUNT = 1000
const SERVICES = 50
const POOL = 32

/** Deterministic hash of a service and a bucket start. */
function hash(s: string, t: number): number {
  let h = 2166136261 ^ Math.floor(t / 1000)
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619)
  return ((h >>> 0) ^ ((h >>> 0) >>> 13)) >>> 0
}

/**
 * Serves rollups as the store would: one (already merged) histogram or counter row per step bucket,
 * drawn from a pool of realistic latency histograms (log-normal around 120 ms).
 */
function rollupSource(): SloDataSource & { reads: number; buckets: number } {
  const pool: Histogram[] = []
  let seed = 7
  const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32
  for (let p = 0; p < POOL; p++) {
    const h = newHistogram()
    for (let i = 0; i < 2000; i++) {
      const z = Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd())
      h.recordValue(Math.max(1, Math.round(Math.exp(Math.log(120_000 + p * 2000) + 0.4 * z))))
    }
    pool.push(h)
  }
  const src = {
    reads: 0,
    buckets: 0,
    async timeseries(sel: SloSelector, range: { fromMs: number; toMs: number }, _m: Metric, stepMs: number) {
      src.reads++
      const out: Array<{ tMs: number; histogram: Histogram }> = []
      for (let t = Math.ceil(range.fromMs / stepMs) * stepMs; t < range.toMs; t += stepMs)
        out.push({ tMs: t, histogram: pool[hash(sel.service ?? '', t) % POOL]! })
      src.buckets += out.length
      return out
    },
    async countSeries(sel: SloSelector, range: { fromMs: number; toMs: number }, stepMs: number) {
      src.reads++
      const out: Array<{ tMs: number; counts: { ok: number; error: number; shed: number } }> = []
      const burning = sel.service === 'svc-0'
      for (let t = Math.ceil(range.fromMs / stepMs) * stepMs; t < range.toMs; t += stepMs) {
        const total = 1200 * (stepMs / MIN)
        const error = Math.round(total * (burning ? 0.02 : (hash(sel.service ?? '', t) % 10) / 10_000))
        out.push({ tMs: t, counts: { ok: total - error, error, shed: 0 } })
      }
      src.buckets += out.length
      return out
    },
  }
  return src
}

function slos(): SloDefinition[] {
  const out: SloDefinition[] = []
  for (let i = 0; i < SLO_COUNT; i++) {
    const service = `svc-${i % SERVICES}`
    const raw =
      i % 2 === 0
        ? {
            name: `lat-${i}`,
            kind: 'latency',
            selector: { service },
            thresholdMs: 350 + (i % 97) * 2,
            objective: 0.99,
            window: '30d',
          }
        : { name: `avail-${i}`, kind: 'availability', selector: { service }, objective: 0.999, window: '30d' }
    const r = validateSlo(raw)
    if (!r.ok) throw new Error(JSON.stringify(r.problems))
    out.push(r.slo)
  }
  return out
}

async function engineWithDb(source: SloDataSource) {
  const db = new Kysely<SloTables>({
    dialect: new SqliteDialect({ database: new (sqliteDriver().Database)(':memory:') }),
  })
  await up(db as unknown as Kysely<unknown>)
  const engine = createSloEngine({ source, db })
  engine.setFileSlos(slos())
  return { engine, db }
}

const bench: Bench = {
  name: 'slo',
  async run(log) {
    const start = Date.UTC(2026, 10, 1, 12, 0, 0)
    const src = rollupSource()
    const { engine, db } = await engineWithDb(src)

    // Cold cycle: this is also the full recompute (no cache yet).
    let t0 = performance.now()
    const cold = await engine.evaluate(start)
    const coldMs = performance.now() - t0
    const coldBuckets = src.buckets
    log(`cold cycle: ${coldMs.toFixed(0)} ms, ${coldBuckets} buckets, ${cold.notifications} notifications`)

    // Steady state: one cycle per minute.
    const warm: number[] = []
    let warmBuckets = 0
    for (let i = 1; i <= 8; i++) {
      const before = src.buckets
      t0 = performance.now()
      const r = await engine.evaluate(start + i * MIN)
      warm.push(performance.now() - t0)
      warmBuckets = src.buckets - before
      if (r.failed.length > 0) throw new Error(`evaluation failed: ${JSON.stringify(r.failed[0])}`)
    }
    // An hour boundary folds minute buckets into an hourly one.
    t0 = performance.now()
    await engine.evaluate(start + HOUR)
    const hourMs = performance.now() - t0
    warm.sort((a, b) => a - b)
    const warmMs = warm[Math.floor(warm.length / 2)]!
    await db.destroy()

    // Baseline: the full recompute every cycle (a fresh engine, nothing cached), measured again here.
    const fresh = await engineWithDb(rollupSource())
    t0 = performance.now()
    await fresh.engine.evaluate(start + 2 * MIN)
    const naiveMs = performance.now() - t0
    await fresh.db.destroy()
    log(`steady cycle (median of 8): ${warmMs.toFixed(1)} ms; full recompute: ${naiveMs.toFixed(0)} ms`)

    return {
      title: `SLO evaluation cycle, ${SLO_COUNT} SLOs (half latency, half availability) over 30-day windows`,
      columns: ['cycle', 'ms', 'buckets read', 'vs full recompute'],
      rows: [
        ['full recompute (baseline, no cache)', naiveMs, coldBuckets, 1],
        ['cached, steady state (median of 8)', warmMs, warmBuckets, naiveMs / warmMs],
        ['cached, at an hour boundary', hourMs, '-', naiveMs / hourMs],
      ],
      notes: [
        'Target: one cycle of 1,000 SLOs over 30-day windows ≤ 1 s (steady state). The cached engine reads only the minutes since the last cycle plus a 2-minute settle window for late reports; the first cycle after a start is a full recompute.',
        `Alert state for ${SLO_COUNT} SLOs is written to SQLite (in memory) inside each cycle. The source serves pre-merged rollup histograms, so the store's own decode cost is not included.`,
      ],
    }
  },
}

export default bench

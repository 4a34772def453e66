// The SLO engine on the real store (SQLite and PostgreSQL): interval reports go in through
// `store.ingest`, the engine reads them back through the store's queries, and its tables come from the
// store's own migrations. The clock is the test's: every evaluation names its time.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Kysely } from 'kysely'
import { createStore } from '../../../collector/index.js'
import type { IntervalReport, SeriesLabels, Store } from '../../../collector/index.js'
import { storeDatabase } from '../../../collector/store/index.js'
import { createSloEngine } from '../../../collector/slo/engine.js'
import type { SloEngine, SloEvaluation } from '../../../collector/slo/engine.js'
import { validateSlo } from '../../../collector/slo/definition.js'
import type { SloDefinition } from '../../../collector/slo/definition.js'
import type { SloTables } from '../../../collector/slo/tables.js'
import { MIGRATION_NAMES } from '../../../migrations/index.js'
import { createRecorder } from '../../../agent/index.js'
import { createTestDatabase, testDialects } from '../../helpers/dialects.js'
import type { TestDatabase } from '../../helpers/dialects.js'
import { makeReport, rng } from '../../helpers/reports.js'
import { reference, scenario } from './helpers.js'

const MIN = 60_000
const HOUR = 60 * MIN
const SLO_MIGRATION = '2026-11-21T2200_slo'
const LABELS: SeriesLabels = { service: 'chat', model: 'llama', version: '3', replica: 'r0', node: 'n0' }

function slo(raw: object): SloDefinition {
  const r = validateSlo(raw)
  if (!r.ok) throw new Error(JSON.stringify(r.problems))
  return r.slo
}

const LATENCY = slo({
  name: 'chat-latency',
  kind: 'latency',
  selector: { service: 'chat' },
  thresholdMs: 187,
  objective: '99%',
  window: '30d',
})
const AVAILABILITY = slo({
  name: 'chat-availability',
  kind: 'availability',
  selector: { service: 'chat' },
  objective: '99.9%',
  window: '30d',
})

/** The SLO tables in the store's own database (kysely's table maps are invariant; DB includes them). */
const sloDb = (store: Store) => storeDatabase(store) as unknown as Kysely<SloTables>

const engineOn = (store: Store, slos: readonly SloDefinition[]): SloEngine => {
  const engine = createSloEngine({ source: store, db: sloDb(store) })
  engine.setFileSlos(slos)
  return engine
}

/** One interval report from the agent's recorder, as the agent's shipper builds it. */
function reportFrom(
  recorder: ReturnType<typeof createRecorder>,
  seq: number,
  startMs: number,
  lengthMs: number,
): IntervalReport {
  const { series } = recorder.drain()
  return {
    version: 1,
    agent: { id: 'slo-test', instance: 'slo-test-1', node: 'n0' },
    seq,
    intervalStartMs: startMs,
    intervalEndMs: startMs + lengthMs,
    series,
  }
}

/** Log-normal latencies around 120 ms: most requests under 187 ms, a few percent over. */
function latencyUs(next: () => number): number {
  const z = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next())
  return Math.max(1, Math.round(Math.exp(Math.log(120_000) + 0.35 * z)))
}

/**
 * Ingests one report per minute over [fromMs, toMs) with `perMinute` requests each (latencies from
 * `latencyUs`, every 50th request an error), and returns the exact counts of the raw samples.
 */
async function ingestTraffic(store: Store, fromMs: number, toMs: number, perMinute: number, seed: number) {
  const recorder = createRecorder()
  const next = rng(seed)
  let seq = 0
  const exact = { fast: 0, samples: 0, ok: 0, error: 0 }
  for (let t = fromMs; t < toMs; t += MIN) {
    for (let i = 0; i < perMinute; i++) {
      const us = latencyUs(next)
      const failed = i % 50 === 0
      recorder.recordRequest({
        labels: LABELS,
        status: failed ? 'error' : 'ok',
        ...(failed ? { errorClass: 'timeout' } : {}),
        phasesUs: { total: us },
      })
      exact.samples++
      if (us <= 187_000) exact.fast++
      if (failed) exact.error++
      else exact.ok++
    }
    const outcome = await store.ingest(reportFrom(recorder, ++seq, t, MIN), t + MIN)
    expect(outcome.kind).toBe('stored')
  }
  return exact
}

/** What must not change when the store's rows are rolled up. */
const figures = (e: SloEvaluation) => ({
  good: e.good,
  total: e.total,
  sli: e.sli,
  budget: e.budget,
})

for (const dialect of testDialects())
  describe(`${dialect}: SLO engine on the real store`, () => {
    let tdb: TestDatabase
    let store: Store | undefined
    beforeEach(async () => {
      tdb = await createTestDatabase(dialect)
    })
    afterEach(async () => {
      await store?.close()
      store = undefined
      await tdb.drop()
    })

    it('a 187 ms latency SLO is within 0.1% of the exact fraction of the raw samples', async () => {
      store = await createStore({ url: tdb.url })
      const end = Date.UTC(2026, 4, 1, 6)
      const exact = await ingestTraffic(store, end - 2 * HOUR, end, 300, 187)
      const engine = engineOn(store, [LATENCY, AVAILABILITY])
      const cycle = await engine.evaluate(end)
      expect(cycle.failed).toEqual([])
      const lat = engine.get('chat-latency')!.evaluation!
      const fraction = exact.fast / exact.samples
      expect(lat.total).toBe(exact.samples)
      expect(Math.abs(lat.sli! - fraction) / fraction).toBeLessThan(0.001)
      // The fixture puts the threshold inside the distribution, not at one of its ends.
      expect(fraction).toBeGreaterThan(0.85)
      expect(fraction).toBeLessThan(0.99)
      // Availability comes from the request counters the same reports carried.
      const av = engine.get('chat-availability')!.evaluation!
      expect(av.total).toBe(exact.ok + exact.error)
      expect(av.good).toBe(exact.ok)
      expect(av.sli).toBeCloseTo(exact.ok / (exact.ok + exact.error), 12)
      await engine.stop()
    })

    it('an availability step fires the 14.4× page and resolves at the reference times', async () => {
      store = await createStore({ url: tdb.url })
      const stepAt = Date.UTC(2026, 0, 10, 10)
      const stopAt = stepAt + 90 * MIN
      // One report per minute: 0.05% errors, then 1.5% (a 15× burn) for 90 minutes.
      const counts = scenario(30, stepAt, stopAt, 2000)
      const dataFrom = stepAt - 2 * HOUR
      const lastEval = stepAt + 3 * HOUR
      let seq = 0
      for (let t = dataFrom; t < lastEval; t += MIN) {
        const c = counts(t)
        await store.ingest(makeReport({ seq: ++seq, startMs: t, series: [{ ok: c.ok, error: c.error }] }), t)
      }
      const engine = engineOn(store, [AVAILABILITY])
      const times: number[] = []
      const transitions: Array<{ t: number; tier: string; state: string }> = []
      const last = new Map<string, string>()
      for (let t = stepAt - 10 * MIN; t <= lastEval; t += MIN) {
        times.push(t)
        const cycle = await engine.evaluate(t)
        expect(cycle.failed).toEqual([])
        for (const tier of engine.get('chat-availability')!.evaluation!.tiers) {
          if (last.get(tier.tier) !== tier.state) transitions.push({ t, tier: tier.tier, state: tier.state })
          last.set(tier.tier, tier.state)
        }
      }
      const firstAt = (tier: string, state: string) =>
        transitions.find((x) => x.tier === tier && x.state === state)?.t ?? null
      const inWindow = (t: number) => (t >= dataFrom && t < lastEval ? counts(t) : undefined)
      // Every tier against the reference over the raw per-minute counts.
      for (const tier of AVAILABILITY.tiers) {
        const ref = reference(
          inWindow,
          times,
          { factor: tier.factor, longMs: tier.longWindowMs, shortMs: tier.shortWindowMs },
          MIN,
        )
        expect({ tier: tier.id, fired: firstAt(tier.id, 'firing') }).toEqual({
          tier: tier.id,
          fired: ref.firedAt,
        })
        expect({ tier: tier.id, resolved: firstAt(tier.id, 'resolved') }).toEqual({
          tier: tier.id,
          resolved: ref.resolvedAt,
        })
      }
      const page = reference(inWindow, times, { factor: 14.4, longMs: HOUR, shortMs: 5 * MIN }, MIN)
      expect(page.firedAt).not.toBeNull()
      expect(page.resolvedAt).not.toBeNull()
      expect(firstAt('page-1h', 'firing')).toBe(page.firedAt)
      expect(firstAt('page-1h', 'resolved')).toBe(page.resolvedAt)
      // A 15× burn over a 0.5× baseline crosses 14.4× over the hour after (14.4 − 0.5)/(15 − 0.5) of it;
      // the short window clears within its length (plus one evaluation) once errors stop.
      const detectMs = ((14.4 - 0.5) / (15 - 0.5)) * HOUR
      expect(page.firedAt! - stepAt).toBeLessThanOrEqual(detectMs + MIN)
      expect(page.firedAt! - stepAt).toBeGreaterThan(detectMs - MIN)
      expect(page.resolvedAt! - stopAt).toBeLessThanOrEqual(6 * MIN)
      // The alert state lives in the store's database.
      const rows = await sloDb(store)
        .selectFrom('slo_alerts')
        .select(['tier', 'state', 'fired_at_ms', 'resolved_at_ms'])
        .where('slo', '=', 'chat-availability')
        .where('tier', '=', 'page-1h')
        .execute()
      expect(rows.map((r) => [r.state, Number(r.fired_at_ms), Number(r.resolved_at_ms)])).toEqual([
        ['resolved', page.firedAt, page.resolvedAt],
      ])
      await engine.stop()
    })

    it('the cached evaluation after store.compact() gives the SLIs it gave before', async () => {
      store = await createStore({ url: tdb.url })
      // Four hours across midnight, so compaction builds minute, hour and day rollups.
      const midnight = Date.UTC(2026, 5, 2)
      const dataTo = midnight + HOUR + 50 * MIN
      await ingestTraffic(store, midnight - 2 * HOUR, dataTo, 60, 7)
      const at = midnight + 2 * HOUR
      const cached = engineOn(store, [LATENCY, AVAILABILITY])
      await cached.evaluate(at)
      const before = new Map(cached.list().map((x) => [x.slo.name, structuredClone(x.evaluation!)] as const))
      const compacted = await store.compact(at + 5 * MIN)
      expect(compacted.rolledUp).toBeGreaterThan(0)
      // The cached engine re-reads only its recent minutes; a fresh engine reads everything again,
      // now from the rollups.
      await cached.evaluate(at + MIN)
      const fresh = engineOn(store, [LATENCY, AVAILABILITY])
      await fresh.evaluate(at)
      for (const name of ['chat-latency', 'chat-availability']) {
        const b = before.get(name)!
        expect(b.total).toBeGreaterThan(0)
        expect(figures(cached.get(name)!.evaluation!)).toEqual(figures(b))
        expect(figures(fresh.get(name)!.evaluation!)).toEqual(figures(b))
        expect(fresh.get(name)!.evaluation!.burnRates).toEqual(b.burnRates)
        expect(fresh.get(name)!.evaluation!.tiers.map((t) => t.longBurnRate)).toEqual(
          b.tiers.map((t) => t.longBurnRate),
        )
      }
      await cached.stop()
      await fresh.stop()
    })

    it('the SLO tables come from the store’s own migrations', async () => {
      expect(MIGRATION_NAMES).toContain(SLO_MIGRATION)
      store = await createStore({ url: tdb.url })
      const db = storeDatabase(store)!
      const tables = (await db.introspection.getTables()).map((t) => t.name)
      expect(tables).toEqual(
        expect.arrayContaining(['slo_definitions', 'slo_alerts', 'slo_silences', 'slo_outbox']),
      )
      const applied = await (db as unknown as Kysely<{ tg_migration: { name: string } }>)
        .selectFrom('tg_migration')
        .select('name')
        .execute()
      expect(applied.map((r) => r.name)).toContain(SLO_MIGRATION)
      // An API SLO is stored in the store's database: a second engine (a restarted collector) sees it.
      const engine = createSloEngine({ source: store, db: sloDb(store) })
      const put = await engine.putSlo({ name: 'api-slo', kind: 'availability', objective: 0.99 })
      expect(put.ok).toBe(true)
      const again = createSloEngine({ source: store, db: sloDb(store) })
      await again.evaluate(Date.UTC(2026, 0, 1))
      expect(again.list().map((x) => [x.slo.name, x.source])).toEqual([['api-slo', 'api']])
      expect(again.get('api-slo')!.evaluation!.sli).toBeNull()
    })
  })

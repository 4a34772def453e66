// Issue #11: an SLO whose selector names only a service is evaluated from the service rows (tg_hist_service,
// tg_count_service), one per report and service on the finest level and one per service and bucket above
// it. Its good/total must equal, to the event, what the per-series rows give on the same data: the same SLO
// pinned to the one model every series of the service carries reads per-replica rows (STYLE.md section 9:
// real SQLite and PostgreSQL, no mock of the store).
import { describe, expect, it } from 'vitest'
import type { Kysely } from 'kysely'
import type { Store } from '../../../collector/index.js'
import { storeDatabase } from '../../../collector/store/index.js'
import { storeInternals } from '../../../collector/store/sql-store.js'
import { createSloEngine } from '../../../collector/slo/engine.js'
import type { SloEvaluation } from '../../../collector/slo/engine.js'
import { validateSlo } from '../../../collector/slo/definition.js'
import type { SloDefinition } from '../../../collector/slo/definition.js'
import { countAtOrBelow } from '../../../collector/slo/math.js'
import type { SloTables } from '../../../collector/slo/tables.js'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { histogramOf, latenciesUs, makeReport, rng } from '../../helpers/reports.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const END = Date.UTC(2026, 4, 1, 6)
const THRESHOLD_MS = 150

function slo(raw: object): SloDefinition {
  const r = validateSlo(raw)
  if (!r.ok) throw new Error(JSON.stringify(r.problems))
  return r.slo
}

/** Each SLO twice: by service (service rows) and pinned to the model all of chat's series carry (per-series rows). */
const SLOS = (['service', 'series'] as const).flatMap((path) => {
  const selector = path === 'service' ? { service: 'chat' } : { service: 'chat', model: 'llama' }
  return [
    slo({
      name: `lat-${path}`,
      kind: 'latency',
      selector,
      thresholdMs: THRESHOLD_MS,
      objective: '99%',
      window: '30d',
    }),
    slo({ name: `avail-${path}`, kind: 'availability', selector, objective: '99.9%', window: '30d' }),
    slo({
      name: `slices-${path}`,
      kind: 'availability',
      selector,
      objective: '99%',
      window: '7d',
      shedIsBad: false,
      budgeting: 'timeslices',
      timeslice: { window: '5m', target: 0.9 },
    }),
  ]
})

/** Who reports: agent a carries two replicas of chat (its service rows are merges), b one and search, c replicas that appear mid-window. */
function seriesOf(agent: string, t: number): Array<{ service: string; replica: string }> {
  if (agent === 'a')
    return [
      { service: 'chat', replica: 'r0' },
      { service: 'chat', replica: 'r1' },
    ]
  if (agent === 'b')
    return [
      { service: 'chat', replica: 'r2' },
      { service: 'search', replica: 'r0' },
    ]
  return [
    ...(t >= END - 40 * HOUR ? [{ service: 'chat', replica: 'r4' }] : []),
    ...(t >= END - 5 * HOUR - 7 * MIN ? [{ service: 'chat', replica: 'r3' }] : []),
  ]
}

/** What chat's requests were, counted from the raw samples. */
interface Exact {
  samples: number[]
  ok: number
  error: number
  shed: number
}

async function send(
  store: Store,
  agent: string,
  seq: number,
  t: number,
  next: () => number,
  exact: Exact,
): Promise<void> {
  const series = seriesOf(agent, t).map((labels, i) => {
    const total = latenciesUs(next, 8, 110_000)
    const error = Math.floor(next() * 3)
    const shed = i === 0 ? Math.floor(next() * 2) : 0
    if (labels.service === 'chat') {
      exact.samples.push(...total)
      exact.ok += total.length
      exact.error += error
      exact.shed += shed
    }
    return { labels, samples: { total }, ok: total.length, error, shed }
  })
  if (series.length === 0) return
  const outcome = await store.ingest(makeReport({ instance: agent, seq, startMs: t, series }), t + 5000)
  expect(outcome.kind).toBe('stored')
}

/** Three days of reports: every 30 min until 3 h before END, every 2 min since, up to `toMs`. */
async function traffic(store: Store, fromMs: number, toMs: number, exact: Exact, seqs: Map<string, number>) {
  const next = rng(fromMs % 7919)
  for (let t = fromMs; t < toMs; t += t < END - 3 * HOUR ? 30 * MIN : 2 * MIN)
    for (const agent of ['a', 'b', 'c']) {
      const seq = (seqs.get(agent) ?? 0) + 1
      seqs.set(agent, seq)
      await send(store, agent, seq, t, next, exact)
    }
}

const pick = (e: SloEvaluation) => ({
  good: e.good,
  total: e.total,
  burnRates: e.burnRates,
  budget: e.budget,
})

for (const dialect of testDialects())
  describe(`${dialect}: SLOs from service rows`, () => {
    const ctx = useTestStore(dialect)

    it('a service SLO counts from service rows exactly what the per-series rows give, across rollup levels and a replica that appears mid-window', async () => {
      const store = ctx.store
      const exact: Exact = { samples: [], ok: 0, error: 0, shed: 0 }
      const seqs = new Map<string, number>()
      await traffic(store, END - 3 * DAY, END - 20 * MIN, exact, seqs)
      // Everything but the last 20 minutes rolls up (10 s rows older than 2 days are deleted), then a late
      // report lands in an hour that was already rolled up, and the last minutes stay on the finest level.
      await store.compact(END - 20 * MIN)
      await send(store, 'late', 1, END - 26 * HOUR + 10_000, rng(5), exact)
      await traffic(store, END - 20 * MIN, END, exact, seqs)

      const db = storeInternals(store)!.db
      for (const table of ['tg_hist_service', 'tg_count_service'] as const) {
        const steps = await db.selectFrom(table).select('step_ms').distinct().execute()
        expect(steps.map((r) => Number(r.step_ms)).sort((x, y) => x - y)).toEqual([10_000, MIN, HOUR, DAY])
      }

      const engine = createSloEngine({
        source: store,
        db: storeDatabase(store) as unknown as Kysely<SloTables>,
      })
      engine.setFileSlos(SLOS)
      const check = (wantTotal: number) => {
        const ev = (name: string) => engine.get(name)!.evaluation!
        for (const kind of ['lat', 'avail', 'slices'])
          expect(pick(ev(`${kind}-service`)), kind).toEqual(pick(ev(`${kind}-series`)))
        // And both equal a reference computed from the raw samples, independently of the store.
        const lat = ev('lat-service')
        expect(lat.total).toBe(wantTotal)
        expect(lat.good).toBe(countAtOrBelow(histogramOf(exact.samples), THRESHOLD_MS * 1000))
        const avail = ev('avail-service')
        expect(avail.good).toBe(exact.ok)
        expect(avail.total).toBe(exact.ok + exact.error + exact.shed)
      }
      expect((await engine.evaluate(END)).failed).toEqual([])
      check(exact.samples.length)

      // A steady cycle (cached buckets, only the newest minutes read) after more reports: still equal.
      await traffic(store, END, END + 6 * MIN, exact, seqs)
      expect((await engine.evaluate(END + 6 * MIN)).failed).toEqual([])
      check(exact.samples.length)
      await engine.stop()
    })
  })

// Issue #11: SLO evaluation cost at 50,000 series and 100 SLOs, on the real SQLite store. 50,000 series
// (100 services × 500 replicas) report into three 10 s buckets; 100 SLOs (half latency, half availability)
// select one service each (500 series), and one more SLO has an empty selector (all 50,000 series). With the
// series limit (collector.sloMaxSeries, default 1,000) the broad SLO is not evaluated, so a cycle reads 500
// series per SLO; the baseline is the same engine with no limit, evaluating the broad SLO too.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Kysely } from 'kysely'
import { createStore, encodeHistogram, newHistogram } from '../../collector/index.js'
import type { IntervalReport, ReportSeries, Store } from '../../collector/index.js'
import { storeDatabase } from '../../collector/store/index.js'
import { createSloEngine } from '../../collector/slo/engine.js'
import { validateSlo } from '../../collector/slo/definition.js'
import type { SloDefinition } from '../../collector/slo/definition.js'
import type { SloTables } from '../../collector/slo/tables.js'
import type { Bench } from './table.js'

const SERVICES = 100
const REPLICAS = 500
const SLOS = 100
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0)

function def(raw: object): SloDefinition {
  const r = validateSlo(raw)
  if (!r.ok) throw new Error(JSON.stringify(r.problems))
  return r.slo
}

function definitions(): SloDefinition[] {
  const out: SloDefinition[] = []
  for (let i = 0; i < SLOS; i++) {
    const service = `svc-${i % SERVICES}`
    out.push(
      i % 2 === 0
        ? def({
            name: `lat-${i}`,
            kind: 'latency',
            selector: { service },
            thresholdMs: 200,
            objective: 0.99,
            window: '30d',
          })
        : def({
            name: `avail-${i}`,
            kind: 'availability',
            selector: { service },
            objective: 0.999,
            window: '30d',
          }),
    )
  }
  out.push(
    def({
      name: 'everything',
      kind: 'latency',
      selector: {},
      thresholdMs: 200,
      objective: 0.99,
      window: '30d',
    }),
  )
  return out
}

async function load(store: Store): Promise<void> {
  const h = newHistogram()
  for (let v = 1; v <= 40; v++) h.recordValue(v * 5000)
  const wire = encodeHistogram(h)
  let seq = 0
  for (let b = 0; b < 3; b++) {
    const start = NOW - (3 - b) * 10_000
    for (let part = 0; part < (SERVICES * REPLICAS) / 10_000; part++) {
      const series: ReportSeries[] = []
      for (let i = part * 10_000; i < (part + 1) * 10_000; i++)
        series.push({
          labels: { service: `svc-${i % SERVICES}`, model: 'm', version: '1', replica: `r-${i}`, node: 'n' },
          histograms: { total: wire },
          requests: { ok: 40, error: i % 50 === 0 ? 1 : 0, shed: 0 },
        })
      const report: IntervalReport = {
        version: 1,
        agent: { id: 'bench', instance: 'bench', node: 'n' },
        seq: ++seq,
        intervalStartMs: start,
        intervalEndMs: start + 10_000,
        series,
      }
      await store.ingest(report, NOW)
    }
  }
}

async function cycle(store: Store, maxSeriesPerSlo: number) {
  const engine = createSloEngine({
    source: store,
    db: storeDatabase(store) as unknown as Kysely<SloTables>,
    maxSeriesPerSlo,
  })
  engine.setFileSlos(definitions())
  global.gc?.()
  const rss0 = process.memoryUsage().rss
  let peak = rss0
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20)
  const t0 = performance.now()
  const cold = await engine.evaluate(NOW)
  const coldMs = performance.now() - t0
  const t1 = performance.now()
  await engine.evaluate(NOW + 60_000)
  const warmMs = performance.now() - t1
  clearInterval(sampler)
  peak = Math.max(peak, process.memoryUsage().rss)
  await engine.stop()
  return { coldMs, warmMs, peakMb: peak / 2 ** 20, growthMb: (peak - rss0) / 2 ** 20, cold }
}

const bench: Bench = {
  name: 'slo-series',
  async run(log) {
    const dir = mkdtempSync(join(tmpdir(), 'tg-slo-series-'))
    try {
      const store = await createStore({ url: join(dir, 'tg.db') })
      await store.migrate()
      const t0 = performance.now()
      await load(store)
      log(
        `loaded ${SERVICES * REPLICAS} series × 3 buckets in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      )
      const bounded = await cycle(store, 1000)
      log(
        `bounded: cold ${bounded.coldMs.toFixed(0)} ms, warm ${bounded.warmMs.toFixed(0)} ms, peak RSS ${bounded.peakMb.toFixed(0)} MB; ${bounded.cold.failed.length} SLO refused: ${bounded.cold.failed[0]?.error ?? '-'}`,
      )
      const unbounded = await cycle(store, Number.MAX_SAFE_INTEGER)
      log(
        `unbounded: cold ${unbounded.coldMs.toFixed(0)} ms, warm ${unbounded.warmMs.toFixed(0)} ms, peak RSS ${unbounded.peakMb.toFixed(0)} MB`,
      )
      await store.close()
      return {
        title: `SLO evaluation at ${SERVICES * REPLICAS} series: ${SLOS} SLOs of one service each (500 series) plus one with an empty selector, SQLite`,
        columns: [
          'engine',
          'cold cycle ms',
          'steady cycle ms',
          'peak RSS MB',
          'RSS growth MB',
          'SLOs evaluated',
          'vs no limit (cold)',
        ],
        rows: [
          [
            'no series limit (baseline)',
            unbounded.coldMs,
            unbounded.warmMs,
            unbounded.peakMb,
            unbounded.growthMb,
            unbounded.cold.evaluated,
            1,
          ],
          [
            'sloMaxSeries 1000 (default)',
            bounded.coldMs,
            bounded.warmMs,
            bounded.peakMb,
            bounded.growthMb,
            bounded.cold.evaluated,
            unbounded.coldMs / bounded.coldMs,
          ],
        ],
        notes: [
          'The broad SLO is refused at definition through the API (400 TG_ERR_SLO_INVALID) and, from a file, reported as failed and not evaluated: a cycle then reads at most sloMaxSeries series per SLO.',
          'RSS is the whole bench process (store, engine and the loaded SQLite pages), sampled every 20 ms during the two cycles.',
        ],
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
}

export default bench

// Issue #11: SLO evaluation cost at 50,000 series and 100 SLOs, on the real SQLite store. 50,000 series
// (100 services × 500 replicas) report into three 10 s buckets; 100 SLOs (half latency, half availability)
// select one service each (500 series), and one more SLO has an empty selector (all 50,000 series), refused by
// the series limit (collector.sloMaxSeries, default 1,000). The engine reads a service SLO from the service
// rows (tg_hist_service, tg_count_service: one per report and service here, five per bucket); the baseline,
// in the same run, is the per-series path: the same SLOs read through a source that pins each selector to
// the one model every series carries, which matches the same series but reads one row per replica. A third
// row drops the limit, so the broad SLO is evaluated too (from the service rows of all 100 services).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Kysely } from 'kysely'
import { createStore, encodeHistogram, newHistogram } from '../../collector/index.js'
import type { IntervalReport, ReportSeries, Store } from '../../collector/index.js'
import type { SloDataSource } from '../../collector/slo/series.js'
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

/**
 * The per-series path: every selector gets `model: 'm'` (which every series carries, so the same series
 * match), and the store then reads per-replica rows, as it did for every SLO before the service rows.
 */
function perSeries(store: Store): SloDataSource & Pick<Store, 'services'> {
  return {
    timeseries: (sel, range, metric, step) => store.timeseries({ ...sel, model: 'm' }, range, metric, step),
    countSeries: (sel, range, step) => store.countSeries({ ...sel, model: 'm' }, range, step),
    services: () => store.services(),
  }
}

async function cycle(store: Store, maxSeriesPerSlo: number, source: SloDataSource = store) {
  const engine = createSloEngine({
    source,
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
      const line = (name: string, r: Awaited<ReturnType<typeof cycle>>) =>
        log(
          `${name}: cold ${r.coldMs.toFixed(0)} ms, warm ${r.warmMs.toFixed(0)} ms, peak RSS ${r.peakMb.toFixed(0)} MB; ${r.cold.evaluated} evaluated, ${r.cold.failed.length} refused: ${r.cold.failed[0]?.error ?? '-'}`,
        )
      // The baseline first, so the service rows' run cannot profit from pages it alone warmed.
      const series = await cycle(store, 1000, perSeries(store))
      line('per-series rows', series)
      const bounded = await cycle(store, 1000)
      line('service rows', bounded)
      const unbounded = await cycle(store, Number.MAX_SAFE_INTEGER)
      line('service rows, no limit', unbounded)
      await store.close()
      const row = (name: string, r: typeof series) => [
        name,
        r.coldMs,
        r.warmMs,
        r.peakMb,
        r.growthMb,
        r.cold.evaluated,
        series.coldMs / r.coldMs,
        series.warmMs / r.warmMs,
      ]
      return {
        title: `SLO evaluation at ${SERVICES * REPLICAS} series: ${SLOS} SLOs of one service each (500 series) plus one with an empty selector, SQLite`,
        columns: [
          'engine',
          'cold cycle ms',
          'steady cycle ms',
          'peak RSS MB',
          'RSS growth MB',
          'SLOs evaluated',
          'speed-up vs per-series (cold)',
          'speed-up vs per-series (steady)',
        ],
        rows: [
          row('per-series rows, sloMaxSeries 1000 (baseline)', series),
          row('service rows, sloMaxSeries 1000 (default)', bounded),
          row('service rows, no series limit', unbounded),
        ],
        notes: [
          'A service SLO reads the service rows: on the finest level one per report and service (this load sends five reports of 10,000 series per bucket, so 5 rows per bucket instead of 500), above it one per service and bucket.',
          'The broad SLO is refused at definition through the API (400 TG_ERR_SLO_INVALID) and, from a file, reported as failed and not evaluated: a cycle then reads at most sloMaxSeries series per SLO.',
          'RSS is the whole bench process (store, engine and the loaded SQLite pages), sampled every 20 ms during the two cycles; the rows run one after another in one process, so a later row starts from the RSS the earlier ones left.',
        ],
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
}

export default bench

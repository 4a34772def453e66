import { describe, expect, it } from 'vitest'
import { buildObservation } from '../../../controller/index.js'
import { signalsReader } from '../../../controller/live/run.js'
import type { Store } from '../../../collector/index.js'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { makeReport } from '../../helpers/reports.js'
import type { TestSeries } from '../../helpers/reports.js'

const T0 = Date.parse('2026-11-28T12:00:00Z')
const stat = (min: number, mean: number, max: number, last: number) => ({ min, mean, max, last })

/** 50 requests that streamed 200 tokens each. */
const STREAMED: TestSeries = {
  labels: { replica: 'r0' },
  samples: { ttft: Array(50).fill(120_000), tpot: Array(50).fill(20_000), total: Array(50).fill(4e6) },
  ok: 50,
  outputTokens: 10_000,
}

/** One 5 s report of replica r0 at T0: the series (streamed requests by default) with the given signals. */
async function send(store: Store, signals: object, series: TestSeries = STREAMED): Promise<void> {
  const r = makeReport({ seq: 1, startMs: T0, series: [series] })
  await store.ingest({ ...r, series: [{ ...r.series[0]!, signals }] }, T0 + 5000)
}

async function observe(store: Store) {
  const reader = {
    histograms: store.histograms.bind(store),
    counts: store.counts.bind(store),
    signals: signalsReader(store),
  }
  const target = {
    selector: { service: 'chat' },
    slos: [],
    objective: { thresholdMs: 2000, phase: 'ttft' as const, target: 0.99 },
  }
  const opts = {
    intervalMs: 10_000,
    stepMs: 10_000,
    settleMs: 2000,
    ticks: 3,
    replicas: { ready: 1, starting: 0 },
  }
  return buildObservation(reader, target, T0 + 12_500, opts)
}

for (const dialect of testDialects())
  describe(`${dialect}: what the policy sees of servers behind the proxy alone`, () => {
    const db = useTestStore(dialect)

    it('an LLM server that reports nothing: the proxy counts stand in for its counters', async () => {
      await send(db.store, {
        gauges: { inFlight: stat(10, 22.5, 30, 25), queued: stat(0, 0, 0, 0) },
        sources: ['proxy'],
      })
      const obs = await observe(db.store)
      // Requests in flight (time-weighted) as running sequences, output tokens from the responses; the rest unknown.
      expect(obs.inFlightMean).toBe(22.5)
      expect(obs.llm).toEqual({
        running: 22.5,
        inputTokens: 0,
        outputTokens: 10_000,
        kvUsage: 0,
        preemptions: 0,
      })
    })

    it("a scraped server's own counters are kept as they are", async () => {
      await send(db.store, {
        gauges: {
          inFlight: stat(10, 22.5, 30, 25),
          running: stat(16, 16, 16, 16),
          kvCacheUsage: stat(0.4, 0.5, 0.6, 0.5),
        },
        counters: { inputTokens: 64_000, outputTokens: 9_000, preemptions: 2 },
        sources: ['proxy', 'scrape:vllm'],
      })
      const obs = await observe(db.store)
      expect(obs.llm).toEqual({
        running: 16,
        inputTokens: 64_000,
        outputTokens: 9_000,
        kvUsage: 0.5,
        preemptions: 2,
      })
    })

    it('no output tokens, no LLM counters: a batch server is not taken for an LLM', async () => {
      await send(
        db.store,
        {
          gauges: { inFlight: stat(0, 3.2, 8, 2), queued: stat(0, 0, 0, 0), busy: stat(0, 0.8, 1, 1) },
          sources: ['proxy'],
        },
        { labels: { replica: 'r0' }, samples: { total: Array(80).fill(30_000) }, ok: 80, error: 4 },
      )
      const obs = await observe(db.store)
      expect(obs.llm).toBeUndefined()
      expect(obs.inFlightMean).toBe(3.2)
      // The replica was busy 80% of the time: 4 in flight while busy.
      expect(obs.busyReplicasMean).toBe(0.8)
      expect(obs.latencyMs.service.count).toBe(0)
      // The errors are among the completions and counted apart, so the time from responses leaves them out.
      expect(obs.completed).toBe(84)
      expect(obs.errors).toBe(4)
    })
  })

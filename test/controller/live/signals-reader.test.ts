import { describe, expect, it } from 'vitest'
import { signalsReader } from '../../../controller/live/run.js'
import type { Store } from '../../../collector/index.js'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { makeReport } from '../../helpers/reports.js'

const T0 = Date.parse('2026-11-21T12:00:00Z')
const stat = (min: number, mean: number, max: number, last: number) => ({ min, mean, max, last })

async function send(store: Store, seq: number, replica: string, signals: object, model?: string) {
  const r = makeReport({
    seq,
    startMs: T0,
    series: [{ labels: { replica, ...(model !== undefined ? { model } : {}) } }],
  })
  await store.ingest({ ...r, series: [{ ...r.series[0]!, signals }] }, T0 + 5000)
}

for (const dialect of testDialects())
  describe(`${dialect}: the controller's signal summary from stored live signals`, () => {
    const db = useTestStore(dialect)
    it('sums running (or in-flight) and queued plus waiting over replicas, per class, and batch size', async () => {
      await send(db.store, 1, 'r0', {
        gauges: {
          running: stat(2, 3, 4, 4),
          waiting: stat(1, 1, 1, 1),
          batchSize: stat(4, 6, 8, 8),
          kvCacheUsage: stat(0.1, 0.2, 0.3, 0.3),
        },
        counters: { inputTokens: 640, outputTokens: 160, preemptions: 1 },
        sources: ['scrape:vllm'],
      })
      await send(db.store, 2, 'r1', {
        gauges: { inFlight: stat(5, 5, 5, 5), queued: stat(0, 2, 3, 3) },
        byClass: [
          { priorityClass: 0, queued: stat(1, 1, 1, 1) },
          { priorityClass: 2, queued: stat(2, 2, 2, 2) },
        ],
        sources: ['proxy'],
      })
      const read = signalsReader(db.store)
      expect(await read({ service: 'chat' }, { fromMs: T0, toMs: T0 + 60_000 })).toEqual({
        inFlight: { last: 9, mean: 8 },
        queued: { last: 4, mean: 3 },
        queuedByClass: [1, 0, 2],
        batchSize: { mean: 6, max: 8 },
        // The LLM server's own: running sequences (mean), tokens and preemptions in the range, mean KV use.
        llm: { running: 3, inputTokens: 640, outputTokens: 160, preemptions: 1, kvUsage: 0.2 },
      })
      expect(await read({ service: 'other' }, { fromMs: T0, toMs: T0 + 60_000 })).toBeNull()
    })

    it('counts what waits inside a server behind a proxy whose own queue is empty', async () => {
      // The load-step finding: a proxy with 255 requests in flight to a server running 16 and queueing the
      // rest itself has queued 0; the server's backlog is the queue the policy must see.
      await send(db.store, 1, 'r0', {
        gauges: {
          inFlight: stat(255, 200, 255, 255),
          queued: stat(0, 0, 0, 0),
          running: stat(16, 16, 16, 16),
          waiting: stat(239, 184, 239, 239),
        },
        sources: ['proxy', 'scrape:vllm'],
      })
      // No `waiting` from the server: the part of the proxy's in-flight it is not running waits in it.
      await send(db.store, 2, 'r1', {
        gauges: { inFlight: stat(40, 30, 40, 40), queued: stat(2, 1, 2, 2), running: stat(8, 8, 8, 8) },
        sources: ['proxy', 'scrape:vllm'],
      })
      const read = signalsReader(db.store)
      const s = await read({ service: 'chat' }, { fromMs: T0, toMs: T0 + 60_000 })
      expect(s?.inFlight).toEqual({ last: 24, mean: 24 })
      expect(s?.queued).toEqual({ last: 239 + 2 + 32, mean: 184 + 1 + 22 })
    })

    it('combines the proxy series and the scraped server series of one replica before summing', async () => {
      // The agent gives a scraped server behind its proxy the proxy's service and replica; the model label
      // differs (the proxy's is empty, the server names its model), so the replica has two series.
      await send(
        db.store,
        1,
        'r0',
        { gauges: { inFlight: stat(40, 40, 40, 40), queued: stat(3, 3, 3, 3) }, sources: ['proxy'] },
        '',
      )
      await send(
        db.store,
        2,
        'r0',
        {
          gauges: { running: stat(16, 16, 16, 16), waiting: stat(24, 24, 24, 24) },
          sources: ['scrape:vllm'],
        },
        'tailguard-mlp',
      )
      const s = await signalsReader(db.store)({ service: 'chat' }, { fromMs: T0, toMs: T0 + 60_000 })
      expect(s?.inFlight).toEqual({ last: 16, mean: 16 })
      expect(s?.queued).toEqual({ last: 27, mean: 27 })
    })
  })

import { describe, expect, it } from 'vitest'
import { createRecorder, startServingDemo } from '../../../agent/index.js'
import { assertBuilt, CLI } from '../../helpers/cli.js'

describe('serving demo', () => {
  it('replays arrivals through proxies to real model servers, and its rate changes at runtime', async () => {
    assertBuilt()
    const recorder = createRecorder()
    // 40 arrivals per second of trace time, looping.
    const arrivals = Array.from({ length: 40 }, (_, i) => ({
      offsetMs: i * 25,
      contextTokens: 300,
      generatedTokens: 4,
    }))
    const demo = await startServingDemo({
      cli: CLI,
      arrivals,
      sink: recorder,
      node: 'test',
      replicas: 1,
      hidden: 64,
    })
    try {
      demo.setRate(0)
      const before = demo.sent
      await new Promise((r) => setTimeout(r, 300))
      expect(demo.sent).toBe(before) // paused
      demo.setRate(1)
      for (let i = 0; i < 200 && demo.answered < 10; i++) await new Promise((r) => setTimeout(r, 50))
      expect(demo.answered).toBeGreaterThanOrEqual(10)
      expect(demo.rate).toBe(1)
      expect(() => demo.setRate(-1)).toThrow(/multiplier/)
      const { series } = recorder.drain()
      const s = series.find((x) => x.labels.service === 'demo-llm')!
      expect(s.labels.model).toBe('tailguard-mlp')
      expect(s.requests.ok).toBeGreaterThanOrEqual(10)
      expect(s.outputTokens).toBeGreaterThanOrEqual(40)
      for (const m of ['queue', 'network', 'ttft', 'tpot', 'total'] as const)
        expect(s.histograms[m], m).toBeTruthy()
      const sig = demo.signals()
      expect(sig).toHaveLength(1)
      expect(sig[0]!.signals.sources).toEqual(['proxy'])
      // Stopping lets the requests in flight finish (the demo's own load is not counted as cut by its client).
      demo.setRate(20)
      await new Promise((r) => setTimeout(r, 500))
      await demo.stop()
      const after = recorder.drain().series.find((x) => x.labels.service === 'demo-llm')
      expect(after?.requests.ok).toBeGreaterThan(0)
      expect(after?.requests.error).toBe(0)
    } finally {
      await demo.stop()
    }
  }, 60_000)
})

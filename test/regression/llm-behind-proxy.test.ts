import { describe, expect, it } from 'vitest'
import { tailguardPolicy } from '../../controller/index.js'
import type { FleetObservation } from '../../controller/index.js'
import { observation } from '../controller/policies/fixtures.js'

const NONE = { p50: null, p99: null, count: 0 }

/** What a proxy in front of an LLM server reports: TTFT, TPOT and e2e, but no step (kernel) time. */
const proxied = (inFlight: number): FleetObservation =>
  observation({
    intervalMs: 10_000,
    arrivalRps: { 6: 10, 10: 10, 60: 10 },
    latencyMs: {
      queue: { p50: 0, p99: 0, count: 100 },
      service: NONE,
      e2e: { p50: 150, p99: 190, count: 100 },
      ttft: { p50: 7, p99: 20, count: 100 },
      tpot: { p50: 6, p99: 7.5, count: 100 },
    },
    inFlight,
    queueDepthByClass: [0, 0],
    replicas: { ready: 2, starting: 0 },
    completed: 100,
  })

// The live demo-llm target never acted: its first observation was empty (no bucket closed yet), the policy took
// "no TTFT" for "not an LLM" for good, and then waited for a step time that a proxy never reports.
describe('tailguard policy on an LLM seen only through a proxy', () => {
  it('does not decide the replica kind on an empty first observation, and learns from TPOT', () => {
    const p = tailguardPolicy({ sloMs: 500, metric: 'ttft', minReplicas: 2, maxReplicas: 2, minFitPoints: 4 })
    let s = p.init({
      desiredReplicas: 2,
      batchWindowMs: 5,
      maxBatch: 16,
      admission: [
        { maxQueue: 256, maxConcurrency: 128 },
        { maxQueue: 256, maxConcurrency: 128 },
      ],
    })
    s = p.step(s, observation({ intervalMs: 10_000, replicas: { ready: 2, starting: 0 } }), 0).state
    expect(s.llm).toBeNull()
    const kinds: string[] = []
    for (let i = 1; i <= 6; i++) {
      const out = p.step(s, proxied(1 + (i % 3)), i * 1000)
      s = out.state
      kinds.push(...out.actions.map((a) => a.kind))
    }
    expect(s.llm).toBe(true)
    expect(s.learned.samples).toBe(6)
    expect(kinds).toContain('admission')
  })
})

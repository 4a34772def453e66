import { describe, expect, it } from 'vitest'
import { buildObservation, runSimulation } from '../../../controller/index.js'
import type { FleetObservation, PhasePercentilesMs, Policy } from '../../../controller/index.js'
import { useTestStore } from '../../helpers/test-store.js'
import { makeReport } from '../../helpers/reports.js'

const T0 = Date.parse('2026-11-23T12:00:00Z')
const INTERVAL = 10_000
/** Requests per 10 s interval. */
const PER_INTERVAL = [20, 50, 80, 30, 60, 10]
const SERVICE_MS = 5 + 0.6 // S(1) of the batch model below

function arrivalTimes(): number[] {
  const out: number[] = []
  PER_INTERVAL.forEach((n, k) => {
    for (let j = 0; j < n; j++) out.push(k * INTERVAL + 100 + Math.floor((j * 9000) / n))
  })
  return out
}

const close = (a: PhasePercentilesMs, b: PhasePercentilesMs) => {
  expect(b.count).toBe(a.count)
  for (const k of ['p50', 'p99'] as const) {
    if (a[k] === null) expect(b[k]).toBeNull()
    else expect(Math.abs(b[k]! - a[k]!)).toBeLessThanOrEqual(Math.max(0.01, a[k]! * 0.015))
  }
}

// Issue #15: the same events fed to the simulator and to the live builder give the same observation.
describe('live observation builder ≡ simulator', () => {
  const db = useTestStore('sqlite')

  it('computes rates, windows, per-phase percentiles, counts and burn rate as the simulator does', async () => {
    const times = arrivalTimes()
    const seen: Array<{ obs: FleetObservation; now: number }> = []
    const recorder: Policy<null> = {
      name: 'recorder',
      init: () => null,
      step: (s, obs, now) => (seen.push({ obs, now }), { state: s, actions: [] }),
    }
    runSimulation(
      {
        seed: 1,
        arrivals: {
          kind: 'trace',
          trace: {
            arrivalMs: Float64Array.from(times),
            inputTokens: new Int32Array(times.length).fill(10),
            outputTokens: new Int32Array(times.length).fill(10),
            startEpochMs: T0,
            durationMs: PER_INTERVAL.length * INTERVAL,
          },
        },
        replica: { kind: 'batch', service: { fixedMs: 5, perItemMs: 0.6 }, noise: { kind: 'none' } },
        initial: {
          batchWindowMs: 0,
          maxBatch: 1,
          admission: [{ maxQueue: 1000, maxConcurrency: 1000 }],
          desiredReplicas: 1,
        },
        // Every request takes 5.6 ms, over the 5 ms objective: the burn rate is 1 / (1 − 0.99) = 100.
        slo: { e2eMs: 5, objective: 0.99 },
        controlIntervalMs: INTERVAL,
      },
      recorder,
    )
    // The same requests as the agent reports them: one report per 5 s, each request with its phases.
    let seq = 1
    for (let t = 0; t < PER_INTERVAL.length * INTERVAL; t += 5000) {
      const done = times.filter((a) => a + SERVICE_MS >= t && a + SERVICE_MS < t + 5000)
      await db.store.ingest(
        makeReport({
          seq: seq++,
          startMs: T0 + t,
          series: [
            {
              labels: { service: 'chat' },
              samples: {
                total: done.map(() => SERVICE_MS * 1000),
                kernel: done.map(() => SERVICE_MS * 1000),
                queue: done.map(() => 0),
              },
              ok: done.length,
            },
          ],
        }),
        T0 + t + 5000,
      )
    }
    const compared = seen.filter((x) => x.now <= PER_INTERVAL.length * INTERVAL)
    expect(compared.length).toBeGreaterThanOrEqual(PER_INTERVAL.length - 1)
    for (const [i, { obs: sim, now }] of compared.entries()) {
      const live = await buildObservation(
        { histograms: (s, r, m) => db.store.histograms(s, r, m), counts: (s, r) => db.store.counts(s, r) },
        {
          selector: { service: 'chat' },
          slos: [],
          objective: { thresholdMs: 5, phase: 'e2e', target: 0.99 },
        },
        T0 + now + 2500,
        { intervalMs: INTERVAL, stepMs: 10_000, settleMs: 2000, ticks: i + 1, replicas: sim.replicas },
      )
      expect(live.intervalMs).toBe(sim.intervalMs)
      expect(live.arrivalRps).toEqual(sim.arrivalRps)
      expect(live.completed).toBe(sim.completed)
      expect(live.shed).toBe(sim.shed)
      expect(live.errorBudget.burnRate).toBeCloseTo(sim.errorBudget.burnRate, 9)
      for (const phase of ['queue', 'service', 'e2e', 'ttft', 'tpot'] as const)
        close(sim.latencyMs[phase], live.latencyMs[phase])
      expect(live.replicas).toEqual(sim.replicas)
    }
    // The windows really differ between intervals (so the comparison is not of constants).
    expect(new Set(compared.map((c) => c.obs.arrivalRps[60])).size).toBeGreaterThan(3)
    expect(compared[2]!.obs.arrivalRps[10]).toBe(8)
  })
})

import { describe, expect, it } from 'vitest'
import { parseAzureTrace, runSimulation, staticPolicy } from '../../../controller/index.js'
import type { Action, FleetObservation, Policy, SimConfig } from '../../../controller/index.js'

const batchFleet = (o: Partial<SimConfig> = {}): SimConfig => ({
  seed: 3,
  arrivals: { kind: 'poisson', rps: 200, durationMs: 60_000 },
  replica: { kind: 'batch', service: { fixedMs: 5, perItemMs: 0.6 }, noise: { kind: 'none' } },
  initial: { batchWindowMs: 10, maxBatch: 16, admission: [], desiredReplicas: 1 },
  slo: { e2eMs: 100 },
  ...o,
})

/** A policy that records observations and plays scripted actions at given times. */
function scripted(script: Array<[number, Action]>, seen: Array<[number, FleetObservation]>): Policy<null> {
  return {
    name: 'scripted',
    init: () => null,
    step: (s, obs, now) => {
      seen.push([now, obs])
      return { state: s, actions: script.filter(([t]) => t === now).map(([, a]) => a) }
    },
  }
}

const oneRequest = (inTok: number, outTok: number) => {
  const r = parseAzureTrace(
    `TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,${inTok},${outTok}\n`,
  )
  if (!r.ok) throw new Error(r.error.message)
  return r.trace
}

describe('dynamic batcher', () => {
  it('a batch holds the oldest request plus the Poisson arrivals of its window: mean ≈ 1 + λT', () => {
    const r = runSimulation(
      batchFleet({
        replica: { kind: 'batch', service: { fixedMs: 0.2, perItemMs: 0.01 }, noise: { kind: 'none' } },
        initial: { batchWindowMs: 10, maxBatch: 100, admission: [], desiredReplicas: 1 },
        arrivals: { kind: 'poisson', rps: 200, durationMs: 600_000 },
      }),
      staticPolicy(),
    )
    expect(Math.abs(r.meanBatchSize / 3 - 1)).toBeLessThan(0.05)
    // Nobody waits longer than the window when the replica is always free.
    expect(r.latencyMs.queue.max).toBeLessThanOrEqual(10 + 1e-9)
  })
})

describe('continuous batching (LLM)', () => {
  const llm = (o: Partial<SimConfig> = {}): SimConfig => ({
    seed: 1,
    arrivals: { kind: 'trace', trace: oneRequest(100, 10) },
    replica: {
      kind: 'llm',
      prefillMsPerToken: 0.1,
      decodeStepMs: 20,
      decodeMsPerSeq: 1,
      kvCapacityTokens: 10_000,
      noise: { kind: 'none' },
    },
    initial: { batchWindowMs: 0, maxBatch: 8, admission: [], desiredReplicas: 1 },
    slo: { e2eMs: 1000, ttftMs: 25, tpotMs: 50 },
    ...o,
  })
  it('TTFT is the prefill step; each further token costs one decode step', () => {
    const r = runSimulation(llm(), staticPolicy())
    expect(r.latencyMs.ttft!.mean).toBeCloseTo(20 + 0.1 * 100, 9)
    expect(r.latencyMs.tpot!.mean).toBeCloseTo(20 + 1, 9)
    expect(r.latencyMs.e2e.mean).toBeCloseTo(30 + 9 * 21, 9)
    // TTFT 30 ms misses its 25 ms objective: e2e and TPOT are fine, the request is not good.
    expect(r.attainment).toMatchObject({ e2e: 1, ttft: 0, tpot: 1, overall: 0 })
  })
  it('sheds requests that can never fit in the KV cache', () => {
    const r = runSimulation(
      llm({ arrivals: { kind: 'trace', trace: oneRequest(20_000, 10) } }),
      staticPolicy(),
    )
    expect(r.shedByReason.too_large).toBe(1)
    expect(r.completed).toBe(0)
  })
  it('KV capacity bounds the sequences running on a replica', () => {
    const seen: Array<[number, FleetObservation]> = []
    runSimulation(
      llm({
        arrivals: {
          kind: 'poisson',
          rps: 50,
          durationMs: 30_000,
          tokens: { meanInputTokens: 200, meanOutputTokens: 100 },
        },
        replica: {
          kind: 'llm',
          prefillMsPerToken: 0.1,
          decodeStepMs: 20,
          decodeMsPerSeq: 1,
          kvCapacityTokens: 2000,
          noise: { kind: 'none' },
        },
        initial: { batchWindowMs: 0, maxBatch: 64, admission: [], desiredReplicas: 1 },
      }),
      scripted([], seen),
    )
    // Each request reserves input + output tokens (at least 2): far fewer than 64 fit in 2,000 tokens.
    const maxInFlight = Math.max(...seen.map(([, o]) => o.inFlight))
    expect(maxInFlight).toBeGreaterThan(1)
    expect(maxInFlight).toBeLessThan(64)
    expect(Math.max(...seen.map(([, o]) => o.queueDepth))).toBeGreaterThan(0)
  })
})

describe('replicas', () => {
  it('a new replica is starting for load + warm-up, and is billed from its creation', () => {
    const seen: Array<[number, FleetObservation]> = []
    const r = runSimulation(
      batchFleet({ coldStart: { loadMs: 10_000, warmupMs: 5_000 } }),
      scripted([[1000, { kind: 'scale', desiredReplicas: 3, reason: 'test' }]], seen),
    )
    const at = (t: number) => seen.find(([now]) => now === t)![1].replicas
    expect(at(2000)).toEqual({ ready: 1, starting: 2 })
    expect(at(15_000)).toEqual({ ready: 1, starting: 2 })
    expect(at(17_000)).toEqual({ ready: 3, starting: 0 })
    expect(r.scalingActions).toBe(1)
    // One replica for the whole run, two more from t = 1 s on: starting time is billed too.
    expect(r.gpuHours).toBeCloseTo((r.durationMs + 2 * (r.durationMs - 1000)) / 3_600_000, 6)
  })
  it('never scales below the warm-pool minimum', () => {
    const seen: Array<[number, FleetObservation]> = []
    const r = runSimulation(
      batchFleet({
        warmPoolMin: 2,
        initial: { batchWindowMs: 10, maxBatch: 16, admission: [], desiredReplicas: 3 },
      }),
      scripted([[1000, { kind: 'scale', desiredReplicas: 0, reason: 'test' }]], seen),
    )
    expect(r.replicas.min).toBe(2)
  })
})

describe('admission', () => {
  const overload = (o: Partial<SimConfig>) =>
    batchFleet({ arrivals: { kind: 'poisson', rps: 3000, durationMs: 20_000 }, ...o })
  it('deadline-aware dropping sheds requests that cannot finish in time; the rest finish in time', () => {
    const r = runSimulation(overload({ deadlineMs: 60 }), staticPolicy())
    expect(r.shedByReason.deadline).toBeGreaterThan(0)
    expect(r.latencyMs.e2e.max).toBeLessThanOrEqual(60 + 1e-9)
    expect(r.completed + r.shed).toBe(r.arrived)
  })
  it('priority classes: the lower class is shed first under a per-class queue cap', () => {
    const r = runSimulation(
      overload({
        classShares: [0.5, 0.5],
        initial: {
          batchWindowMs: 10,
          maxBatch: 16,
          admission: [
            { maxQueue: 50, maxConcurrency: 1e9 },
            { maxQueue: 50, maxConcurrency: 1e9 },
          ],
          desiredReplicas: 1,
        },
      }),
      staticPolicy(),
    )
    expect(r.shedRateByClass[1]!).toBeGreaterThan(r.shedRateByClass[0]! + 0.2)
    expect(r.shedByReason.queue_full).toBe(r.shed)
  })
  it('a concurrency cap bounds requests in the system', () => {
    const seen: Array<[number, FleetObservation]> = []
    runSimulation(
      overload({
        initial: {
          batchWindowMs: 10,
          maxBatch: 16,
          admission: [{ maxQueue: 1e9, maxConcurrency: 40 }],
          desiredReplicas: 1,
        },
      }),
      scripted([], seen),
    )
    expect(Math.max(...seen.map(([, o]) => o.queueDepth + o.inFlight))).toBeLessThanOrEqual(40)
  })
})

describe('outputs', () => {
  it('goodput, attainment and violation minutes agree with each other', () => {
    const r = runSimulation(
      batchFleet({
        arrivals: {
          kind: 'step',
          steps: [
            { atMs: 0, rps: 300 },
            { atMs: 120_000, rps: 1500 },
          ],
          durationMs: 240_000,
        },
      }),
      staticPolicy(),
    )
    expect(r.goodputRps).toBeCloseTo(r.good / (r.durationMs / 1000), 9)
    expect(r.attainment.overall).toBeCloseTo(r.good / r.arrived, 12)
    // Overloaded in the second half only.
    expect(r.sloViolationMinutes).toBeGreaterThanOrEqual(1)
    expect(r.sloViolationMinutes).toBeLessThanOrEqual(3)
    expect(r.timeline.arrivals.reduce((a, b) => a + b, 0)).toBe(r.arrived)
    expect(r.timeline.good.reduce((a, b) => a + b, 0)).toBe(r.good)
  })
})

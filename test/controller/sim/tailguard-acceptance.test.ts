import { describe, expect, it } from 'vitest'
import {
  createTailguardPolicy,
  runSimulation,
  scanTraceFile,
  shippedTracePath,
  staticPolicy,
} from '../../../controller/index.js'
import type { SimConfig, SimResult } from '../../../controller/index.js'

// Issue #18's acceptance, as seeded simulator runs (the full tables and the commands that produce them are in
// docs/policy.md). Deterministic: the same seed gives the same numbers.

function azure(overrides: Partial<SimConfig> = {}, kv: 'reserve' | 'paged' = 'reserve'): SimConfig {
  const path = shippedTracePath()
  const scan = scanTraceFile(path)
  if (!scan.ok) throw new Error(scan.error.message)
  return {
    seed: 1,
    arrivals: { kind: 'trace-file', path, stats: scan.stats },
    replica: {
      kind: 'llm',
      prefillMsPerToken: 0.1,
      decodeStepMs: 25,
      decodeMsPerSeq: 0.25,
      kvCapacityTokens: 100_000,
      kv: kv === 'paged' ? { kind: 'paged', blockTokens: 16 } : { kind: 'reserve' },
      noise: { kind: 'lognormal', cv: 0.1 },
    },
    // As `tailguard sim --trace … --slo-ttft-ms 2000 --slo-p99-ms 60000`: 4 peak-provisioned replicas at start.
    initial: {
      batchWindowMs: 0,
      maxBatch: 64,
      admission: [{ maxQueue: Number.MAX_SAFE_INTEGER, maxConcurrency: Number.MAX_SAFE_INTEGER }],
      desiredReplicas: 4,
    },
    slo: { e2eMs: 60_000, ttftMs: 2000, objective: 0.99 },
    coldStart: { loadMs: 60_000, warmupMs: 30_000 },
    warmPoolMin: 1,
    maxReplicas: 256,
    classShares: [1],
    ...overrides,
  }
}

const perHour = (r: SimResult) => r.scalingActions / (r.durationMs / 3_600_000)

/** The batch model of `tailguard sim --pattern …`: S(B) = 5 + 0.6·B ms, window 10 ms, max batch 16. */
function batchModel(
  classShares: readonly number[],
  desiredReplicas: number,
): Pick<SimConfig, 'seed' | 'replica' | 'initial' | 'classShares' | 'maxReplicas'> {
  return {
    seed: 1,
    replica: {
      kind: 'batch',
      service: { fixedMs: 5, perItemMs: 0.6 },
      noise: { kind: 'lognormal', cv: 0.1 },
    },
    initial: {
      batchWindowMs: 10,
      maxBatch: 16,
      admission: classShares.map(() => ({
        maxQueue: Number.MAX_SAFE_INTEGER,
        maxConcurrency: Number.MAX_SAFE_INTEGER,
      })),
      desiredReplicas,
    },
    classShares,
    maxReplicas: 256,
  }
}

describe('tailguard on the Azure conversation trace (LLM, TTFT ≤ 2 s, 90 s cold start, seed 1)', () => {
  const cfg = azure()
  const fixed = runSimulation(cfg, staticPolicy())
  const tg = runSimulation(cfg, createTailguardPolicy(cfg))
  it('meets the objective every minute', () => {
    expect(tg.attainment.overall).toBeGreaterThanOrEqual(0.995)
    expect(tg.sloViolationMinutes).toBe(0)
  })
  it('spends at most 0.62× the GPU-hours of static peak provisioning, with ≤ 30 replica changes per hour', () => {
    // 2.31 of 3.90 GPU-hours (0.59×) on 2026-11-26 (2.39 before the second pass); issue #18's goal is 0.55×
    // (docs/policy.md says what is left).
    expect(tg.gpuHours).toBeLessThanOrEqual(0.62 * fixed.gpuHours)
    expect(perHour(tg)).toBeLessThanOrEqual(30)
  })
  it('explains every scale decision with numbers', () => {
    const scales = tg.decisions.filter((d) => / (up|down):/.test(d.reason))
    expect(scales.length).toBeGreaterThan(0)
    for (const d of scales)
      expect(d.reason).toMatch(
        /forecast [\d.]+ req\/s in 90 s .*capacity [\d.]+ req\/s\/replica at ttft p99 ≤ 2000 ms .*need \d+.*have \d+/,
      )
  })
  it('meets it with paged KV allocation too', () => {
    const paged = azure({}, 'paged')
    const r = runSimulation(paged, createTailguardPolicy(paged))
    expect(r.attainment.overall).toBeGreaterThanOrEqual(0.995)
    expect(r.sloViolationMinutes).toBe(0)
    expect(r.gpuHours).toBeLessThanOrEqual(0.7 * fixed.gpuHours)
  })
  it('stays within 98% and does not oscillate with 20% of observations missing and 5 s stale, cold start +50%', () => {
    const faulty = azure({
      coldStart: { loadMs: 60_000, warmupMs: 75_000 },
      controlIntervalMs: 5000,
      observationFaults: { missingShare: 0.2, staleMs: 5000 },
    })
    const r = runSimulation(faulty, createTailguardPolicy(faulty, { coldStartMs: 90_000 }))
    expect(r.attainment.overall).toBeGreaterThanOrEqual(0.98)
    expect(r.scalingActions).toBeLessThanOrEqual(2 * Math.max(tg.scalingActions, 1))
    expect(r.decisions.some((d) => /hold: no data/.test(d.reason))).toBe(true)
  })
})

describe('tailguard on MMPP load (batch model, 1,000 ⇄ 5,000 req/s, p99 ≤ 100 ms, 90 s cold start, seed 1)', () => {
  // As `tailguard sim --pattern mmpp --rps 2000 --duration 1800 --slo-p99-ms 100`: 7 peak-provisioned replicas.
  const cfg: SimConfig = {
    ...batchModel([1], 7),
    arrivals: { kind: 'mmpp', rps: [1000, 5000], meanDwellMs: [60_000, 20_000], durationMs: 1_800_000 },
    slo: { e2eMs: 100, objective: 0.99 },
    coldStart: { loadMs: 60_000, warmupMs: 30_000 },
    warmPoolMin: 1,
  }
  const fixed = runSimulation(cfg, staticPolicy())
  const tg = runSimulation(cfg, createTailguardPolicy(cfg))
  it('meets the objective every minute at no more than 0.7× the GPU-hours of static', () => {
    // 2.08 of 3.50 GPU-hours (0.59×) on 2026-11-26; 2.55 (0.73×) while the service tail counted the spread of
    // batch sizes twice.
    expect(tg.attainment.overall).toBeGreaterThanOrEqual(0.99)
    expect(tg.sloViolationMinutes).toBe(0)
    expect(tg.gpuHours).toBeLessThanOrEqual(0.7 * fixed.gpuHours)
  })
})

describe('tailguard with priority classes 0.2/0.8 and a 3× overload step (batch model, p99 ≤ 100 ms, seed 1)', () => {
  const cfg: SimConfig = {
    ...batchModel([0.2, 0.8], 4),
    arrivals: {
      kind: 'step',
      steps: [
        { atMs: 0, rps: 1000 },
        { atMs: 200_000, rps: 3000 },
        { atMs: 400_000, rps: 1000 },
      ],
      durationMs: 600_000,
    },
    slo: { e2eMs: 100 },
  }
  const r = runSimulation(cfg, createTailguardPolicy(cfg))
  it('keeps class 0 at ≥ 99% and sheds only class 1 while replicas start', () => {
    expect(r.attainmentByClass[0]).toBeGreaterThanOrEqual(0.99)
    expect(r.shedByClass[0]).toBe(0)
    expect(r.shedByClass[1]).toBeGreaterThan(0)
    expect(r.replicas.max).toBeGreaterThan(r.replicas.min)
  })
})

// Servers that report nothing, behind tailguard's proxy alone: the policy sees arrivals, the proxy's queue,
// requests in flight at the replicas, e2e (TTFT/TPOT when streamed) and output tokens, and no service time,
// batch sizes, busy share or LLM server counters (`tailguard sim --observe proxy`). Before 2026-11-28 it never
// learned a batch fleet's capacity this way (it held the replicas in force), and on the Azure trace it met 66.6%.
describe('tailguard through the proxy alone (seed 1)', () => {
  it('batch, diurnal 1,000 req/s ± 60%: meets the objective every minute at ≤ 0.7× the GPU-hours of static', () => {
    // As `tailguard sim --pattern diurnal --rps 1000 --duration 1800 --observe proxy`: 0.87 of 1.50 GPU-hours
    // (0.58×) on 2026-11-28 (0.92 without the proxy's count of busy upstreams); with full visibility 0.80.
    const cfg: SimConfig = {
      ...batchModel([1], 3),
      arrivals: {
        kind: 'diurnal',
        meanRps: 1000,
        amplitude: 0.6,
        periodMs: 1_800_000,
        durationMs: 1_800_000,
      },
      slo: { e2eMs: 100, objective: 0.99 },
      coldStart: { loadMs: 60_000, warmupMs: 30_000 },
      warmPoolMin: 1,
      observe: 'proxy',
    }
    const fixed = runSimulation(cfg, staticPolicy())
    const tg = runSimulation(cfg, createTailguardPolicy(cfg))
    expect(tg.attainment.overall).toBeGreaterThanOrEqual(0.99)
    expect(tg.sloViolationMinutes).toBe(0)
    expect(tg.gpuHours).toBeLessThanOrEqual(0.7 * fixed.gpuHours)
    const scales = tg.decisions.filter((d) => / (up|down):/.test(d.reason))
    expect(scales.length).toBeGreaterThan(0)
    for (const d of scales) expect(d.reason).toMatch(/req\/s\/replica \(from response times\)/)
    expect(tg.decisions.filter((d) => /tailguard batching/.test(d.reason))).toEqual([])
  })
  it('LLM, the Azure conversation trace: ≥ 99.5% within TTFT ≤ 2 s at ≤ 0.65× the GPU-hours of static', () => {
    // 99.90%, one violation minute, 2.34 of 3.90 GPU-hours (0.60×) on 2026-11-28; with full visibility 100%, 2.31.
    const cfg = azure({ observe: 'proxy' })
    const fixed = runSimulation(cfg, staticPolicy())
    const tg = runSimulation(cfg, createTailguardPolicy(cfg))
    expect(tg.attainment.overall).toBeGreaterThanOrEqual(0.995)
    expect(tg.sloViolationMinutes).toBeLessThanOrEqual(2)
    expect(tg.gpuHours).toBeLessThanOrEqual(0.65 * fixed.gpuHours)
  })
})

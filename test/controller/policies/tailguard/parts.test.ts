import { describe, expect, it } from 'vitest'
import {
  forecastArrivals,
  rateSlope,
  significantSlope,
} from '../../../../controller/policies/tailguard/forecast.js'
import {
  describeLlmPrediction,
  fewestReplicas,
  fittedModel,
  learnCapacity,
  llmStepModel,
  NOTHING_LEARNED,
  predictBatch,
  serviceTail,
} from '../../../../controller/policies/tailguard/capacity.js'
import { chooseAdmission } from '../../../../controller/policies/tailguard/admission.js'
import { checkObservation } from '../../../../controller/policies/tailguard/observation.js'
import { observation } from '../fixtures.js'
import type { FleetObservation } from '../../../../controller/index.js'

describe('forecast', () => {
  it('carries a rising long-window trend over the horizon and the half window it lags by', () => {
    const history = Array.from({ length: 121 }, (_, i) => ({ atMs: i * 1000, rps: 100 + i / 6 }))
    expect(rateSlope(history)).toBeCloseTo(1 / 6, 9)
    const f = forecastArrivals({ 6: 120, 10: 120, 60: 120 }, history, 90_000)
    expect(f.trendRpsPerMin).toBeCloseTo(10, 6)
    expect(f.rps).toBeCloseTo(120 + (1 / 6) * 120, 6)
  })
  it('ignores a trend over less than a minute and a falling one', () => {
    expect(
      rateSlope([
        { atMs: 0, rps: 1 },
        { atMs: 10_000, rps: 50 },
        { atMs: 20_000, rps: 100 },
      ]),
    ).toBe(0)
    const falling = Array.from({ length: 121 }, (_, i) => ({ atMs: i * 1000, rps: 200 - i }))
    expect(forecastArrivals({ 10: 80, 60: 80 }, falling, 90_000).rps).toBe(80)
  })
  it('takes the shortest window when it bursts to ≥ 1.5× the long one', () => {
    const f = forecastArrivals({ 6: 300, 10: 200, 60: 100 }, [], 90_000)
    expect(f.burst).toBe(3)
    expect(f.rps).toBe(300)
    expect(forecastArrivals({ 6: 140, 10: 120, 60: 100 }, [], 90_000).rps).toBe(100)
  })
  it('takes no burst from the shortest window alone: the 10 s window must show it too', () => {
    // Nine requests in 6 s at a 5 req/s trace: a cluster, over before a replica could start.
    expect(forecastArrivals({ 6: 9, 10: 6, 60: 5 }, [], 90_000).burst).toBe(1)
    expect(forecastArrivals({ 6: 9, 10: 8.5, 60: 5 }, [], 90_000).burst).toBeCloseTo(1.8, 9)
  })
  it('extrapolates only a trend that spans the horizon and rises by more than Poisson noise', () => {
    const ramp = (from: number, to: number, spanS: number) =>
      Array.from({ length: spanS + 1 }, (_, i) => ({ atMs: i * 1000, rps: from + ((to - from) * i) / spanS }))
    // 3 σ of the difference of two 60 s counts: 1.2 req/s at 5 req/s, 5.5 req/s at 100 req/s.
    expect(significantSlope(ramp(5, 5.8, 180), 5.8, 90_000)).toBe(0)
    expect(significantSlope(ramp(5, 7, 180), 7, 90_000)).toBeCloseTo(2 / 180, 9)
    expect(significantSlope(ramp(100, 116, 180), 116, 90_000)).toBeCloseTo(16 / 180, 9)
    // Sixty seconds of history are not carried 90 s ahead.
    expect(significantSlope(ramp(100, 200, 60), 200, 90_000)).toBe(0)
  })
})

describe('capacity model', () => {
  const model = { fixedMs: 5, perItemMs: 0.6 }
  it('predicts more replicas for more load and the fewest that meet the target', () => {
    const p = (r: number, rps: number) => predictBatch(model, 1, r, rps, { windowMs: 5, maxBatch: 16 }, 0.99)
    const a = fewestReplicas(
      (r) => p(r, 2000),
      (x) => x.valueMs <= 50,
      64,
    )
    const b = fewestReplicas(
      (r) => p(r, 8000),
      (x) => x.valueMs <= 50,
      64,
    )
    expect(b.replicas).toBeGreaterThan(a.replicas)
    expect(a.prediction.valueMs).toBeLessThanOrEqual(50)
    expect(a.below!.valueMs).toBeGreaterThan(50)
    // A replica saturates at 16 / 14.6 ms ≈ 1,096 req/s: 8,000 req/s need at least 8.
    expect(b.replicas).toBeGreaterThanOrEqual(8)
    // None fits: one over the maximum, with the prediction at the maximum.
    const none = fewestReplicas(
      (r) => p(r, 1e9),
      (x) => x.valueMs <= 50,
      8,
    )
    expect(none).toMatchObject({ replicas: 9, fits: false, prediction: p(8, 1e9) })
    expect(none.below).toBeUndefined()
    expect(a.fits).toBe(true)
  })
  it('trusts the S(B) fit only with enough points and R²', () => {
    const l = {
      ...NOTHING_LEARNED,
      xs: [1, 2, 4, 8, 16, 1, 2, 4],
      ys: [5.6, 6.2, 7.4, 9.8, 14.6, 5.6, 6.2, 7.4],
    }
    const f = fittedModel(l, 8, 0.5)
    expect(f.trusted).toBe(true)
    expect(f.model.fixedMs).toBeCloseTo(5, 9)
    expect(fittedModel({ ...l, xs: l.xs.slice(0, 4), ys: l.ys.slice(0, 4) }, 8, 0.5).trusted).toBe(false)
    const flat = fittedModel({ ...NOTHING_LEARNED, xs: [8, 8, 8], ys: [9, 10, 11] }, 2, 0.5)
    expect(flat.trusted).toBe(false)
    expect(flat.model).toEqual({ fixedMs: 10, perItemMs: 0 })
  })
})

describe('batch service tail', () => {
  const model = { fixedMs: 5, perItemMs: 0.6 }
  /**
   * One interval of batches of 12 on average (up to 30) whose service is S(B) = 5 + 0.6·B times lognormal noise of
   * CV 0.1 (p99 1.26× the mean): the median batch takes S(12), the batch at p99 S(21) (Poisson) times the noise.
   */
  const interval = observation({
    latencyMs: {
      queue: { p50: 1, p99: 5, count: 100 },
      service: { p50: 12.2, p99: 1.26 * 17.6, count: 100 },
      e2e: { p50: 20, p99: 40, count: 100 },
      ttft: { p50: null, p99: null, count: 0 },
      tpot: { p50: null, p99: null, count: 0 },
    },
    serviceMeanMs: 12.2,
    batchSize: { mean: 12, max: 30 },
    completed: 1200,
  })
  it('is the service p99 over S(B at p99): the spread of batch sizes is not counted twice', () => {
    // p99/p50 of the batch times is 1.82: the noise (1.26) and the spread of batch sizes (S(21)/S(12) = 1.44).
    expect(serviceTail(1.26 * 17.6, model, { mean: 12, max: 30 })).toBeCloseTo(1.26, 2)
    // The largest batch of the interval bounds the one at p99.
    expect(serviceTail(20, model, { mean: 12, max: 15 })).toBeCloseTo(20 / 14, 9)
    expect(serviceTail(5, model, { mean: 12, max: 30 })).toBe(1)
  })
  it('is learned with the trusted fit so far, and p99/p50 without one', () => {
    let withFit = NOTHING_LEARNED
    let without = NOTHING_LEARNED
    for (let i = 0; i < 60; i++) {
      withFit = learnCapacity(withFit, interval, false, { batchModel: model })
      without = learnCapacity(without, interval, false)
    }
    expect(withFit.tail).toBeCloseTo(1.26, 2)
    expect(without.tail).toBeCloseTo((1.26 * 17.6) / 12.2, 2)
  })
})

describe('a prediction in a reason', () => {
  it('gives the LLM numbers, and ∞ where the load does not fit (not Infinity or NaN)', () => {
    expect(
      describeLlmPrediction({ valueMs: 900, perReplicaRps: 4, tpotMs: 40, e2eTailMs: 12_000, running: 16 }),
    ).toBe('; TPOT 40.0 ms, e2e tail 12.0 s, 16.0 running/replica')
    expect(
      describeLlmPrediction({
        valueMs: Infinity,
        perReplicaRps: 4,
        tpotMs: 47.8,
        e2eTailMs: Infinity,
        running: 16,
      }),
    ).toBe('; TPOT 47.8 ms, e2e tail ∞ s, 16.0 running/replica')
    expect(describeLlmPrediction({ valueMs: 20, perReplicaRps: 100 })).toBe('')
  })
})

describe('LLM decode step', () => {
  /** One interval of a fleet whose decode step is 25 + 0.25·n ms, n running per replica, with ±3 ms of noise. */
  const interval = (n: number, i: number): FleetObservation => {
    const tpot = 25 + 0.25 * n + 3 * Math.sin(i * 1.7)
    return observation({
      latencyMs: {
        queue: { p50: 1, p99: 2, count: 10 },
        service: { p50: null, p99: null, count: 0 },
        e2e: { p50: 5000, p99: 9000, count: 10 },
        ttft: { p50: 100, p99: 200, count: 10 },
        tpot: { p50: tpot, p99: tpot * 1.1, count: 10 },
      },
      completed: 10,
      inFlight: n,
      llm: { running: n, inputTokens: 10_000, outputTokens: 2000, kvUsage: 0, preemptions: 0 },
    })
  }
  it('is fitted over a long memory: four minutes at a few running sequences do not tilt it', () => {
    let l = NOTHING_LEARNED
    // Five minutes between 10 and 60 running, then five minutes between 10 and 14.
    for (let i = 0; i < 300; i++) l = learnCapacity(l, interval(10 + (i % 51), i), true)
    for (let i = 300; i < 600; i++) l = learnCapacity(l, interval(10 + (i % 5), i), true)
    const m = llmStepModel(l)
    expect(m.perItemMs).toBeGreaterThan(0.2)
    expect(m.perItemMs).toBeLessThan(0.3)
    expect(m.fixedMs).toBeGreaterThan(23)
    expect(m.fixedMs).toBeLessThan(27)
  })
})

describe('LLM per-request ratios', () => {
  /** An interval of `seconds` with 5 completions per second, each generating `tokens` output tokens. */
  const interval = (seconds: number, tokens: number): FleetObservation =>
    observation({
      intervalMs: seconds * 1000,
      latencyMs: {
        queue: { p50: 1, p99: 2, count: 5 * seconds },
        service: { p50: null, p99: null, count: 0 },
        e2e: { p50: 5000, p99: 9000, count: 5 * seconds },
        ttft: { p50: 100, p99: 200, count: 5 * seconds },
        tpot: { p50: 40, p99: 44, count: 5 * seconds },
      },
      completed: 5 * seconds,
      inFlight: 30,
      llm: {
        running: 30,
        inputTokens: 5000 * seconds,
        outputTokens: 5 * seconds * tokens,
        kvUsage: 0.3,
        preemptions: 0,
      },
    })
  const after = (seconds: number, memoryMs?: number) => {
    let l = NOTHING_LEARNED
    const context = memoryMs === undefined ? {} : { workloadMemoryMs: memoryMs }
    for (let t = 0; t < 600; t += seconds) l = learnCapacity(l, interval(seconds, 200), true, context)
    return learnCapacity(l, interval(seconds, 1000), true, context).outputTokens!
  }
  it('are smoothed over the cold start, in time rather than in intervals', () => {
    // One second of answers five times as long moves tokens per request by 800 × 1 s / 90 s, not by 3% of 800 (24).
    expect(after(1)).toBeCloseTo(200 + 800 / 90, 6)
    // Five seconds of them move it five times as far.
    expect(after(5)).toBeCloseTo(200 + (800 * 5) / 90, 6)
    expect(after(1, 30_000)).toBeCloseTo(200 + 800 / 30, 6)
  })
})

describe('admission', () => {
  const base = {
    classes: 3,
    capacityRps: 1000,
    inServiceSlots: 32,
    queueBudgetMs: 50,
    deadlineMs: 90,
    queueDepth: 0,
    queueDepthByClass: [0, 0, 0],
    lowerShare: 1,
  }
  it("caps from Little's law: N = slots + capacity × queue budget, relaxed to 3N", () => {
    const c = chooseAdmission(base)
    expect(c.caps.map((x) => x.maxConcurrency)).toEqual([246, 246, 246])
    expect(c.caps[0]!.queueTimeoutMs).toBe(90)
  })
  it('names no lower classes where there is one class', () => {
    const c = chooseAdmission({ ...base, classes: 1, queueDepthByClass: [500], queueDepth: 500 })
    expect(c.reason).toMatch(/→ class 0 cap 82; drop after/)
  })
  it('halves the lower classes while the predicted wait exceeds the budget, lowest first, never to zero', () => {
    let share = 1
    const seen: number[][] = []
    for (let i = 0; i < 8; i++) {
      const c = chooseAdmission({ ...base, queueDepth: 500, lowerShare: share })
      share = c.lowerShare
      seen.push(c.caps.map((x) => x.maxConcurrency))
    }
    expect(seen[0]).toEqual([82, 41, 20])
    expect(seen.at(-1)![0]).toBe(82)
    expect(seen.at(-1)![2]).toBeGreaterThanOrEqual(1)
    const back = chooseAdmission({ ...base, lowerShare: share })
    expect(back.lowerShare).toBeCloseTo(share * 2, 9)
  })
  it('holds the share while the offered load, shed included, would refill the queue: it does not flip to relaxed', () => {
    // One replica on a 3× step: 2,900 req/s offered, half shed, 1,400 served. The queue drained this second, but
    // letting the shed half back in would queue 1.1 s of work within the next interval.
    const overload = {
      ...base,
      classes: 2,
      queueDepthByClass: [0, 10],
      queueDepth: 10,
      capacityRps: 1300,
      throughputRps: 1400,
      offeredRps: 2900,
      shedRps: 1450,
      horizonMs: 1000,
      lowerShare: 0.5,
    }
    const held = chooseAdmission(overload)
    // The share follows what is served: 1,400 of 1,450 admitted.
    expect(held.lowerShare).toBeCloseTo(0.5 * (1400 / 1450), 9)
    expect(held.caps[0]!.maxConcurrency).toBe(32 + 65)
    expect(held.reason).toMatch(/held: 2900\.0 req\/s offered would queue 1162 ms within 1 s/)
    // Once the replicas serve what is offered, it doubles back as before.
    const arrived = chooseAdmission({ ...overload, throughputRps: 3500, capacityRps: 3000 })
    expect(arrived.lowerShare).toBe(1)
  })
  it('does not hold a single class: there is no lower class to keep out, and its cap relaxes', () => {
    const one = chooseAdmission({
      ...base,
      classes: 1,
      queueDepthByClass: [10],
      queueDepth: 10,
      capacityRps: 1300,
      throughputRps: 1400,
      offeredRps: 1600,
      shedRps: 250,
      horizonMs: 1000,
      lowerShare: 0.5,
    })
    expect(one.lowerShare).toBe(1)
    expect(one.caps[0]!.maxConcurrency).toBe(3 * (32 + 65))
  })
})

describe('observation checks', () => {
  it('accepts a quiet fleet that never had traffic', () => {
    expect(checkObservation(observation(), 0)).toEqual({ ok: true })
  })
  it('names the bad field', () => {
    const r = checkObservation(observation({ completed: -1 }), 0)
    expect(r).toEqual({ ok: false, reason: 'invalid observation: completed = -1' })
    const t = checkObservation(observation({ intervalMs: 0 }), 0)
    expect(t.ok).toBe(false)
  })
})

describe('sustained trend', () => {
  it('extrapolates a ramp but not a step', async () => {
    const { sustainedSlope } = await import('../../../../controller/policies/tailguard/forecast.js')
    const ramp = Array.from({ length: 180 }, (_, i) => ({ atMs: i * 1000, rps: 100 + i }))
    expect(sustainedSlope(ramp)).toBeCloseTo(1, 6)
    // A step seen through a 60 s window: flat, a one-minute climb, flat again.
    const step = Array.from({ length: 180 }, (_, i) => ({
      atMs: i * 1000,
      rps: i < 100 ? 100 : i < 160 ? 100 + ((i - 100) / 60) * 200 : 300,
    }))
    expect(sustainedSlope(step)).toBe(0)
  })
})

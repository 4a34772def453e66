import { describe, expect, it } from 'vitest'
import {
  adaptiveWindowMs,
  batchFormationDelayMs,
  batchLatencyMs,
  maxUtilizationForPercentile,
  planCapacity,
  poissonQuantile,
} from '../../../controller/index.js'

// The worked numbers of issue #18 that the tailguard policy's building blocks must reproduce.
describe('traffic-adaptive window T = min(SLO − S, √(S/λ)), SLO 50 ms, S 25 ms', () => {
  it.each([
    [100, 15.8, 1.6],
    [500, 7.1, 3.5],
    [1000, 5.0, 5],
    [5000, 2.24, 11.2],
  ])('%d req/s: T = %f ms, mean batch %f', (rps, windowMs, meanBatch) => {
    const t = adaptiveWindowMs(50, 25, rps)
    expect(t).toBeCloseTo(windowMs, windowMs < 3 ? 2 : 1)
    expect((rps * t) / 1000).toBeCloseTo(meanBatch, 1)
  })
  it('is capped by SLO − S and is 0 without room or traffic', () => {
    expect(adaptiveWindowMs(50, 25, 0.01)).toBe(25)
    expect(adaptiveWindowMs(20, 25, 100)).toBe(0)
    expect(adaptiveWindowMs(50, 25, 0)).toBe(0)
  })
})

describe('p99 latency of a batched request', () => {
  it('500 req/s, window 10 ms, S(B) = 5 + 0.6·B: mean batch 5, p99 batch 11, p99 21.6 ms, mean 13 ms', () => {
    const r = batchLatencyMs({ fixedMs: 5, perItemMs: 0.6 }, 500, 10, 0.99)
    expect(r.meanBatch).toBe(5)
    expect(r.percentileBatch).toBe(11)
    expect(r.percentileMs).toBeCloseTo(21.6, 9)
    expect(r.meanMs).toBeCloseTo(13, 9)
  })
  it.each([
    [5, 0.99, 11],
    [5, 0.5, 5],
    [0.5, 0.99, 3],
    [0, 0.99, 0],
  ])('Poisson(%f) quantile %f = %d', (mean, p, k) => {
    expect(poissonQuantile(mean, p)).toBe(k)
  })
  it('large means use the normal approximation without underflow', () => {
    const q = poissonQuantile(10_000, 0.99)
    expect(q).toBeGreaterThan(10_000 + 2.3 * 100 - 5)
    expect(q).toBeLessThan(10_000 + 2.4 * 100)
  })
})

describe('batch-formation delay (B − 1)/(2λ)', () => {
  it.each([
    [32, 500, 31],
    [1, 500, 0],
    [11, 1000, 5],
  ])('B = %d at %d req/s waits %f ms', (b, rps, ms) => {
    expect(batchFormationDelayMs(b, rps)).toBeCloseTo(ms, 9)
  })
})

describe('capacity with redundancy: 5,000 req/s, p99 ≤ 50 ms, S = 5 ms, 1,143 req/s per GPU', () => {
  const input = {
    peakRps: 5000,
    serviceTimeMs: 5,
    replicaThroughputRps: 1143,
    targetMs: 50,
    percentile: 0.99,
  }
  it.each([
    ['ρ ≤ 0.54', () => Math.round(maxUtilizationForPercentile(5, 50, 0.99) * 100) / 100, 0.54],
    ['9 GPUs', () => planCapacity(input).replicas, 9],
    ['12 with 30% headroom', () => planCapacity({ ...input, headroom: 0.3 }).total, 12],
    [
      '12 already survives losing one',
      () => planCapacity({ ...input, headroom: 0.3, nPlusOne: true }).total,
      12,
    ],
    [
      '39.8% utilization after the loss',
      () =>
        Math.round(planCapacity({ ...input, headroom: 0.3, nPlusOne: true }).utilizationAfterLoss! * 1000) /
        10,
      39.8,
    ],
    ['9 without headroom need a 10th to survive', () => planCapacity({ ...input, nPlusOne: true }).total, 10],
  ] as const)('%s', (_name, fn, want) => {
    expect(fn()).toBe(want)
  })
})

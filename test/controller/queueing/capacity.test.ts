import { describe, expect, it } from 'vitest'
import {
  costPerMillion,
  maxUtilizationForPercentile,
  mm1MeanTimeInSystem,
  mmcMeanWait,
  mmcServersForPercentile,
  mmcUtilizationKnee,
  mmcWaitPercentile,
  planCapacity,
  utilizationKnee,
} from '../../../controller/index.js'

describe('capacity planning', () => {
  // 5,000 QPS peak, p99 ≤ 50 ms, S = 5 ms, 1,143 req/s per GPU → ρ ≤ 0.54 → 9 GPUs → 12 with 30% headroom.
  const input = {
    peakRps: 5000,
    serviceTimeMs: 5,
    replicaThroughputRps: 1143,
    targetMs: 50,
    percentile: 0.99,
  }
  it('ρ ≤ 0.54 from the M/M/1 time-in-system percentile ln(100)·S/(1−ρ) ≤ 50 ms', () => {
    const rho = maxUtilizationForPercentile(5, 50, 0.99)
    expect(rho).toBeCloseTo(1 - (Math.log(100) * 5) / 50, 12)
    expect(Math.round(rho * 100) / 100).toBe(0.54)
  })
  it('9 GPUs, 12 with 30% headroom, and 12 already survives losing one (N+1 is a survival check)', () => {
    expect(planCapacity(input).replicas).toBe(9)
    const plan = planCapacity({ ...input, headroom: 0.3 })
    expect(plan.withHeadroom).toBe(12)
    expect(plan.total).toBe(12)
    const n1 = planCapacity({ ...input, headroom: 0.3, nPlusOne: true })
    expect(n1.total).toBe(12)
    expect(n1.utilizationAfterLoss).toBeCloseTo(5000 / (11 * 1143), 6)
    expect((n1.utilizationAfterLoss! * 100).toFixed(1)).toBe('39.8')
    expect(n1.reason).toContain('12 survive losing one (39.8% utilization after the loss)')
    // Without headroom, 9 replicas at the limit do not survive a loss: N+1 adds the one they need.
    const tight = planCapacity({ ...input, nPlusOne: true })
    expect(tight.total).toBe(10)
    expect(tight.reason).toContain('N+1 → 10')
    expect(plan.reason).toContain('→ 9')
  })
  it('an unreachable target says so', () => {
    const plan = planCapacity({ ...input, targetMs: 20 })
    expect(plan.total).toBe(Infinity)
    expect(plan.reason).toContain('unreachable')
  })
  it('exact M/M/c sizing meets the target and one fewer server does not', () => {
    const c = mmcServersForPercentile(1000, 5, 20, 0.99)
    const load = 5
    expect(mmcWaitPercentile(c, load, 5, 0.99) + 5).toBeLessThanOrEqual(20)
    expect(mmcWaitPercentile(c - 1, load, 5, 0.99) + 5).toBeGreaterThan(20)
    expect(mmcServersForPercentile(1000, 30, 20, 0.99)).toBe(Infinity)
  })
})

describe('utilization knee', () => {
  it('M/M/1: the slope of 1/(1−ρ) equals the threshold at the knee', () => {
    const rho = utilizationKnee(10)
    expect(1 / (1 - rho) ** 2).toBeCloseTo(10, 9)
    const h = 1e-6
    const slope = (mm1MeanTimeInSystem(1, rho + h) - mm1MeanTimeInSystem(1, rho - h)) / (2 * h)
    expect(slope).toBeCloseTo(10, 3)
  })
  it('M/M/c: bigger pools run hotter for the same relative wait', () => {
    const knees = [1, 4, 16, 64].map((c) => mmcUtilizationKnee(c, 0.5))
    for (let i = 1; i < knees.length; i++) expect(knees[i]!).toBeGreaterThan(knees[i - 1]!)
    const c = 8
    const rho = mmcUtilizationKnee(c, 0.5)
    expect(mmcMeanWait(c, rho * c, 1)).toBeCloseTo(0.5, 6)
  })
})

describe('cost', () => {
  it.each([
    [2.5, 1000, (2.5 / 3_600_000) * 1e6],
    [3.6, 1, 1e6 * 0.001],
    [4, 0, Infinity],
  ])('$%d/h at %d units/s', (usd, rate, expected) => {
    expect(costPerMillion(usd, rate)).toBeCloseTo(expected, 9)
  })
})

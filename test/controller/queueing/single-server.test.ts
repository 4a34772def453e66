import { describe, expect, it } from 'vitest'
import {
  kingmanMeanWait,
  littlesLaw,
  md1MeanWait,
  mm1MeanTimeInSystem,
  mm1MeanWait,
  mm1TimeInSystemPercentile,
  mm1WaitPercentile,
  utilization,
} from '../../../controller/index.js'

describe("Little's law", () => {
  it('1,000 QPS × 50 ms = 50 requests in flight', () => {
    expect(littlesLaw(1000, 0.05)).toBeCloseTo(50, 10)
  })
  it.each([
    [200, 0.01, 2],
    [0, 5, 0],
    [12.5, 4, 50],
  ])('%d req/s × %d s = %d', (rate, seconds, inFlight) => {
    expect(littlesLaw(rate, seconds)).toBeCloseTo(inFlight, 10)
  })
})

describe('M/M/1', () => {
  // T = S/(1−ρ): the table of time in system as a multiple of the service time.
  it.each([
    [0.5, 2],
    [0.7, 3.3],
    [0.8, 5],
    [0.9, 10],
    [0.95, 20],
  ])('at ρ = %d the time in system is %d× the service time', (rho, multiple) => {
    const serviceMs = 5
    expect(mm1MeanTimeInSystem(serviceMs, rho) / serviceMs).toBeCloseTo(multiple, multiple === 3.3 ? 1 : 9)
  })

  it('p99 ≈ 4.6·S/(1−ρ): S = 5 ms, ρ = 0.7 → 76.7 ms', () => {
    const p99 = mm1TimeInSystemPercentile(5, 0.7, 0.99)
    expect(p99).toBeCloseTo((Math.log(100) * 5) / 0.3, 9)
    expect(p99).toBeGreaterThanOrEqual(76.7)
    expect(p99).toBeLessThan(76.8)
  })

  it('wait = time in system − service, and unstable queues are infinite', () => {
    expect(mm1MeanWait(5, 0.7)).toBeCloseTo(mm1MeanTimeInSystem(5, 0.7) - 5, 9)
    expect(mm1MeanTimeInSystem(5, 1)).toBe(Infinity)
    expect(mm1WaitPercentile(5, 1.2, 0.99)).toBe(Infinity)
  })

  it('wait percentile: zero when most requests never wait, ln(ρ/(1−p))·S/(1−ρ) otherwise', () => {
    expect(mm1WaitPercentile(5, 0.4, 0.5)).toBe(0)
    const w = mm1WaitPercentile(5, 0.7, 0.99)
    // P(Wq > w) = ρ·exp(−(1−ρ)w/S) must equal 1%.
    expect(0.7 * Math.exp((-(1 - 0.7) * w) / 5)).toBeCloseTo(0.01, 12)
  })

  it('utilization = λ·S/c', () => {
    expect(utilization(140, 5)).toBeCloseTo(0.7, 12)
    expect(utilization(1000, 5, 10)).toBeCloseTo(0.5, 12)
  })
})

describe('M/D/1 and Kingman', () => {
  it.each([0.3, 0.5, 0.8, 0.95])('at ρ = %d M/D/1 waits half as long as M/M/1', (rho) => {
    expect(md1MeanWait(5, rho)).toBeCloseTo(mm1MeanWait(5, rho) / 2, 9)
  })
  it.each([
    [1, 1, 1],
    [1, 0, 0.5],
    [0, 0, 0],
    [2, 1, 2.5],
  ])('ca = %d, cs = %d scales the M/M/1 wait by %d', (ca, cs, factor) => {
    expect(kingmanMeanWait(5, 0.6, ca, cs)).toBeCloseTo(mm1MeanWait(5, 0.6) * factor, 9)
  })
})

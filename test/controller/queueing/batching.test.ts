import { describe, expect, it } from 'vitest'
import {
  batchServiceTimeMs,
  fitBatchServiceTime,
  largestBatchWithinLatency,
  poissonBatchSizes,
  saturatedBatchThroughput,
  windowedBatchThroughput,
} from '../../../controller/index.js'

const model = { fixedMs: 5, perItemMs: 0.6 }

describe('batch service time S(B) = a + b·B', () => {
  it('evaluates the line', () => {
    expect(batchServiceTimeMs(model, 8)).toBeCloseTo(9.8, 12)
  })
  it('fits a and b from noisy observations', () => {
    const obs = [1, 2, 4, 8, 16, 32, 64].flatMap((b, i) => [
      { batchSize: b, serviceMs: 5 + 0.6 * b + (i % 2 === 0 ? 0.05 : -0.05) },
      { batchSize: b, serviceMs: 5 + 0.6 * b - (i % 2 === 0 ? 0.05 : -0.05) },
    ])
    const fit = fitBatchServiceTime(obs)!
    expect(fit.fixedMs).toBeCloseTo(5, 6)
    expect(fit.perItemMs).toBeCloseTo(0.6, 6)
    expect(fit.r2).toBeGreaterThan(0.999)
    expect(fit.observations).toBe(obs.length)
  })
  it('cannot fit a slope from one batch size', () => {
    expect(fitBatchServiceTime([{ batchSize: 4, serviceMs: 7 }])).toBeUndefined()
    expect(
      fitBatchServiceTime([
        { batchSize: 4, serviceMs: 7 },
        { batchSize: 4, serviceMs: 8 },
      ]),
    ).toBeUndefined()
  })
})

describe('windowed batch throughput B / (T + S(B))', () => {
  // The table: S(B) = 5 + 0.6·B ms, a 10 ms window.
  it.each([
    [1, 64],
    [4, 230],
    [8, 404],
    [16, 650],
    [32, 936],
  ])('B = %d → %d req/s', (b, rps) => {
    expect(Math.round(windowedBatchThroughput(model, 10, b))).toBe(rps)
  })
  it('back to back (no window) is B / S(B)', () => {
    expect(saturatedBatchThroughput(model, 8)).toBeCloseTo(8000 / 9.8, 9)
  })
})

describe('Poisson batch sizes', () => {
  it('a 10 ms window at 200 QPS is empty 13.5% of the time', () => {
    const p = poissonBatchSizes(200, 10, 8)
    expect(p[0]).toBeCloseTo(Math.exp(-2), 12)
    expect(Math.round(p[0]! * 1000) / 10).toBe(13.5)
  })
  it('sums to 1 with the tail lumped at max batch', () => {
    const p = poissonBatchSizes(1000, 10, 8)
    expect(p).toHaveLength(9)
    expect(p.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12)
    // Mean λT = 10 > 8: most of the mass is in the full-batch tail.
    expect(p[8]!).toBeGreaterThan(0.5)
  })
})

describe('largest batch within a latency budget', () => {
  it.each([
    [30, 25],
    [15.6, 1],
    [15, 0],
    [1000, 128],
  ])('budget %d ms → B = %d', (budget, b) => {
    expect(largestBatchWithinLatency(model, 10, budget, 128)).toBe(b)
  })
  it('the chosen batch meets the budget and one more does not', () => {
    const b = largestBatchWithinLatency(model, 10, 37.3)
    expect(10 + batchServiceTimeMs(model, b)).toBeLessThanOrEqual(37.3)
    expect(10 + batchServiceTimeMs(model, b + 1)).toBeGreaterThan(37.3)
  })
})

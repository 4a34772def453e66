import { describe, expect, it } from 'vitest'
import {
  bucketFractionAtOrBelow,
  costPerMillion,
  goodputPerSecond,
  gpuHourPrice,
  joulesPerToken,
} from '../../../collector/live/figures.js'

describe('worked examples (issue #14)', () => {
  it('a $4/h GPU serving 200 req/s costs $5.56 per million requests; at 800 req/s $1.39', () => {
    // $4/h ÷ 3600 s = $0.001111/s; ÷ 200 req/s = $5.556e-6 per request; × 1e6
    expect(costPerMillion(4, 1, 200)!.toFixed(2)).toBe('5.56')
    expect(costPerMillion(4, 1, 800)!.toFixed(2)).toBe('1.39')
    expect(costPerMillion(4, 1, 200)).toBeCloseTo(5.5556, 4)
  })

  it('10,000 req/s with 5% over the SLO is 9,500 req/s of goodput', () => {
    expect(goodputPerSecond(10_000, [0.95])).toBeCloseTo(9500, 9)
  })

  it('1,000 W at 912 output tokens/s is about 1.10 J per token', () => {
    expect(joulesPerToken(1000, 912)!.toFixed(2)).toBe('1.10')
  })
})

describe('edges', () => {
  it('nothing served: no cost or energy per event', () => {
    expect(costPerMillion(4, 1, 0)).toBeNull()
    expect(joulesPerToken(300, 0)).toBeNull()
  })
  it('several SLOs: the smallest good fraction; none: all of the throughput', () => {
    expect(goodputPerSecond(100, [0.99, 0.9])).toBeCloseTo(90, 9)
    expect(goodputPerSecond(100, [])).toBe(100)
  })
  it('cost scales with the GPUs held', () => {
    expect(costPerMillion(4, 8, 800)).toBeCloseTo(8 * costPerMillion(4, 1, 800)!, 9)
  })
  it.each([
    [15, 0.75],
    [10, 0.5],
    [0, 0],
    [25, 1],
    [5, 0.25],
  ])('bucket fraction at or under %d ms', (threshold, want) => {
    expect(bucketFractionAtOrBelow([10, 20], [5, 5, 0], threshold)).toBeCloseTo(want, 9)
  })
  it('prices: node, then GPU model, then the default', () => {
    const p = { gpuHourUsd: 2, byGpuModel: { H100: 4 }, byNode: { 'n-spot': 1.2 } }
    expect(gpuHourPrice(p, 'n-spot', 'H100')).toEqual({ usd: 1.2, from: 'node' })
    expect(gpuHourPrice(p, 'n1', 'H100')).toEqual({ usd: 4, from: 'gpuModel' })
    expect(gpuHourPrice(p, 'n1', 'A10G')).toEqual({ usd: 2, from: 'default' })
    expect(gpuHourPrice({ ...p, gpuHourUsd: null }, 'n1', null)).toBeNull()
  })
})

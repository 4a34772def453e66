import { describe, expect, it } from 'vitest'
import {
  allenCunneenMeanWait,
  erlangC,
  mm1MeanWait,
  mm1WaitPercentile,
  mmcMeanTimeInSystem,
  mmcMeanWait,
  mmcWaitPercentile,
} from '../../../controller/index.js'

/** Erlang C from its textbook closed form, to check the recursion against. */
function erlangCDirect(c: number, a: number): number {
  let sum = 0
  let term = 1
  for (let k = 0; k < c; k++) {
    if (k > 0) term *= a / k
    sum += term
  }
  const top = ((term * a) / c) * (c / (c - a))
  return top / (sum + top)
}

describe('Erlang C', () => {
  it.each([
    [1, 0.7],
    [2, 1],
    [4, 3],
    [10, 8],
    [50, 45],
  ])('C(%d, %d) matches the closed form', (c, a) => {
    expect(erlangC(c, a)).toBeCloseTo(erlangCDirect(c, a), 12)
  })
  it('one server: the probability of waiting is ρ', () => {
    expect(erlangC(1, 0.7)).toBeCloseTo(0.7, 12)
  })
  it('two servers at 50%: 1/3', () => {
    expect(erlangC(2, 1)).toBeCloseTo(1 / 3, 12)
  })
  it('overload waits for sure; bad server counts are NaN', () => {
    expect(erlangC(3, 3)).toBe(1)
    expect(erlangC(0, 1)).toBeNaN()
  })
})

describe('M/M/c waits', () => {
  it('one server reduces to M/M/1', () => {
    expect(mmcMeanWait(1, 0.7, 5)).toBeCloseTo(mm1MeanWait(5, 0.7), 12)
    expect(mmcWaitPercentile(1, 0.7, 5, 0.99)).toBeCloseTo(mm1WaitPercentile(5, 0.7, 0.99), 12)
    expect(mmcMeanTimeInSystem(1, 0.5, 5)).toBeCloseTo(10, 12)
  })
  it('two servers at 50%, S = 5 ms: Wq = C·S/(c−a) = 5/3 ms', () => {
    expect(mmcMeanWait(2, 1, 5)).toBeCloseTo(5 / 3, 12)
  })
  it('wait percentile solves C·exp(−(c−a)t/S) = 1 − p', () => {
    const t = mmcWaitPercentile(4, 3.2, 5, 0.99)
    expect(erlangC(4, 3.2) * Math.exp((-(4 - 3.2) * t) / 5)).toBeCloseTo(0.01, 12)
    expect(mmcWaitPercentile(8, 2, 5, 0.99)).toBe(0)
  })
  it('pooling: at the same utilization, more servers wait less', () => {
    const waits = [1, 2, 4, 8, 16].map((c) => mmcMeanWait(c, 0.8 * c, 5))
    for (let i = 1; i < waits.length; i++) expect(waits[i]!).toBeLessThan(waits[i - 1]!)
  })
  it('Allen–Cunneen scales M/M/c by (ca² + cs²)/2', () => {
    expect(allenCunneenMeanWait(4, 3, 5, 1, 1)).toBeCloseTo(mmcMeanWait(4, 3, 5), 12)
    expect(allenCunneenMeanWait(4, 3, 5, 1, 0)).toBeCloseTo(mmcMeanWait(4, 3, 5) / 2, 12)
  })
})

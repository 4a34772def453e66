import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { newHistogram } from '../../../collector/index.js'
import {
  DAY_MS,
  DEFAULT_BURN_TIERS,
  HOUR_MS,
  MINUTE_MS,
  alertTiers,
  budgetConsumedBy,
  budgetTimeMs,
  burnRate,
  countAtOrBelow,
  errorBudget,
  forecastExhaustion,
  tidyBudget,
  burnDownStepMs,
  trimToData,
  withoutFloatNoise,
} from '../../../collector/slo/math.js'
import { durationText } from '../../../collector/slo/engine.js'

describe('budget math against worked numbers', () => {
  it('99.9% over 30 days allows 43.2 minutes', () => {
    expect(budgetTimeMs(0.999, 30 * DAY_MS) / MINUTE_MS).toBeCloseTo(43.2, 9)
  })

  it.each([
    { factor: 14.4, hours: 1, share: 0.02 },
    { factor: 6, hours: 6, share: 0.05 },
    { factor: 3, hours: 24, share: 0.1 },
    { factor: 1, hours: 72, share: 0.1 },
  ])('$factor× for $hours h consumes $share of a 30-day budget', ({ factor, hours, share }) => {
    expect(budgetConsumedBy(factor, hours * HOUR_MS, 30 * DAY_MS)).toBeCloseTo(share, 12)
  })

  it.each([
    { bad: 0, total: 0, objective: 0.999, want: 0 },
    { bad: 1, total: 1000, objective: 0.999, want: 1 },
    { bad: 15, total: 1000, objective: 0.999, want: 15 },
    { bad: 5, total: 1000, objective: 0.99, want: 0.5 },
  ])('burnRate($bad, $total, $objective) = $want', ({ bad, total, objective, want }) => {
    expect(burnRate(bad, total, objective)).toBeCloseTo(want, 9)
  })

  it.each([
    { good: 1_000_000, total: 1_000_000, remaining: 1, remainingEvents: 1000 },
    { good: 999_500, total: 1_000_000, remaining: 0.5, remainingEvents: 500 },
    { good: 998_000, total: 1_000_000, remaining: -1, remainingEvents: -1000 },
  ])(
    'errorBudget: $good of $total at 99.9% leaves $remaining',
    ({ good, total, remaining, remainingEvents }) => {
      const b = errorBudget(good, total, 0.999, 30 * DAY_MS)
      expect(b.remainingRatio).toBeCloseTo(remaining, 9)
      expect(b.remainingEvents).toBeCloseTo(remainingEvents, 6)
      expect(b.totalTimeMs).toBeCloseTo(43.2 * MINUTE_MS, 6)
      expect(b.remainingTimeMs).toBeCloseTo(remaining * 43.2 * MINUTE_MS, 3)
    },
  )

  it('a steady 14.4× burn spends a full budget in 50 hours', () => {
    const f = forecastExhaustion(1, 14.4, 30 * DAY_MS, 0)
    expect(f.kind).toBe('at')
    if (f.kind === 'at') expect(f.inMs / HOUR_MS).toBeCloseTo(50, 9)
    expect(forecastExhaustion(0.5, 0, 30 * DAY_MS, 0)).toEqual({ kind: 'never' })
    expect(forecastExhaustion(-0.1, 3, 30 * DAY_MS, 0)).toEqual({ kind: 'exhausted' })
  })
})

describe('alert tiers', () => {
  it('keeps the SRE workbook windows for 30 days', () => {
    expect(alertTiers(30 * DAY_MS)).toEqual(DEFAULT_BURN_TIERS)
  })

  it.each([
    { days: 28, long: [56, 336, 1344, 4032], short: [5, 28, 112, 336] },
    { days: 7, long: [14, 84, 336, 1008], short: [1, 7, 28, 84] },
  ])('scales windows for $days days', ({ days, long, short }) => {
    const tiers = alertTiers(days * DAY_MS)
    expect(tiers.map((t) => t.longWindowMs / MINUTE_MS)).toEqual(long)
    expect(tiers.map((t) => t.shortWindowMs / MINUTE_MS)).toEqual(short)
    expect(tiers.map((t) => t.factor)).toEqual([14.4, 6, 3, 1])
  })
})

describe('good events at any threshold', () => {
  it('counts whole buckets and interpolates the straddling one', () => {
    const h = newHistogram()
    for (let v = 1; v <= 100_000; v++) h.recordValue(v * 3) // 3 µs .. 300 ms, evenly spread
    for (const thresholdUs of [187_000, 100_001, 2_999, 250_000]) {
      const exact = Math.min(100_000, Math.floor(thresholdUs / 3))
      expect(Math.abs(countAtOrBelow(h, thresholdUs) - exact) / exact).toBeLessThan(0.001)
    }
    expect(countAtOrBelow(h, 400_000)).toBe(100_000)
    expect(countAtOrBelow(newHistogram(), 1000)).toBe(0)
  })

  it('stays within 0.1% of the exact fraction (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 3_600_000_000 }), { minLength: 1, maxLength: 400 }),
        fc.integer({ min: 1, max: 3_600_000_000 }),
        (values, thresholdUs) => {
          const h = newHistogram()
          for (const v of values) h.recordValue(v)
          const got = countAtOrBelow(h, thresholdUs)
          const b = h as unknown as {
            lowestEquivalentValue(v: number): number
            highestEquivalentValue(v: number): number
          }
          // Bounds: values surely below the threshold's bucket, and values up to its top.
          const lo = values.filter((v) => v < b.lowestEquivalentValue(thresholdUs)).length
          const hi = values.filter((v) => v <= b.highestEquivalentValue(thresholdUs)).length
          expect(got).toBeGreaterThanOrEqual(lo - 1e-9)
          expect(got).toBeLessThanOrEqual(hi + 1e-9)
          // Every sample whose value is ≥ 0.1% away from the threshold is classified exactly.
          const sure = values.filter((v) => v <= thresholdUs * 0.999).length
          const maybe = values.filter((v) => v <= thresholdUs * 1.001).length
          expect(got).toBeGreaterThanOrEqual(sure - 1e-9)
          expect(got).toBeLessThanOrEqual(maybe + 1e-9)
        },
      ),
    )
  })
})

describe('countAtOrBelow edge cases', () => {
  it('counts recorded zeros and walks from either side', () => {
    const h = newHistogram()
    h.recordValueWithCount(0, 5)
    h.recordValueWithCount(10_000, 10)
    h.recordValueWithCount(3_000_000_000, 1)
    expect(countAtOrBelow(h, 9_000)).toBe(5)
    // 10 000 µs lies in the bucket [10 000, 10 007]: at its top every value counts, inside it a share does.
    expect(countAtOrBelow(h, 10_007)).toBeCloseTo(15, 9)
    expect(countAtOrBelow(h, 10_003)).toBeCloseTo(5 + 10 * (4 / 8), 9)
    expect(countAtOrBelow(h, 2_000_000_000)).toBeCloseTo(15, 9)
    const only = newHistogram()
    only.recordValueWithCount(5_000, 3)
    expect(countAtOrBelow(only, 4_000)).toBe(0)
  })
})

describe('durationText', () => {
  it.each([
    [5 * 60_000, '5m'],
    [3_600_000, '1h'],
    [3 * 86_400_000, '3d'],
    [90_000, '1.5m'],
    [336 * 60_000, '5.6h'],
    [4032 * 60_000, '2.8d'],
    [1344 * 60_000, '22h'],
    [30 * 86_400_000, '30d'],
    [70_000, '1.2m'],
    [0, '0s'],
  ])('%i ms → %s', (ms, text) => expect(durationText(ms)).toBe(text))
})

describe('withoutFloatNoise', () => {
  it('drops binary noise and keeps real figures', () => {
    expect(withoutFloatNoise((1 - 0.999) * 25_200)).toBe(25.2)
    expect(withoutFloatNoise(0.1 + 0.2)).toBe(0.3)
    expect(withoutFloatNoise(123_456.789)).toBe(123_456.789)
    expect(withoutFloatNoise(Infinity)).toBe(Infinity)
  })

  it('tidies every figure of a budget', () => {
    const b = tidyBudget(errorBudget(25_190, 25_200, 0.999, 30 * 86_400_000))
    expect(b.totalEvents).toBe(25.2)
    expect(b.consumedEvents).toBe(10)
    expect(b.remainingEvents).toBe(15.2)
  })
})

describe('burn-down zoom', () => {
  it('cuts the series to its data, keeping the last point before it', () => {
    const pts = [0, 0, 0, 5, 9].map((total, i) => ({ tMs: i, total }))
    expect(trimToData(pts).map((p) => p.tMs)).toEqual([2, 3, 4])
    expect(trimToData([{ tMs: 0, total: 3 }])).toHaveLength(1)
    expect(trimToData([{ tMs: 0, total: 0 }])).toHaveLength(1)
  })

  it('steps by the minute for minutes of data and by the hour for days', () => {
    expect(burnDownStepMs(20 * MINUTE_MS)).toBe(MINUTE_MS)
    expect(burnDownStepMs(5 * 3_600_000)).toBe(MINUTE_MS)
    expect(burnDownStepMs(7 * 3_600_000)).toBe(5 * MINUTE_MS)
    expect(burnDownStepMs(7 * 86_400_000)).toBe(3_600_000)
  })
})

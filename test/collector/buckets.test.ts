import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { bucketQuantileMs, mergeBuckets } from '../../collector/index.js'

describe('bucketQuantileMs (PromQL histogram_quantile interpolation)', () => {
  it.each([
    { bounds: [10, 20], counts: [5, 5, 0], q: 0.75, want: 15 },
    { bounds: [10, 20], counts: [5, 5, 0], q: 0.5, want: 10 },
    { bounds: [10, 20], counts: [4, 0, 0], q: 0.5, want: 5 },
    { bounds: [10, 20], counts: [0, 0, 3], q: 0.5, want: 20 }, // in +Inf: the highest finite bound
    { bounds: [10, 20], counts: [0, 0, 0], q: 0.5, want: null },
    { bounds: [], counts: [7], q: 0.5, want: null },
  ])('$counts over $bounds at q=$q → $want', ({ bounds, counts, q, want }) => {
    const got = bucketQuantileMs(bounds, counts, q)
    if (want === null) expect(got).toBeNull()
    else expect(got).toBeCloseTo(want, 9)
  })

  it('is monotone in q and stays within the bounds', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(1000), { minLength: 2, maxLength: 12 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (counts, a, b) => {
          const bounds = counts.slice(1).map((_, i) => (i + 1) * 7.5)
          const lo = bucketQuantileMs(bounds, counts, Math.min(a, b))
          const hi = bucketQuantileMs(bounds, counts, Math.max(a, b))
          if (lo === null || hi === null) return counts.every((c) => c === 0)
          return lo <= hi + 1e-9 && lo >= 0 && hi <= bounds[bounds.length - 1]!
        },
      ),
    )
  })
})

describe('mergeBuckets', () => {
  it('adds one layout bucket by bucket and keeps the dominant layout when they differ', () => {
    expect(
      mergeBuckets([
        { boundsMs: [10], counts: [1, 0], sumMs: 4 },
        { boundsMs: [10], counts: [2, 1], sumMs: 40 },
        { boundsMs: [5, 50], counts: [1, 0, 0], sumMs: 3 },
      ]),
    ).toEqual({ boundsMs: [10], counts: [3, 1], sumMs: 44, count: 4, layouts: 2, otherLayoutsCount: 1 })
    expect(mergeBuckets([])).toBeNull()
  })
})

import { describe, expect, it } from 'vitest'
import { fetchTerms, planSegments, rowCounts } from '../../../collector/store/levels.js'

const S = 10_000
const MIN = 60_000
const HOUR = 3_600_000
const STEPS = [S, MIN, HOUR]
const always = () => -Infinity

describe('planSegments', () => {
  it.each([
    ['aligned hours', 0, 2 * HOUR, [[HOUR, 0, 2 * HOUR]]],
    [
      'edges at finer levels',
      50 * MIN + 5000,
      3 * HOUR + 30_000,
      [
        [S, 50 * MIN + 10_000, 51 * MIN],
        [MIN, 51 * MIN, HOUR],
        [HOUR, HOUR, 3 * HOUR],
        [S, 3 * HOUR, 3 * HOUR + 30_000],
      ],
    ],
    ['a bucket counts when its start is in range', 1, S + 1, [[S, S, 2 * S]]],
    ['nothing inside one bucket after its start', 1, S, []],
  ] as const)('%s', (_name, from, to, want) => {
    expect(planSegments(from, to, STEPS, always).map((s) => [s.stepMs, s.fromMs, s.toMs])).toEqual(want)
  })

  it('skips levels before their retention watermark', () => {
    const available = (step: number) => (step === S ? 2 * HOUR : step === MIN ? HOUR : -Infinity)
    expect(
      planSegments(30 * MIN, 2 * HOUR + 90_000, STEPS, available).map((s) => [s.stepMs, s.fromMs, s.toMs]),
    ).toEqual([
      [HOUR, HOUR, 2 * HOUR],
      [MIN, 2 * HOUR, 2 * HOUR + MIN],
      [S, 2 * HOUR + MIN, 2 * HOUR + 90_000],
    ])
  })
})

describe('rowCounts and fetchTerms', () => {
  const segments = planSegments(50 * MIN, 2 * HOUR, STEPS, always)

  it('counts a level’s rows and finer unconsumed ones, nothing coarser', () => {
    expect(rowCounts(segments, { stepMs: HOUR, bucketMs: HOUR, consumed: true })).toBe(true)
    expect(rowCounts(segments, { stepMs: MIN, bucketMs: HOUR, consumed: true })).toBe(false)
    expect(rowCounts(segments, { stepMs: MIN, bucketMs: HOUR, consumed: false })).toBe(true)
    expect(rowCounts(segments, { stepMs: MIN, bucketMs: 55 * MIN, consumed: true })).toBe(true)
    expect(rowCounts(segments, { stepMs: HOUR, bucketMs: 0, consumed: false })).toBe(false)
    expect(rowCounts(segments, { stepMs: S, bucketMs: 2 * HOUR, consumed: false })).toBe(false)
  })

  it('reads each level once per range, never twice', () => {
    expect(fetchTerms(segments, STEPS, 16)).toEqual([
      { stepMs: S, fromMs: 50 * MIN, toMs: 2 * HOUR, unconsumedOnly: true },
      { stepMs: MIN, fromMs: 50 * MIN, toMs: HOUR, unconsumedOnly: false },
      { stepMs: MIN, fromMs: HOUR, toMs: 2 * HOUR, unconsumedOnly: true },
      { stepMs: HOUR, fromMs: HOUR, toMs: 2 * HOUR, unconsumedOnly: false },
    ])
    expect(fetchTerms(segments, STEPS, 1)[1]).toEqual({
      stepMs: MIN,
      fromMs: 50 * MIN,
      toMs: 2 * HOUR,
      unconsumedOnly: false,
    })
  })
})

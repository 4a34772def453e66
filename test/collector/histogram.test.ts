import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import {
  decodeHistogram,
  encodeHistogram,
  mergeHistograms,
  newHistogram,
  summarizeMs,
} from '../../collector/index.js'

describe('histogram codec', () => {
  it('round-trips through the compressed base64 encoding', () => {
    const h = newHistogram()
    for (let i = 1; i <= 10_000; i++) h.recordValue(i * 37)
    const back = decodeHistogram(encodeHistogram(h))
    expect(back.totalCount).toBe(10_000)
    expect(back.getValueAtPercentile(99)).toBe(h.getValueAtPercentile(99))
  })

  it('merging equals recording the union (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 3_600_000_000 }), { maxLength: 200 }),
        fc.array(fc.integer({ min: 1, max: 3_600_000_000 }), { maxLength: 200 }),
        (a, b) => {
          const ha = newHistogram()
          const hb = newHistogram()
          const all = newHistogram()
          for (const v of a) {
            ha.recordValue(v)
            all.recordValue(v)
          }
          for (const v of b) {
            hb.recordValue(v)
            all.recordValue(v)
          }
          const merged = mergeHistograms([decodeHistogram(encodeHistogram(ha)), hb])
          for (const p of [50, 90, 99, 99.9])
            expect(merged.getValueAtPercentile(p)).toBe(all.getValueAtPercentile(p))
          expect(merged.totalCount).toBe(a.length + b.length)
        },
      ),
    )
  })

  it('summarises in milliseconds', () => {
    const h = newHistogram()
    for (let i = 1; i <= 1000; i++) h.recordValue(i * 1000)
    const s = summarizeMs(h, ['0.5', '0.99'])
    expect(s.count).toBe(1000)
    expect(s.quantiles['0.5']).toBeCloseTo(500, 0)
    expect(s.quantiles['0.99']).toBeCloseTo(990, 0)
    expect(summarizeMs(null, ['0.5']).quantiles['0.5']).toBeNull()
  })
})

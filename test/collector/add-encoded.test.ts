import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { addEncoded } from '../../collector/report/histogram.js'
import { decodeHistogram, encodeHistogram, newHistogram } from '../../collector/index.js'
import { build, encodeIntoCompressedBase64 } from 'hdr-histogram-js'

describe('addEncoded', () => {
  it('adds exactly what decodeHistogram would (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 0, max: 3_600_000_000 }), { maxLength: 50 }), { maxLength: 5 }),
        (parts) => {
          const viaDecode = newHistogram()
          const direct = newHistogram()
          for (const values of parts) {
            const h = newHistogram()
            for (const v of values) h.recordValue(v)
            const wire = encodeHistogram(h)
            viaDecode.add(decodeHistogram(wire))
            addEncoded(direct, wire)
          }
          expect(encodeHistogram(direct)).toBe(encodeHistogram(viaDecode))
        },
      ),
    )
  })

  it('re-homes a histogram encoded with more significant digits', () => {
    const fine = build({ numberOfSignificantValueDigits: 5, highestTrackableValue: 3_600_000_000 })
    for (const v of [1, 123_456, 9_999_999]) fine.recordValue(v)
    const wire = encodeIntoCompressedBase64(fine)
    const direct = newHistogram()
    addEncoded(direct, wire)
    expect(encodeHistogram(direct)).toBe(encodeHistogram(decodeHistogram(wire)))
    expect(direct.totalCount).toBe(3)
  })
})

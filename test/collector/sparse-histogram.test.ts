import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { build, decodeFromCompressedBase64, encodeIntoCompressedBase64 } from 'hdr-histogram-js'
import {
  HISTOGRAM_HIGHEST_US,
  HISTOGRAM_RELATIVE_ERROR,
  decodeHistogram,
  encodeHistogram,
  inspectHistogram,
  newHistogram,
  summarizeMs,
  tryDecodeHistogram,
} from '../../collector/index.js'
import { addEncoded, checkHistogram, mergeEncoded, toHdrEncoding } from '../../collector/report/histogram.js'
import { nearestRank } from '../helpers/samples.js'
import { hdrReference } from '../helpers/hdr.js'

const hdr = hdrReference

const PERCENTILES = [0, 1, 25, 50, 90, 99, 99.9, 99.99, 100]
const microseconds = fc.array(fc.integer({ min: 0, max: 3_600_000_000 }), { minLength: 1, maxLength: 300 })

describe('sparse histogram against the HdrHistogram reference', () => {
  it('reads the HDR encoding with exactly HDR’s quantiles, min, max, mean and count (property)', () => {
    fc.assert(
      fc.property(microseconds, (values) => {
        const ref = hdr()
        for (const v of values) ref.recordValue(v)
        const wire = encodeIntoCompressedBase64(ref)
        const h = decodeHistogram(wire)
        expect(h.totalCount).toBe(ref.totalCount)
        for (const p of PERCENTILES)
          expect(h.getValueAtPercentile(p), `p${p}`).toBe(ref.getValueAtPercentile(p))
        // The library's own decode is the reference for what a stored row means.
        const decoded = decodeFromCompressedBase64(wire, 32, false)
        expect(h.maxValue).toBe(decoded.maxValue)
        expect(h.mean).toBeCloseTo(decoded.mean, 6)
      }),
    )
  })

  it('merges mixed encodings by adding counts: equal to HDR’s merge of the union (property)', () => {
    fc.assert(
      fc.property(fc.array(microseconds, { minLength: 1, maxLength: 6 }), (parts) => {
        const ref = hdr()
        const merged = newHistogram()
        parts.forEach((values, k) => {
          const part = hdr()
          for (const v of values) {
            part.recordValue(v)
            ref.recordValue(v)
          }
          // Alternate the old and the new encoding, as a store holding both does.
          const wire = encodeIntoCompressedBase64(part)
          addEncoded(merged, k % 2 === 0 ? wire : encodeHistogram(decodeHistogram(wire)))
        })
        expect(merged.totalCount).toBe(ref.totalCount)
        for (const p of PERCENTILES) expect(merged.getValueAtPercentile(p)).toBe(ref.getValueAtPercentile(p))
      }),
    )
  })

  it('mergeEncoded gives the very string of the dense merge, for mixed encodings and fractional µs (property)', () => {
    const part = fc.array(fc.double({ min: 0, max: 7_200_000_000, noNaN: true }), {
      minLength: 0,
      maxLength: 200,
    })
    fc.assert(
      fc.property(fc.array(fc.tuple(part, fc.boolean()), { minLength: 1, maxLength: 8 }), (parts) => {
        const dense = newHistogram()
        const wires = parts.map(([values, old]) => {
          const h = newHistogram()
          for (const v of values) h.recordValue(v)
          // The HDR form holds integer µs only: an old-encoding part is recorded as HDR would record it.
          if (!old) return encodeHistogram(h)
          const ref = hdr()
          for (const v of values) ref.recordValue(Math.min(Math.round(v), 3_600_000_000))
          return encodeIntoCompressedBase64(ref)
        })
        for (const w of wires) addEncoded(dense, w)
        expect(mergeEncoded(wires)).toBe(encodeHistogram(dense))
      }),
    )
    expect(() => mergeEncoded(['tgh1.' + Buffer.from([1, 5, 0]).toString('base64')])).toThrow()
  })

  it('keeps quantiles within 0.1% of the exact sample for fractional µs, sub-µs and past 1 h (property)', () => {
    const value = fc.oneof(
      fc.double({ min: 0.05, max: 100, noNaN: true }),
      fc.double({ min: 100, max: 1e6, noNaN: true }),
      fc.double({ min: 3.6e9, max: HISTOGRAM_HIGHEST_US, noNaN: true }),
    )
    fc.assert(
      fc.property(
        fc.array(value, { minLength: 1, maxLength: 300 }),
        fc.double({ min: 0.001, max: 1, noNaN: true }),
        (values, q) => {
          const h = newHistogram()
          for (const v of values) h.recordValue(v)
          const back = decodeHistogram(encodeHistogram(h))
          const exact = nearestRank(Float64Array.from(values).sort(), q)
          const got = back.getValueAtPercentile(q * 100)
          // A bucket is at most 2^-10 of its values wide; below 2 µs, buckets are one tick (1/1024 µs).
          expect(Math.abs(got - exact)).toBeLessThanOrEqual(
            Math.max(exact * HISTOGRAM_RELATIVE_ERROR, 1 / 1024) * 1.000001,
          )
        },
      ),
    )
  })

  it('encodes canonically and round-trips every count', () => {
    const h = newHistogram()
    for (let i = 0; i < 10_000; i++) h.recordValue(i * 37.25)
    h.recordValueWithCount(5 * 3.6e9, 3) // 5 h: past the old 1 h clamp
    const wire = encodeHistogram(h)
    expect(wire.startsWith('tgh1.')).toBe(true)
    const back = decodeHistogram(wire)
    expect(encodeHistogram(back)).toBe(wire)
    expect(back.totalCount).toBe(10_003)
    expect(back.maxValue / 1e6).toBeCloseTo(18_000, -1)
    expect(decodeHistogram(encodeHistogram(newHistogram())).totalCount).toBe(0)
  })

  it('converts to the HDR encoding for tools that read only that', async () => {
    const ref = hdr()
    for (let v = 1; v < 2_000_000; v = Math.ceil(v * 1.01)) ref.recordValue(v)
    const wire = encodeHistogram(decodeHistogram(encodeIntoCompressedBase64(ref)))
    const back = decodeHistogram(await toHdrEncoding(wire))
    for (const p of PERCENTILES) expect(back.getValueAtPercentile(p)).toBe(ref.getValueAtPercentile(p))
    // the same bytes as hdr-histogram-js's own encoder, and nothing left over from the call before
    expect(await toHdrEncoding(wire)).toBe(encodeIntoCompressedBase64(ref))
    const small = hdr()
    small.recordValueWithCount(250, 7)
    expect(await toHdrEncoding(encodeHistogram(decodeHistogram(encodeIntoCompressedBase64(small))))).toBe(
      encodeIntoCompressedBase64(small),
    )
  })

  it('summarises in milliseconds with HDR’s numbers for integer µs', () => {
    const h = newHistogram()
    for (let i = 1; i <= 1000; i++) h.recordValue(i * 1000)
    const s = summarizeMs(h, ['0.5', '0.99'])
    expect(s).toMatchObject({ count: 1000, min: 1, quantiles: { '0.5': 500.223, '0.99': 990.207 } })
  })
})

describe('inspectHistogram (ingest validation without a decode)', () => {
  it('accepts both encodings and reports totals', () => {
    const ref = hdr()
    for (let v = 1; v <= 500; v++) ref.recordValue(v * 100)
    const old = encodeIntoCompressedBase64(ref)
    expect(inspectHistogram(old)).toMatchObject({ ok: true, totalCount: 500, maxUs: 50_015 })
    expect(inspectHistogram(encodeHistogram(decodeHistogram(old)))).toMatchObject({
      ok: true,
      totalCount: 500,
    })
  })

  it('rejects malformed input with a reason, never throwing (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        const r = inspectHistogram(s)
        if (!r.ok) expect(r.error.length).toBeGreaterThan(0)
      }),
    )
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const r = inspectHistogram('tgh1.' + Buffer.from(bytes).toString('base64'))
        if (r.ok) expect(Number.isSafeInteger(r.totalCount)).toBe(true)
      }),
    )
    const wire = encodeHistogram(decodeHistogram(encodeIntoCompressedBase64(hdr())))
    expect(inspectHistogram(wire)).toMatchObject({ ok: true, totalCount: 0 })
    // One bucket far past 30 days; one bucket with count 0; trailing bytes.
    const far = 'tgh1.' + Buffer.from([1, 0xff, 0xff, 0x7f, 1]).toString('base64')
    expect(inspectHistogram(far)).toMatchObject({ ok: false, error: 'histogram holds values above 30 days' })
    expect(inspectHistogram('tgh1.' + Buffer.from([1, 5, 0]).toString('base64')).ok).toBe(false)
    expect(inspectHistogram('tgh1.' + Buffer.from([1, 5, 1, 9]).toString('base64')).ok).toBe(false)
    expect(inspectHistogram('HISTFAAAACB4nJNpmSzMwMDAxAABzFCaEUoz2X+AsQA').ok).toBe(false)
    expect(tryDecodeHistogram('not base64 at all!').ok).toBe(false)
  })

  it('rejects HDR histograms at fewer than 3 significant digits', () => {
    const coarse = build({ numberOfSignificantValueDigits: 2, highestTrackableValue: 3_600_000_000 })
    coarse.recordValue(1000)
    expect(inspectHistogram(encodeIntoCompressedBase64(coarse))).toMatchObject({ ok: false })
  })
})

describe('checkHistogram (ingest: canonical base64, added only when good)', () => {
  it('reads what inspectHistogram reads, for the encoder’s output of any counts (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1e9, noNaN: true }), { maxLength: 200 }), (values) => {
        const h = newHistogram()
        for (const v of values) h.recordValue(v)
        const wire = encodeHistogram(h)
        const into = newHistogram()
        expect(checkHistogram(wire, into)).toEqual(inspectHistogram(wire))
        expect(encodeHistogram(into)).toBe(wire)
      }),
    )
  })

  it('decodes base64 of any bytes exactly as Node does, and refuses what Node would skip (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), fc.nat(200), (bytes, at) => {
        const text = 'tgh1.' + Buffer.from(bytes).toString('base64')
        expect(checkHistogram(text)).toEqual(inspectHistogram(text))
        // One character Node's decoder would skip, anywhere after the prefix: refused.
        const i = 5 + (at % (text.length - 4))
        for (const bad of ['"', '\\', ',', ' ', '\n', '-', 'é'])
          expect(checkHistogram(text.slice(0, i) + bad + text.slice(i))).toMatchObject({ ok: false })
      }),
    )
  })

  it('refuses padding in the middle, a missing pad and a non-base64 HDR form, with the reason', () => {
    const h = newHistogram()
    h.recordValue(1500)
    const wire = encodeHistogram(h)
    expect(wire.endsWith('=')).toBe(true)
    expect(checkHistogram(wire.replace(/=+$/, ''))).toEqual({
      ok: false,
      error: 'histogram holds a character outside base64',
    })
    expect(checkHistogram('tgh1.AA==AAAA').ok).toBe(false)
    const ref = hdr()
    ref.recordValue(1000)
    const old = encodeIntoCompressedBase64(ref)
    expect(checkHistogram(old)).toMatchObject({ ok: true, totalCount: 1 })
    expect(checkHistogram(`${old}"`)).toMatchObject({ ok: false })
    expect(checkHistogram(` ${old}`)).toMatchObject({ ok: false })
    // Stored rows are read leniently, as before: a row without its padding still merges.
    const into = newHistogram()
    addEncoded(into, wire.replace(/=+$/, ''))
    expect(into.totalCount).toBe(1)
  })

  it('reads counts and gaps of every varint length, and refuses a histogram cut anywhere', () => {
    const h = newHistogram()
    for (const [us, n] of [
      [0.001, 1],
      [1.5, 127],
      [2.5, 128],
      [40, 16_383],
      [900, 16_384],
      [1e6, 2 ** 21],
      [3e9, 2 ** 35 + 7],
      [2e12, 2 ** 52 - 1],
    ] as const)
      h.recordValueWithCount(us, n)
    const wire = encodeHistogram(h)
    const into = newHistogram()
    expect(checkHistogram(wire, into)).toMatchObject({ ok: true, totalCount: h.totalCount, buckets: 8 })
    expect(encodeHistogram(into)).toBe(wire)
    const bytes = Buffer.from(wire.slice(5), 'base64')
    for (let cut = 1; cut < bytes.length; cut++) {
      const short = 'tgh1.' + bytes.subarray(0, cut).toString('base64')
      expect(checkHistogram(short, into), `cut at ${cut}`).toMatchObject({ ok: false })
      expect(inspectHistogram(short).ok).toBe(false)
    }
    expect(encodeHistogram(into)).toBe(wire)
  })

  it('mergeEncoded throws on a bad input and leaves nothing behind for the next merge', () => {
    const a = encodeHistogram(decodeHistogram(encodeHistogram(histogramOfUs([10, 20, 30]))))
    const b = encodeHistogram(histogramOfUs([20, 5000]))
    const bad = 'tgh1.' + Buffer.from([3, 0, 2, 0, 1, 0, 0]).toString('base64')
    expect(() => mergeEncoded([a, b, bad])).toThrow(/count 0/)
    expect(() => mergeEncoded([a, 'HISTFAAAnot'])).toThrow()
    expect(mergeEncoded([b])).toBe(b)
    expect(mergeEncoded([a, b])).toBe(encodeHistogram(histogramOfUs([10, 20, 30, 20, 5000])))
  })

  it('adds a histogram into the target only when all of it is good', () => {
    const into = newHistogram()
    into.recordValue(10)
    // Two good buckets, then a bucket with count 0.
    const bad = 'tgh1.' + Buffer.from([3, 0, 2, 0, 1, 0, 0]).toString('base64')
    expect(checkHistogram(bad, into)).toMatchObject({ ok: false, error: 'histogram bucket 2 has count 0' })
    expect(into.totalCount).toBe(1)
  })
})

function histogramOfUs(values: readonly number[]) {
  const h = newHistogram()
  for (const v of values) h.recordValue(v)
  return h
}

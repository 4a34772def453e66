// firstIllFormedString (collector/report/validate.ts): the check every report body goes through before a string
// reaches a text column. Its fast walk builds no paths, so the answer is compared with a plain recursive walk that
// names the first bad string or key in document order.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { firstIllFormedString, isWellFormedUnicode } from '../../collector/report/validate.js'

const LONE = '\ud800'

/** Reference: depth-first in document order (keys in insertion order, array items by index), path per RFC 6901. */
function reference(v: unknown, path = ''): string | null {
  if (typeof v === 'string') return isWellFormedUnicode(v) ? null : path
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const r = reference(v[i], `${path}/${i}`)
      if (r !== null) return r
    }
    return null
  }
  if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      const p = `${path}/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`
      if (!isWellFormedUnicode(k)) return p
      const r = reference(x, p)
      if (r !== null) return r
    }
  }
  return null
}

describe('firstIllFormedString', () => {
  it('is null for well-formed input, surrogate pairs included', () => {
    expect(firstIllFormedString({ a: ['x', { b: 'emoji \ud83d\ude00' }], n: 1, z: null })).toBeNull()
    expect(firstIllFormedString('plain')).toBeNull()
    expect(firstIllFormedString(42)).toBeNull()
  })

  it.each([
    [{ labels: { replica: `a${LONE}` } }, '/labels/replica'],
    [{ series: [{}, { labels: { [`k${LONE}`]: 'v' } }] }, `/series/1/labels/k${LONE}`],
    [{ 'a/b': { '~c': `\udc00` } }, '/a~1b/~0c'],
    [[0, 'ok', [LONE]], '/2/0'],
    [LONE, ''],
  ])('names the bad string or key: %j', (value, path) => {
    expect(firstIllFormedString(value)).toBe(path)
  })

  it('names the first bad one in document order when there are several', () => {
    expect(firstIllFormedString({ a: 'ok', b: [LONE, 'ok'], c: LONE })).toBe('/b/0')
  })

  it('agrees with a recursive walk on arbitrary JSON with lone surrogates mixed in', () => {
    const str = fc.oneof(fc.string(), fc.constantFrom(LONE, '\udfff', 'x\ud83dy', '\ud83d\ude00'))
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        str,
        fc.integer(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(str, tie('value'), { maxKeys: 4 }),
      ),
    })).value
    fc.assert(
      fc.property(json, (v) => {
        expect(firstIllFormedString(v)).toBe(reference(v))
      }),
      { numRuns: 2000 },
    )
  })
})

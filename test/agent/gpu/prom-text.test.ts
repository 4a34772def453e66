import { describe, expect, it } from 'vitest'
import { parsePromText } from '../../../agent/gpu/prom-text.js'

describe('parsePromText', () => {
  it('reads names, escaped label values, special values and skips timestamps and comments', () => {
    const text = [
      '# HELP x help',
      '# TYPE x gauge',
      'x{a="1",b="say \\"hi\\"\\n",c="back\\\\slash"} 1.5 1700000000000',
      'y 2',
      'z{} NaN',
      'w{le="+Inf"} +Inf',
      '',
    ].join('\n')
    const { samples, malformed } = parsePromText(text)
    expect(malformed).toBe(0)
    expect(samples[0]).toEqual({
      name: 'x',
      labels: { a: '1', b: 'say "hi"\n', c: 'back\\slash' },
      value: 1.5,
    })
    expect(samples[1]).toEqual({ name: 'y', labels: {}, value: 2 })
    expect(samples[2]!.value).toBeNaN()
    expect(samples[3]).toEqual({ name: 'w', labels: { le: '+Inf' }, value: Infinity })
  })

  it('counts malformed lines instead of throwing', () => {
    const { samples, malformed } = parsePromText('ok 1\nbad{a=1} 2\n{} 3\nnovalue{a="b"}\nok2 x\n')
    expect(samples.map((s) => s.name)).toEqual(['ok'])
    expect(malformed).toBe(4)
  })
})

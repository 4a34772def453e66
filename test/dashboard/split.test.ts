import { describe, expect, it } from 'vitest'
import type { ServiceSeries } from '../../dashboard/src/lib/api-types.js'
import { MAX_SPLIT_VALUES, splitColor, splitRows, splitValues } from '../../dashboard/src/lib/split.js'

const series = (over: Partial<ServiceSeries>): ServiceSeries => ({
  service: 'chat',
  model: 'llama',
  version: '1',
  replica: 'r0',
  node: 'n0',
  firstSeen: '2026-01-01T00:00:00.000Z',
  lastSeen: '2026-01-01T01:00:00.000Z',
  ...over,
})
const since = Date.parse('2026-01-01T00:30:00.000Z')

describe('splitValues', () => {
  it('lists the values of the label among the service’s series seen in the range, in name order', () => {
    const all = [
      series({ replica: 'r2', node: 'n1' }),
      series({ replica: 'r0' }),
      series({ replica: 'r1', node: 'n1', version: '2' }),
      series({ replica: 'old', lastSeen: '2026-01-01T00:10:00.000Z' }),
      series({ service: 'other', replica: 'x' }),
      series({ model: 'mistral', replica: 'r9' }),
    ]
    const of = { service: 'chat', model: '' }
    expect(splitValues(all, of, 'replica', since)).toEqual({ shown: ['r0', 'r1', 'r2', 'r9'], rest: [] })
    expect(splitValues(all, { ...of, model: 'llama' }, 'replica', since).shown).toEqual(['r0', 'r1', 'r2'])
    expect(splitValues(all, of, 'node', since).shown).toEqual(['n0', 'n1'])
    expect(splitValues(all, of, 'version', since).shown).toEqual(['1', '2'])
  })

  it('draws at most 12 values and names the rest', () => {
    const all = Array.from({ length: 15 }, (_, i) => series({ replica: `r${String(i).padStart(2, '0')}` }))
    const v = splitValues(all, { service: 'chat', model: '' }, 'replica', since)
    expect(v.shown).toHaveLength(MAX_SPLIT_VALUES)
    expect(v.rest).toEqual(['r12', 'r13', 'r14'])
  })
})

describe('splitRows', () => {
  it('puts each series’ field side by side per time, null where a series has no value', () => {
    const rows = splitRows(
      [
        [
          { tMs: 0, p99: 10 },
          { tMs: 60, p99: null },
        ],
        [
          { tMs: 60, p99: 30 },
          { tMs: 120, p99: 40 },
        ],
      ],
      'p99',
    )
    expect(rows).toEqual([
      { tMs: 0, s0: 10, s1: null },
      { tMs: 60, s0: null, s1: 30 },
      { tMs: 120, s0: null, s1: 40 },
    ])
  })

  it('gives 12 distinct colours', () => {
    expect(new Set(Array.from({ length: 12 }, (_, i) => splitColor(i))).size).toBe(12)
  })
})

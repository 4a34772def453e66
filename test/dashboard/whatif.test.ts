import { describe, expect, it } from 'vitest'
import { chartRows, coincideNotes, legendNames, lineDashes } from '../../dashboard/src/lib/whatif.js'

const answer = {
  coincide: [['static', 'aimd', 'hpa']],
  timeline: {
    minute: [0, 1],
    series: [
      { policy: 'static', replicas: [2, 2], p99Ms: [10, null] },
      { policy: 'tailguard', replicas: [1, 3], p99Ms: [12, 9] },
    ],
  },
}

describe('what-if transforms', () => {
  it('names coinciding policies after the first of their group', () => {
    expect(coincideNotes(answer)).toEqual(['aimd = hpa = static'])
    expect(legendNames(answer, ['static', 'aimd', 'hpa', 'tailguard'])).toEqual({
      static: 'static',
      aimd: 'aimd (= static)',
      hpa: 'hpa (= static)',
      tailguard: 'tailguard',
    })
  })

  it('dashes every coinciding line but the first, each differently; lone lines stay solid', () => {
    const d = lineDashes(answer)
    expect(d.static).toBeUndefined()
    expect(d.aimd).toBeDefined()
    expect(d.hpa).toBeDefined()
    expect(d.aimd).not.toBe(d.hpa)
    expect(d.tailguard).toBeUndefined()
  })

  it('turns the timeline into one chart row per minute, gaps kept as null', () => {
    expect(chartRows(answer, 'replicas')).toEqual([
      { minute: 0, static: 2, tailguard: 1 },
      { minute: 1, static: 2, tailguard: 3 },
    ])
    expect(chartRows(answer, 'p99Ms')[1]).toEqual({ minute: 1, static: null, tailguard: 9 })
  })
})

import { describe, expect, it } from 'vitest'
import { METRICS } from '../../collector/index.js'
import { phaseColor, quantileColor } from '../../dashboard/src/lib/colors.js'
import { QUANTILE_CHOICES } from '../../dashboard/src/lib/time-range.js'
import { UNATTRIBUTED } from '../../dashboard/src/lib/transforms.js'

const HEX = /^#[0-9a-f]{6}$/

describe('phaseColor', () => {
  it('gives every metric of the phase model its own colour', () => {
    const colors = [...METRICS, UNATTRIBUTED].map(phaseColor)
    for (const c of colors) expect(c).toMatch(HEX)
    expect(new Set(colors).size).toBe(colors.length)
  })

  it('gives unknown names a stable colour', () => {
    expect(phaseColor('custom_phase')).toMatch(HEX)
    expect(phaseColor('custom_phase')).toBe(phaseColor('custom_phase'))
  })
})

describe('quantileColor', () => {
  it('gives every quantile the picker offers its own colour', () => {
    const colors = QUANTILE_CHOICES.map(quantileColor)
    for (const c of colors) expect(c).toMatch(HEX)
    expect(new Set(colors).size).toBe(colors.length)
  })
})

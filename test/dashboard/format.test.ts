import { describe, expect, it } from 'vitest'
import {
  formatAgo,
  formatAxisTime,
  formatCount,
  formatMs,
  formatPercent,
  formatRate,
  quantileLabel,
} from '../../dashboard/src/lib/format.js'

describe('formatMs', () => {
  it.each([
    [0, '0 ms'],
    [0.42, '420 µs'],
    [0.0015, '1.5 µs'],
    [1, '1 ms'],
    [12.345, '12.3 ms'],
    [999.4, '999 ms'],
    [1234, '1.23 s'],
    [59_999, '60 s'],
    [90_000, '1.5 min'],
  ])('%s ms → %s', (ms, text) => expect(formatMs(ms)).toBe(text))

  it('shows a dash for missing values', () => {
    expect(formatMs(null)).toBe('–')
    expect(formatMs(undefined)).toBe('–')
    expect(formatMs(Number.NaN)).toBe('–')
  })
})

describe('formatRate, formatPercent, formatCount', () => {
  it('formats rates per second, and slow rates per minute', () => {
    expect(formatRate(12.345)).toBe('12.3/s')
    expect(formatRate(0.05)).toBe('3/min')
    expect(formatRate(0)).toBe('0/s')
    expect(formatRate(null)).toBe('–')
  })
  it('formats ratios as percentages', () => {
    expect(formatPercent(0.0123)).toBe('1.23%')
    expect(formatPercent(1)).toBe('100%')
    expect(formatPercent(0)).toBe('0%')
    expect(formatPercent(null)).toBe('–')
  })
  it('groups thousands with thin spaces', () => {
    expect(formatCount(1_234_567)).toBe('1\u2009234\u2009567')
    expect(formatCount(999)).toBe('999')
    expect(formatCount(-1000)).toBe('-1\u2009000')
  })
})

describe('formatAgo and formatAxisTime', () => {
  const now = Date.parse('2026-01-02T00:00:00Z')
  it.each([
    [2_000, 'just now'],
    [42_000, '42 s ago'],
    [5 * 60_000 + 10_000, '5 min ago'],
    [3 * 3_600_000, '3 h ago'],
    [2 * 86_400_000 + 1, '2 d ago'],
  ])('%s ms before now → %s', (agoMs, text) => expect(formatAgo(now - agoMs, now)).toBe(text))

  it('shows seconds over short spans, HH:MM within a day and the date beyond', () => {
    const t = Date.parse('2026-03-04T05:06:07Z')
    expect(formatAxisTime(t, 5 * 60_000)).toBe('05:06:07')
    expect(formatAxisTime(t, 3_600_000)).toBe('05:06')
    expect(formatAxisTime(t, 7 * 86_400_000)).toBe('03-04 05:06')
  })
})

describe('quantileLabel', () => {
  it.each([
    ['0.5', 'p50'],
    ['0.9', 'p90'],
    ['0.99', 'p99'],
    ['0.999', 'p99.9'],
    ['0.9999', 'p99.99'],
    ['1', 'p100'],
  ])('%s → %s', (q, label) => expect(quantileLabel(q)).toBe(label))
})

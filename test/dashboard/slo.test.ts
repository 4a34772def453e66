import { describe, expect, it } from 'vitest'
import {
  activeAlerts,
  budgetBar,
  burnDownDomain,
  burnDownTicks,
  burnDownRows,
  burnRateRows,
  forecastText,
  formatBurnRate,
  formatObjective,
  formatSli,
  formatSpan,
  selectorText,
  sliText,
  sloState,
  tierRows,
} from '../../dashboard/src/lib/slo.js'
import { sloStatus, sloTier } from '../helpers/slo-status.js'
import { formatRoute, parseRoute } from '../../dashboard/src/lib/route.js'

describe('SLO formatting', () => {
  it('keeps every digit of an objective and five of an SLI', () => {
    expect(formatObjective(0.999)).toBe('99.9%')
    expect(formatObjective(0.9995)).toBe('99.95%')
    expect(formatObjective(0.99)).toBe('99%')
    expect(formatSli(0.99952)).toBe('99.952%')
    expect(formatSli(0.999)).toBe('99.9%')
    expect(formatSli(null)).toBe('–')
  })

  it('formats burn rates and budget time spans', () => {
    expect(formatBurnRate(14.4)).toBe('14.4×')
    expect(formatBurnRate(0.123456)).toBe('0.123×')
    expect(formatBurnRate(0)).toBe('0×')
    expect(formatBurnRate(undefined)).toBe('–')
    expect(formatSpan(2_592_000)).toBe('43.2 min')
    expect(formatSpan(30 * 86_400_000)).toBe('30 d')
    expect(formatSpan(90 * 60_000)).toBe('1.5 h')
    expect(formatSpan(-120_000)).toBe('-2 min')
    expect(formatSpan(1500)).toBe('1.5 s')
  })

  it('describes what an SLO measures and over which series', () => {
    expect(sliText({ kind: 'latency', thresholdMs: 187, phase: 'total' })).toBe('latency ≤ 187 ms (total)')
    expect(sliText({ kind: 'llm', thresholdMs: 500, phase: 'ttft' })).toBe('ttft ≤ 500 ms')
    expect(sliText({ kind: 'availability', thresholdMs: null, phase: null })).toBe('availability')
    expect(selectorText({ service: 'chat', model: 'llama' })).toBe('service=chat, model=llama')
    expect(selectorText({})).toBe('all series')
  })
})

describe('budgetBar', () => {
  it('draws the API’s remaining ratio, clamped to the bar, with a tone', () => {
    expect(budgetBar(0.52)).toEqual({ widthPct: 52, label: '52%', tone: 'ok' })
    expect(budgetBar(0.1)).toEqual({ widthPct: 10, label: '10%', tone: 'warn' })
    expect(budgetBar(0)).toEqual({ widthPct: 0, label: '0%', tone: 'bad' })
    expect(budgetBar(-9)).toEqual({ widthPct: 0, label: '-900%', tone: 'bad' })
    expect(budgetBar(1)).toEqual({ widthPct: 100, label: '100%', tone: 'ok' })
    expect(budgetBar(null)).toEqual({ widthPct: 0, label: '–', tone: 'none' })
  })
})

describe('alerts and tiers', () => {
  it('lists the alerts that are not inactive, firing first and pages before tickets', () => {
    const s = sloStatus({
      alerts: [
        sloTier({ tier: 'ticket-1d', severity: 'ticket', state: 'firing' }),
        sloTier({ tier: 'page-6h', state: 'pending' }),
        sloTier({ tier: 'page-1h', state: 'firing' }),
        sloTier({ tier: 'ticket-3d', severity: 'ticket', state: 'inactive' }),
      ],
    })
    expect(activeAlerts(s).map((a) => `${a.state} ${a.tier}`)).toEqual([
      'firing page-1h',
      'firing ticket-1d',
      'pending page-6h',
    ])
    expect(sloState(s)).toBe('firing')
    expect(sloState(sloStatus())).toBe('ok')
    expect(sloState(sloStatus({ sli: null }))).toBe('no-data')
    expect(sloState(sloStatus({ alerts: [sloTier({ state: 'silenced' })] }))).toBe('silenced')
    expect(sloState(sloStatus({ alerts: [sloTier({ state: 'resolved' })] }))).toBe('ok')
  })

  it('marks which window of a tier burns above its factor, without recomputing the rates', () => {
    const rows = tierRows(sloStatus({ alerts: [sloTier({ longBurnRate: 20, shortBurnRate: 14.4 })] }))
    expect(rows[0]).toMatchObject({ longBurnRate: 20, shortBurnRate: 14.4, longOver: true, shortOver: false })
    expect(burnRateRows(sloStatus())).toEqual([
      { tier: 'page-1h', label: 'page-1h (1h / 5m)', long: 0.5, short: 0.5, factor: 14.4 },
      { tier: 'page-6h', label: 'page-6h (6h / 30m)', long: 0.5, short: 0.5, factor: 6 },
      { tier: 'ticket-1d', label: 'ticket-1d (1d / 2h)', long: 0.5, short: 0.5, factor: 3 },
    ])
  })
})

describe('burn-down and forecast', () => {
  it('turns the hourly series into sorted percent rows and widens the axis when overspent', () => {
    const rows = burnDownRows({
      burnDown: [
        { t: '2026-01-01T02:00:00.000Z', remainingRatio: -0.25 },
        { t: '2026-01-01T01:00:00.000Z', remainingRatio: 0.5 },
        { t: 'not a time', remainingRatio: 1 },
      ],
    })
    expect(rows).toEqual([
      { tMs: Date.parse('2026-01-01T01:00:00.000Z'), remainingPct: 50 },
      { tMs: Date.parse('2026-01-01T02:00:00.000Z'), remainingPct: -25 },
    ])
    expect(burnDownDomain(rows)).toEqual([-25, 100])
    expect(burnDownDomain([{ tMs: 0, remainingPct: 40 }])).toEqual([0, 100])
    expect(burnDownDomain([])).toEqual([0, 100])
  })

  it('puts even y ticks through 0 and 100 (not 100/84/54/24/-6%)', () => {
    const domain = burnDownDomain([{ tMs: 0, remainingPct: -6 }])
    expect(domain).toEqual([-25, 100])
    expect(burnDownTicks(domain)).toEqual([-25, 0, 25, 50, 75, 100])
    expect(burnDownTicks([0, 100])).toEqual([0, 25, 50, 75, 100])
    expect(burnDownTicks(burnDownDomain([{ tMs: 0, remainingPct: -130 }]))).toEqual([
      -150, -100, -50, 0, 50, 100,
    ])
  })

  it('says when the budget runs out', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(forecastText({ state: 'at', exhaustedAt: '2026-01-03T00:00:00.000Z' }, now)).toBe(
      'Runs out 2026-01-03 00:00 UTC (in 2 d) at the last hour’s burn rate',
    )
    expect(forecastText({ state: 'exhausted', exhaustedAt: null }, now)).toBe('Budget exhausted')
    expect(forecastText({ state: 'never', exhaustedAt: null }, now)).toBe(
      'Lasts the window at the last hour’s burn rate',
    )
    expect(forecastText({ state: 'unknown', exhaustedAt: null }, now)).toBe('Not evaluated yet')
  })
})

describe('SLO routes', () => {
  it('reads and writes the SLO list and detail routes', () => {
    expect(parseRoute('#/slos')).toEqual({ page: 'slos' })
    expect(parseRoute('#/slos/')).toEqual({ page: 'slos' })
    expect(parseRoute('#/slos/chat-latency')).toEqual({ page: 'slo', name: 'chat-latency' })
    expect(parseRoute('#/slos/%E0%A4%A')).toEqual({ page: 'slos' })
    expect(formatRoute({ page: 'slos' })).toBe('#/slos')
    expect(formatRoute({ page: 'slo', name: 'a b' })).toBe('#/slos/a%20b')
    expect(parseRoute(formatRoute({ page: 'slo', name: 'chat.v2_x-y' }))).toEqual({
      page: 'slo',
      name: 'chat.v2_x-y',
    })
  })
})

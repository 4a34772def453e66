import { describe, expect, it } from 'vitest'
import type {
  BreakdownResponse,
  LatencySummary,
  ServiceSeries,
  TimeseriesResponse,
} from '../../dashboard/src/lib/api-types.js'
import {
  NO_DATA,
  UNATTRIBUTED,
  emptyRangeText,
  groupServices,
  hasTimeseriesData,
  phaseTableRows,
  quantileKey,
  requestStats,
  dataSeconds,
  phaseSummary,
  shareBar,
  timeseriesRows,
} from '../../dashboard/src/lib/transforms.js'

const summary = (
  count: number,
  mean: number | null,
  q: Record<string, number | null> = {},
): LatencySummary => ({
  count,
  min: mean,
  max: mean,
  mean,
  quantiles: q,
})

function breakdown(over: Partial<BreakdownResponse> = {}): BreakdownResponse {
  return {
    from: '2026-01-01T00:00:00.000Z',
    to: '2026-01-01T00:01:40.000Z',
    total: summary(100, 40, { '0.5': 35, '0.99': 90 }),
    phases: [
      { ...summary(100, 10, { '0.5': 8, '0.99': 30 }), phase: 'queue', share: 0.25 },
      { ...summary(100, 20, { '0.5': 19, '0.99': 40 }), phase: 'kernel', share: 0.5 },
      { ...summary(0, null), phase: 'h2d', share: 0 },
      { ...summary(100, 30, { '0.5': 25, '0.99': 60 }), phase: 'ttft', share: null },
    ],
    requests: { ok: 90, error: 8, shed: 2, errorClasses: { timeout: 8 }, outputTokens: 0 },
    ...over,
  }
}

describe('quantileKey', () => {
  it('gives dot-free keys recharts can read', () => {
    for (const q of ['0.5', '0.99', '0.999', '0.9999']) expect(quantileKey(q)).not.toContain('.')
    expect(quantileKey('0.999')).toBe('p99_9')
    expect(quantileKey('0.5')).toBe('p50')
  })
})

describe('timeseriesRows', () => {
  const at = (iso: string) => Date.parse(iso)
  const ts: Pick<TimeseriesResponse, 'from' | 'to' | 'stepMs' | 'quantiles' | 'points'> = {
    from: '2026-01-01T00:00:00.000Z',
    to: '2026-01-01T00:00:40.000Z',
    stepMs: 10_000,
    quantiles: ['0.5', '0.999'],
    points: [
      {
        t: '2026-01-01T00:00:20.000Z',
        count: 0,
        ratePerSecond: 0,
        quantiles: { '0.5': null, '0.999': null },
      },
      {
        t: '2026-01-01T00:00:10.000Z',
        count: 5,
        ratePerSecond: 0.5,
        quantiles: { '0.5': 12.5, '0.999': 80 },
      },
    ],
  }

  it('gives one row per bucket of the range, sorted by time, keyed by quantile', () => {
    const rows = timeseriesRows(ts)
    expect(rows.map((r) => r.tMs)).toEqual([
      at('2026-01-01T00:00:00.000Z'),
      at('2026-01-01T00:00:10.000Z'),
      at('2026-01-01T00:00:20.000Z'),
      at('2026-01-01T00:00:30.000Z'),
    ])
    expect(rows[1]).toMatchObject({ count: 5, ratePerSecond: 0.5, p50: 12.5, p99_9: 80 })
  })

  it('fills buckets the collector left out with zero counts and null quantiles, so lines break', () => {
    const rows = timeseriesRows(ts)
    for (const i of [0, 2, 3])
      expect(rows[i]).toMatchObject({ count: 0, ratePerSecond: 0, p50: null, p99_9: null })
  })

  it('aligns filled buckets to the step, as the store does', () => {
    const rows = timeseriesRows({ ...ts, from: '2026-01-01T00:00:05.000Z', points: [] })
    expect(rows.map((r) => r.tMs % 10_000)).toEqual([0, 0, 0, 0])
    expect(rows[0]!.tMs).toBe(at('2026-01-01T00:00:00.000Z'))
  })

  it('does not fill a range past the row limit', () => {
    const rows = timeseriesRows({ ...ts, to: '2026-02-01T00:00:00.000Z', stepMs: 1000 })
    expect(rows).toHaveLength(2)
  })

  it('turns a missing quantile into null', () => {
    const rows = timeseriesRows({
      ...ts,
      quantiles: ['0.9'],
      points: [{ t: '2026-01-01T00:00:00Z', count: 1, ratePerSecond: 0.1, quantiles: {} }],
    })
    expect(rows[0]!.p90).toBeNull()
  })

  it('reports whether any bucket has requests', () => {
    expect(hasTimeseriesData(ts)).toBe(true)
    expect(hasTimeseriesData({ points: [] })).toBe(false)
    expect(hasTimeseriesData({ points: [ts.points[0]!] })).toBe(false)
  })
})

describe('shareBar', () => {
  it('stacks the phases with a share and adds the unattributed rest', () => {
    const bar = shareBar(breakdown())
    expect(bar.segments.map((s) => s.phase)).toEqual(['queue', 'kernel', UNATTRIBUTED])
    const rest = bar.segments[2]!
    expect(rest.share).toBeCloseTo(0.25, 10)
    expect(rest.meanMs).toBeNull()
    expect(bar.row).toEqual({ name: 'share', queue: 25, kernel: 50, [UNATTRIBUTED]: 25 })
  })

  it('adds no rest when the phases cover the total, and does not rescale overlapping phases', () => {
    const full = shareBar(
      breakdown({
        phases: [
          { ...summary(1, 1), phase: 'prefill', share: 0.4 },
          { ...summary(1, 1), phase: 'decode', share: 0.6 },
          { ...summary(1, 1), phase: 'kernel', share: 0.5 },
        ],
      }),
    )
    expect(full.segments.map((s) => s.phase)).toEqual(['prefill', 'decode', 'kernel'])
    const sum = full.segments.reduce((a, s) => a + s.share, 0)
    expect(sum).toBeCloseTo(1.5, 10)
  })

  it('is empty without phase shares', () => {
    const bar = shareBar({ phases: [{ ...summary(3, 5), phase: 'ttft', share: null }] })
    expect(bar.segments).toEqual([])
    expect(bar.row).toEqual({ name: 'share' })
  })
})

describe('phaseTableRows', () => {
  it('lists total first, then phases with data, with their quantiles', () => {
    const rows = phaseTableRows(breakdown())
    expect(rows.map((r) => r.phase)).toEqual(['total', 'queue', 'kernel', 'ttft'])
    expect(rows[0]).toMatchObject({ count: 100, meanMs: 40, share: 1, quantiles: { '0.99': 90 } })
    expect(rows[3]!.share).toBeNull()
  })

  it('is empty when nothing was recorded', () => {
    expect(phaseTableRows({ total: summary(0, null), phases: [] })).toEqual([])
  })
})

describe('requestStats', () => {
  it('computes rate, error rate and shed rate over the range', () => {
    const s = requestStats(breakdown())
    expect(s.total).toBe(100)
    expect(s.ratePerSecond).toBeCloseTo(1, 10)
    expect(s.errorRate).toBeCloseTo(0.08, 10)
    expect(s.shedRate).toBeCloseTo(0.02, 10)
  })

  it('falls back to the histogram count without outcome counts', () => {
    const s = requestStats(
      breakdown({ requests: { ok: 0, error: 0, shed: 0, errorClasses: {}, outputTokens: 0 } }),
    )
    expect(s.total).toBe(100)
    expect(s.errorRate).toBeNull()
    expect(s.shedRate).toBeNull()
  })

  it('gives a zero rate for an empty range', () => {
    const s = requestStats(breakdown({ to: '2026-01-01T00:00:00.000Z' }))
    expect(s.ratePerSecond).toBe(0)
  })
})

describe('groupServices', () => {
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

  it('folds replicas, nodes and versions into one entry per service and model', () => {
    const groups = groupServices([
      series({ replica: 'r1', version: '2', lastSeen: '2026-01-01T02:00:00.000Z' }),
      series({ service: 'embed', model: 'e5' }),
      series({ firstSeen: '2025-12-31T00:00:00.000Z' }),
      series({ replica: 'r0', node: 'n1' }),
      series({ model: 'mistral' }),
    ])
    expect(groups.map((g) => `${g.service}/${g.model}`)).toEqual(['chat/llama', 'chat/mistral', 'embed/e5'])
    const chat = groups[0]!
    expect(chat.versions).toEqual(['1', '2'])
    expect(chat.replicas).toBe(3)
    expect(chat.nodes).toBe(2)
    expect(chat.firstSeenMs).toBe(Date.parse('2025-12-31T00:00:00.000Z'))
    expect(chat.lastSeenMs).toBe(Date.parse('2026-01-01T02:00:00.000Z'))
  })

  it('is empty for no series', () => {
    expect(groupServices([])).toEqual([])
  })
})

describe('emptyRangeText', () => {
  const now = Date.parse('2026-01-01T12:00:00.000Z')
  it('says when a service that went quiet last reported', () => {
    const text = emptyRangeText(now - 3 * 3_600_000, now, 3_600_000)
    expect(text.startsWith(NO_DATA)).toBe(true)
    expect(text).toContain('3 h ago')
  })
  it('says only "no data" when the service reported within the range or is unknown', () => {
    expect(emptyRangeText(now - 60_000, now, 3_600_000)).toBe(NO_DATA)
    expect(emptyRangeText(null, now, 3_600_000)).toBe(NO_DATA)
  })
})

describe('rates over the time with data', () => {
  const point = (t: string, count: number) => ({ t, count, ratePerSecond: count / 10, quantiles: {} })
  const ts = {
    from: '2026-01-01T00:00:00.000Z',
    to: '2026-01-01T01:00:00.000Z',
    stepMs: 10_000,
    quantiles: [],
    points: [point('2026-01-01T00:50:00.000Z', 4000), point('2026-01-01T00:59:50.000Z', 4000)],
  }

  it('covers from the first bucket with data to the last one, cut at the range end', () => {
    expect(dataSeconds(ts)).toBe(600)
    expect(dataSeconds({ ...ts, to: '2026-01-01T00:59:55.000Z' })).toBe(595)
    expect(dataSeconds({ ...ts, points: [point('2026-01-01T00:10:00.000Z', 0)] })).toBeNull()
  })

  it('divides the request count by the covered time, not the whole range', () => {
    const b = breakdown({ from: ts.from, to: ts.to })
    expect(requestStats(b).ratePerSecond).toBeCloseTo(100 / 3600, 10)
    expect(requestStats(b, dataSeconds(ts)).ratePerSecond).toBeCloseTo(100 / 600, 10)
    expect(requestStats(b, null).ratePerSecond).toBeCloseTo(100 / 3600, 10)
  })

  it('leaves the still-filling last bucket out of the rate line', () => {
    const rows = timeseriesRows({ ...ts, to: '2026-01-01T00:59:55.000Z' })
    expect(rows.at(-1)).toMatchObject({ count: 4000, ratePerSecond: null })
    expect(rows.at(-2)!.ratePerSecond).toBe(0)
    expect(timeseriesRows(ts).at(-1)!.ratePerSecond).toBe(400)
  })
})

describe('phaseSummary', () => {
  it('gives the picked phase, the total for total, and null for a phase without data', () => {
    expect(phaseSummary(breakdown(), 'ttft')?.quantiles['0.99']).toBe(60)
    expect(phaseSummary(breakdown(), 'total')?.quantiles['0.99']).toBe(90)
    expect(phaseSummary(breakdown(), 'prefill')).toBeNull()
  })
})

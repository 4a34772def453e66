// The cached bucket series against brute-force sums over the raw 10 s buckets, across hour boundaries,
// windows longer than the fine span, and reports that arrive late.
import { describe, expect, it } from 'vitest'
import { SloSeries } from '../../../collector/slo/series.js'
import { FunctionSource, GRID_MS } from './helpers.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const T = Date.UTC(2026, 6, 1)

/** Bad events vary by hour (so a wrong hour would show) but are even within each hour. */
const counts = (t: number) => {
  const bad = Math.floor(t / HOUR) % 7
  return { ok: 100 - bad, error: bad, shed: 0 }
}

function brute(fromMs: number, toMs: number) {
  let good = 0
  let total = 0
  for (let t = Math.ceil(fromMs / GRID_MS) * GRID_MS; t < toMs; t += GRID_MS) {
    const c = counts(t)
    good += c.ok
    total += c.ok + c.error
  }
  return { good, total }
}

describe('SloSeries', () => {
  it('sums any window like the raw buckets, as time advances minute by minute', async () => {
    const source = new FunctionSource(counts)
    const series = new SloSeries({}, { kind: 'availability', shedIsBad: true }, { kind: 'occurrences' })
    for (let end = T; end <= T + 3 * HOUR; end += 7 * MIN) {
      await series.advance(source, end, 30 * DAY)
      expect(series.endMs).toBe(end)
      for (const w of [5 * MIN, HOUR, 6 * HOUR, DAY, 3 * DAY, 30 * DAY]) {
        const got = series.sum(end - w, end)
        const want = brute(end - w, end)
        // Windows longer than the fine span take a pro-rata share of their first hour, exact here because
        // counts are even within each hour.
        expect(got.total).toBeCloseTo(want.total, 6)
        expect(got.good).toBeCloseTo(want.good, 6)
      }
    }
  })

  it('counts reports that arrive within the settle window after a bucket was first read', async () => {
    const late = new Map<number, number>()
    const source = new FunctionSource((t) => ({ ok: 100 + (late.get(t) ?? 0), error: 0, shed: 0 }))
    const series = new SloSeries({}, { kind: 'availability', shedIsBad: true }, { kind: 'occurrences' })
    await series.advance(source, T, 7 * DAY)
    const before = series.sum(T - 5 * MIN, T).total
    late.set(T - 30_000, 50) // a report for the last minute arrives after the cycle read it
    await series.advance(source, T + MIN, 7 * DAY)
    expect(series.sum(T - 5 * MIN, T).total).toBe(before + 50)
  })

  it('reads only new buckets once warm', async () => {
    const source = new FunctionSource(counts)
    const series = new SloSeries({}, { kind: 'availability', shedIsBad: true }, { kind: 'occurrences' })
    await series.advance(source, T, 30 * DAY)
    const reads = source.reads
    await series.advance(source, T + MIN, 30 * DAY)
    expect(source.reads - reads).toBe(1)
  })
})

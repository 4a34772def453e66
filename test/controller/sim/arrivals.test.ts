import { describe, expect, it } from 'vitest'
import { createArrivals, EventHeap } from '../../../controller/index.js'
import type { ArrivalSpec } from '../../../controller/index.js'

function collect(spec: ArrivalSpec, seed = 1): number[] {
  const src = createArrivals(spec, seed)
  const d = { timeMs: 0, inputTokens: 0, outputTokens: 0 }
  const out: number[] = []
  while (src.next(d)) out.push(d.timeMs)
  return out
}

describe('synthetic arrivals', () => {
  it('Poisson: the count over an hour is within 3σ of λT, and times increase', () => {
    const t = collect({ kind: 'poisson', rps: 50, durationMs: 3_600_000 })
    expect(Math.abs(t.length - 180_000)).toBeLessThan(3 * Math.sqrt(180_000))
    expect(t.every((x, i) => i === 0 || x >= t[i - 1]!)).toBe(true)
  })
  it('seeded: same seed same stream, other seed other stream', () => {
    const spec: ArrivalSpec = { kind: 'mmpp', rps: [10, 100], meanDwellMs: [5000, 2000], maxRequests: 500 }
    expect(collect(spec, 4)).toEqual(collect(spec, 4))
    expect(collect(spec, 5)).not.toEqual(collect(spec, 4))
  })
  it('step: the rate triples in the middle third', () => {
    const t = collect({
      kind: 'step',
      steps: [
        { atMs: 0, rps: 100 },
        { atMs: 60_000, rps: 300 },
        { atMs: 120_000, rps: 100 },
      ],
      durationMs: 180_000,
    })
    const thirds = [0, 1, 2].map((k) => t.filter((x) => x >= k * 60_000 && x < (k + 1) * 60_000).length)
    expect(thirds[1]! / thirds[0]!).toBeGreaterThan(2.7)
    expect(thirds[1]! / thirds[2]!).toBeLessThan(3.3)
  })
  it('diurnal: the peak half-cycle carries more load than the trough', () => {
    const t = collect({
      kind: 'diurnal',
      meanRps: 100,
      amplitude: 0.6,
      periodMs: 600_000,
      durationMs: 600_000,
    })
    const middle = t.filter((x) => x >= 150_000 && x < 450_000).length
    expect(middle / (t.length - middle)).toBeGreaterThan(2)
    expect(Math.abs(t.length - 60_000)).toBeLessThan(3 * Math.sqrt(60_000))
  })
  it('MMPP: the long-run rate is the dwell-weighted mean', () => {
    const t = collect({ kind: 'mmpp', rps: [50, 250], meanDwellMs: [6000, 2000], durationMs: 2_000_000 })
    const rate = t.length / 2000
    expect(Math.abs(rate / 100 - 1)).toBeLessThan(0.1)
  })
})

describe('event heap', () => {
  it('pops in time order, ties in insertion order, and grows', () => {
    const h = new EventHeap(2)
    const times = [5, 1, 3, 3, 9, 0, 3]
    times.forEach((t, i) => h.push(t, 1, i, 0))
    const out: Array<[number, number]> = []
    while (h.size > 0) out.push([h.pop(), h.id])
    expect(out).toEqual([
      [0, 5],
      [1, 1],
      [3, 2],
      [3, 3],
      [3, 6],
      [5, 0],
      [9, 4],
    ])
    expect(h.peekTime()).toBe(Infinity)
  })
})

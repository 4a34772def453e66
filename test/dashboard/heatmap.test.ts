import { describe, expect, it } from 'vitest'
import { heatColor, heatLegend, heatmapCells, labelledBands } from '../../dashboard/src/lib/heatmap.js'
import type { HeatmapResponse } from '../../dashboard/src/lib/heatmap.js'
import { chartsWithData, telemetryRows } from '../../dashboard/src/lib/gpu-telemetry.js'
import { gpuKey } from '../../dashboard/src/lib/gpu-transforms.js'
import type { GpuTimeseriesResponse } from '../../dashboard/src/lib/gpu-types.js'

const T0 = '2026-11-23T12:00:00.000Z'
const T1 = '2026-11-23T12:01:00.000Z'

const RES: HeatmapResponse = {
  from: T0,
  to: T1,
  phase: 'total',
  stepMs: 60_000,
  bandsPerDecade: 2,
  bands: [
    { lowMs: 1, highMs: 3.16 },
    { lowMs: 3.16, highMs: 10 },
  ],
  maxCount: 100,
  points: [
    { t: T0, count: 110, counts: [100, 10] },
    { t: T1, count: 1, counts: [0, 1] },
  ],
}

describe('heatmapCells', () => {
  it('gives one cell per step and band with samples, with its share of the step', () => {
    const cells = heatmapCells(RES)
    expect(cells.map((c) => [c.tMs, c.band, c.count, c.lowMs, c.highMs])).toEqual([
      [Date.parse(T0), 0, 100, 1, 3.16],
      [Date.parse(T0), 1, 10, 3.16, 10],
      [Date.parse(T1), 1, 1, 3.16, 10],
    ])
    expect(cells.map((c) => c.share)).toEqual([100 / 110, 10 / 110, 1])
    expect(cells[0]!.color).toBe(heatColor(100, 100))
  })
  it('is empty without points', () => {
    expect(heatmapCells({ ...RES, points: [], bands: [], maxCount: 0 })).toEqual([])
  })
})

describe('heatColor', () => {
  it('runs from the first ramp stop at one sample to the last at the maximum, on a log scale', () => {
    expect(heatColor(1, 1000)).toBe('#440154')
    expect(heatColor(1000, 1000)).toBe('#fde725')
    // 10 of 100 is half way on a log scale: the middle stop.
    expect(heatColor(10, 100)).toBe('#21918c')
    expect(heatColor(1, 1)).toBe('#fde725')
  })
})

describe('heatLegend', () => {
  it('spaces its stops like the colours, without repeats', () => {
    expect(heatLegend(1000, 4).map((s) => s.count)).toEqual([1, 10, 100, 1000])
    expect(heatLegend(2, 5).map((s) => s.count)).toEqual([1, 2])
    expect(heatLegend(0)).toEqual([])
    expect(heatLegend(1000, 4)[3]!.color).toBe('#fde725')
  })
})

describe('labelledBands', () => {
  it('labels every band when rows are tall enough, fewer when not', () => {
    expect(labelledBands(3, 1)).toEqual([0, 1, 2])
    expect(labelledBands(20, 4)).toEqual([0, 4, 8, 12, 16])
    expect(labelledBands(0, 1)).toEqual([])
  })
})

const GPU = { node: 'n0', uuid: 'GPU-1', index: 0, name: 'H100', mig: null, source: 'nvml' } as const
const series = (field: string, points: Array<[string, number]>): GpuTimeseriesResponse =>
  ({
    from: T0,
    to: T1,
    field,
    stepMs: 60_000,
    gpus: [{ ...GPU, points: points.map(([t, mean]) => ({ t, min: mean, mean, max: mean, last: mean })) }],
  }) as unknown as GpuTimeseriesResponse

describe('telemetryRows and chartsWithData', () => {
  const key = gpuKey(GPU as never)
  it('joins fields on time with nulls for gaps, and keeps only the charts with data', () => {
    const rows = telemetryRows(
      {
        powerW: series('powerW', [
          [T1, 300],
          [T0, 250],
        ]),
        temperatureC: series('temperatureC', [[T1, 70]]),
        smClockMhz: null,
        tensorActivePct: series('tensorActivePct', []),
      },
      key,
    )
    expect(rows).toEqual([
      { tMs: Date.parse(T0), powerW: 250, temperatureC: null, smClockMhz: null, tensorActivePct: null },
      { tMs: Date.parse(T1), powerW: 300, temperatureC: 70, smClockMhz: null, tensorActivePct: null },
    ])
    expect(chartsWithData(rows).map((c) => [c.chart, c.fields.map((f) => f.field)])).toEqual([
      ['gpu-power', ['powerW']],
      ['gpu-temperature', ['temperatureC']],
    ])
  })
  it('has no rows and no charts for another GPU', () => {
    const rows = telemetryRows({ powerW: series('powerW', [[T0, 1]]) }, 'n1/GPU-9/-/nvml')
    expect(rows).toEqual([])
    expect(chartsWithData(rows)).toEqual([])
  })
})

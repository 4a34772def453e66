import { describe, expect, it } from 'vitest'
import {
  formatBytes,
  formatUnit,
  gpuChartRows,
  gpuEventRows,
  gpuKey,
  gpuLabel,
  gpuProcessRows,
  gpuTableRows,
  migLabel,
} from '../../dashboard/src/lib/gpu-transforms.js'
import type { GpuInfo, GpusResponse, GpuTimeseriesResponse } from '../../dashboard/src/lib/gpu-types.js'
import { formatRoute, parseRoute } from '../../dashboard/src/lib/route.js'

const stat = (last: number, mean = last) => ({
  min: Math.min(last, mean),
  mean,
  max: Math.max(last, mean),
  last,
})
const CHAT = { service: 'chat', model: 'llama', version: '3', replica: 'r0' }

function gpu(over: Partial<GpuInfo> = {}): GpuInfo {
  return {
    node: 'n0',
    uuid: 'GPU-1',
    index: 0,
    name: 'NVIDIA H100 80GB HBM3',
    pciBusId: '00000000:01:00.0',
    source: 'nvml',
    mig: null,
    firstSeen: '2026-11-21T11:00:00.000Z',
    lastSeen: '2026-11-21T12:00:00.000Z',
    lastReport: '2026-11-21T12:00:00.000Z',
    samples: 5,
    fields: {
      gpuUtilPct: stat(93, 80),
      memUsedBytes: stat(12 * 1024 ** 3),
      memTotalBytes: stat(80 * 1024 ** 3),
      powerW: stat(412.5),
      temperatureC: stat(64),
      smClockMhz: stat(1980),
      memClockMhz: stat(2619),
    },
    clockEventReasonsSeen: ['sw_power_cap'],
    unsupported: [],
    events: [],
    processes: [],
    ...over,
  }
}

const MIG = gpu({
  uuid: 'GPU-2',
  index: 1,
  mig: { gpuInstanceId: 3, computeInstanceId: 0, uuid: 'MIG-x', profile: '1g.10gb' },
  fields: { gpuUtilPct: stat(10) },
  clockEventReasonsSeen: [],
})

describe('GPU transforms', () => {
  it('names GPUs and MIG instances', () => {
    expect(gpuLabel(gpu())).toBe('GPU 0')
    expect(gpuLabel(MIG)).toBe('GPU 1 · MIG 3/0 (1g.10gb)')
    expect(migLabel(null)).toBe('–')
    expect(migLabel({ gpuInstanceId: 2, computeInstanceId: null, uuid: null, profile: null })).toBe('MIG 2')
    expect(gpuKey(gpu())).not.toBe(gpuKey(MIG))
    expect(gpuKey(gpu())).not.toBe(gpuKey(gpu({ source: 'dcgm' })))
  })

  it('formats bytes and units, with a dash for missing values', () => {
    expect(formatBytes(12 * 1024 ** 3)).toBe('12 GiB')
    expect(formatBytes(1.5 * 1024 ** 2)).toBe('1.5 MiB')
    expect(formatBytes(null)).toBe('–')
    expect(formatUnit(412.5, 'W')).toBe('413 W')
    expect(formatUnit(93, '%')).toBe('93%')
    expect(formatUnit(2619, 'MHz')).toBe('2619 MHz')
    expect(formatUnit(1.234, 'W')).toBe('1.23 W')
    expect(formatUnit(undefined, 'MHz')).toBe('–')
  })

  it('builds inventory rows from the newest state', () => {
    const [a, b] = gpuTableRows({ gpus: [gpu(), MIG] })
    expect(a).toMatchObject({
      node: 'n0',
      label: 'GPU 0',
      mig: '–',
      utilPct: 93,
      utilMeanPct: 80,
      memUsedBytes: 12 * 1024 ** 3,
      memRatio: 12 / 80,
      powerW: 412.5,
      temperatureC: 64,
      smClockMhz: 1980,
      memClockMhz: 2619,
      throttleReasons: ['sw_power_cap'],
      lastSeenMs: Date.parse('2026-11-21T12:00:00.000Z'),
    })
    expect(b).toMatchObject({
      mig: 'MIG 3/0 (1g.10gb)',
      utilPct: 10,
      memUsedBytes: null,
      memRatio: null,
      powerW: null,
    })
  })

  it('joins utilization and memory series per GPU, leaving gaps as null', () => {
    const ident = {
      node: 'n0',
      uuid: 'GPU-1',
      index: 0,
      name: null,
      pciBusId: null,
      source: 'nvml',
      mig: null,
    }
    const p = (t: string, v: number) => ({ t, min: v / 2, mean: v, max: v * 2, last: v })
    const util: GpuTimeseriesResponse = {
      from: '',
      to: '',
      field: 'gpuUtilPct',
      stepMs: 60_000,
      gpus: [{ ...ident, points: [p('2026-11-21T12:00:00Z', 40), p('2026-11-21T12:01:00Z', 45)] }],
    }
    const mem: GpuTimeseriesResponse = {
      ...util,
      field: 'memUsedBytes',
      gpus: [
        {
          ...ident,
          points: [p('2026-11-21T12:01:00Z', 2 * 1024 ** 3), p('2026-11-21T12:02:00Z', 1024 ** 3)],
        },
      ],
    }
    const t = Date.parse('2026-11-21T12:00:00Z')
    expect(gpuChartRows(util, mem, gpuKey(ident))).toEqual([
      { tMs: t, utilPct: 40, utilMaxPct: 80, memUsedGiB: null },
      { tMs: t + 60_000, utilPct: 45, utilMaxPct: 90, memUsedGiB: 4 },
      { tMs: t + 120_000, utilPct: null, utilMaxPct: null, memUsedGiB: 2 },
    ])
    expect(gpuChartRows(util, null, gpuKey(MIG))).toEqual([])
    expect(gpuChartRows(null, null, gpuKey(ident))).toEqual([])
  })

  it('lists events newest first with XID numbers', () => {
    const ev = (time: string, kind: string, xid: number | null) => ({
      ...gpu(),
      time,
      kind,
      xid,
      data: null,
      message: kind === 'xid' ? 'GPU has fallen off the bus' : null,
    })
    const rows = gpuEventRows({
      gpus: [
        gpu({ events: [ev('2026-11-21T11:50:00Z', 'xid', 79)] }),
        { ...MIG, events: [ev('2026-11-21T11:55:00Z', 'ecc_double_bit', null)] },
      ],
    })
    expect(rows.map((r) => [r.gpu, r.what, r.message])).toEqual([
      ['GPU 1 · MIG 3/0 (1g.10gb)', 'ecc_double_bit', ''],
      ['GPU 0', 'XID 79', 'GPU has fallen off the bus'],
    ])
  })

  it('lists processes with their replica and the replica’s latency', () => {
    const proc = (pid: number, replica: typeof CHAT | null) => ({
      pid,
      gpuInstanceId: null,
      usedMemoryBytes: stat(10e9),
      smUtilPct: stat(60, 55),
      memUtilPct: null,
      replica,
      podUid: replica ? null : 'pod-uid-1',
      containerId: null,
    })
    const r: GpusResponse = {
      gpus: [gpu({ processes: [proc(99, null), proc(4242, CHAT)] })],
      replicas: [
        {
          ...CHAT,
          node: 'n0',
          gpus: [{ uuid: 'GPU-1', index: 0, mig: null }],
          pids: [4242],
          usedMemoryBytes: 10e9,
          smUtilPct: 55,
          latency: { window: '5m', count: 20, p50Ms: 31, p99Ms: 250 },
        },
      ],
    }
    expect(
      gpuProcessRows(r).map((p) => [p.pid, p.replica, p.smUtilPct, p.p50Ms, p.p99Ms, p.container]),
    ).toEqual([
      [99, null, 55, null, null, 'pod-uid-1'],
      [4242, 'chat/llama@3 r0', 55, 31, 250, null],
    ])
  })

  it('routes #/gpus with its range', () => {
    expect(parseRoute('#/gpus')).toEqual({ page: 'gpus', range: '1h' })
    expect(parseRoute('#/gpus?range=6h')).toEqual({ page: 'gpus', range: '6h' })
    expect(parseRoute('#/gpus?range=bogus')).toEqual({ page: 'gpus', range: '1h' })
    expect(formatRoute({ page: 'gpus', range: '1h' })).toBe('#/gpus')
    expect(formatRoute({ page: 'gpus', range: '24h' })).toBe('#/gpus?range=24h')
  })
})

import { Value } from '@sinclair/typebox/value'
import { describe, expect, it } from 'vitest'
import { GpuReportItemSchema } from '../../../collector/index.js'
import { MAX_EVENTS_PER_GPU, createGpuFold } from '../../../agent/gpu/fold.js'
import type { GpuReading } from '../../../agent/gpu/types.js'

const reading = (
  timeMs: number,
  util: number,
  power: number,
  reasons: number,
  pidMem: number,
): GpuReading => ({
  source: 'nvml',
  timeMs,
  devices: [
    {
      uuid: 'GPU-a',
      index: 0,
      name: 'H100',
      values: { gpuUtilPct: util, powerW: power, clockEventReasons: reasons },
    },
    {
      uuid: 'GPU-a',
      index: 0,
      mig: { gpuInstanceId: 3, computeInstanceId: 0 },
      values: { memUsedBytes: pidMem },
    },
  ],
  processes: [
    { uuid: 'GPU-a', index: 0, pid: 10, usedMemoryBytes: pidMem, smUtilPct: util / 2, gpuInstanceId: 3 },
  ],
})

describe('GPU interval fold', () => {
  it('keeps min, mean, max and last per field, per GPU and per MIG instance', () => {
    const fold = createGpuFold()
    const utils = [30, 90, 60, 20]
    const powers = [100.5, 300, 250, 120]
    const reasons = [0, 0x4, 0x40, 0]
    utils.forEach((u, i) => fold.add(reading(i * 1000, u, powers[i]!, reasons[i]!, 1000 * (i + 1))))
    const items = fold.drain()
    expect(items).toHaveLength(2)
    const [gpu, mig] = items
    for (const it of items) expect(Value.Errors(GpuReportItemSchema, it).First()).toBeUndefined()
    expect(gpu!.samples).toBe(4)
    expect(gpu!.fields.gpuUtilPct).toEqual({ min: 20, max: 90, mean: 50, last: 20 })
    expect(gpu!.fields.powerW).toEqual({
      min: 100.5,
      max: 300,
      mean: (100.5 + 300 + 250 + 120) / 4,
      last: 120,
    })
    expect(gpu!.clockEventReasonsSeen).toEqual(['sw_power_cap', 'hw_thermal_slowdown'])
    expect(mig!.mig).toEqual({ gpuInstanceId: 3, computeInstanceId: 0 })
    expect(mig!.fields.memUsedBytes).toEqual({ min: 1000, max: 4000, mean: 2500, last: 4000 })
    expect(gpu!.processes).toEqual([
      {
        pid: 10,
        gpuInstanceId: 3,
        usedMemoryBytes: { min: 1000, max: 4000, mean: 2500, last: 4000 },
        smUtilPct: { min: 10, max: 45, mean: 25, last: 10 },
      },
    ])
    expect(fold.drain()).toEqual([])
  })

  it('attributes processes at drain time and lists events, even for a GPU with no sample', () => {
    const fold = createGpuFold()
    fold.add(reading(0, 50, 200, 0, 10))
    fold.event({ timeMs: 5, uuid: 'GPU-b', index: 1, kind: 'gpu_lost', message: 'gone' })
    fold.event({ timeMs: 6, uuid: 'GPU-a', index: 0, kind: 'xid', xid: 79 })
    const items = fold.drain((pid) =>
      pid === 10
        ? { replica: { service: 's', model: 'm', version: '1', replica: 'r1' }, podUid: 'p-1' }
        : undefined,
    )
    expect(items.map((i) => [i.uuid, i.mig?.gpuInstanceId, i.samples])).toEqual([
      ['GPU-a', undefined, 1],
      ['GPU-a', 3, 1],
      ['GPU-b', undefined, 0],
    ])
    expect(items[0]!.events).toEqual([{ timeMs: 6, kind: 'xid', xid: 79 }])
    expect(items[0]!.processes![0]).toMatchObject({
      replica: { service: 's', model: 'm', version: '1', replica: 'r1' },
      podUid: 'p-1',
    })
    expect(items[2]!.events).toEqual([{ timeMs: 5, kind: 'gpu_lost', message: 'gone' }])
    expect(items[2]!.fields).toEqual({})
  })

  it('caps events per GPU and counts the rest', () => {
    const fold = createGpuFold()
    for (let i = 0; i < MAX_EVENTS_PER_GPU + 5; i++)
      fold.event({ timeMs: i, uuid: 'GPU-a', index: 0, kind: 'xid', xid: 13 })
    expect(fold.drain()[0]!.events).toHaveLength(MAX_EVENTS_PER_GPU)
    expect(fold.droppedEvents).toBe(5)
  })
})

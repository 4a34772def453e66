// The NVML source above the addon, against an in-process NvmlBinding (STYLE.md section 8): GPU-less CI covers it.
import { describe, expect, it } from 'vitest'
import { NvmlError } from '../../../agent/sources/nvml-native.js'
import { createNvmlSource } from '../../../agent/sources/nvml.js'
import type { GpuEventReading, GpuReading, NvmlBinding, NvmlNativeEvent } from '../../../agent/gpu/types.js'
import type { SampleSink } from '../../../agent/types.js'

function fakeBinding(opts: { lostOnCalls?: Set<number> }) {
  const calls: string[] = []
  let onEvent: ((e: NvmlNativeEvent) => void) | undefined
  let sampleCalls = 0
  const b: NvmlBinding = {
    init: () => (
      calls.push('init'),
      { library: 'fake', driverVersion: '1', nvmlVersion: '2', deviceCount: 1 }
    ),
    shutdown: () => void calls.push('shutdown'),
    deviceInfo: (i) => ({ index: i, uuid: 'GPU-x', name: 'X', pciBusId: '0:1', unsupported: [] }),
    sample: () => {
      const n = sampleCalls++
      if (opts.lostOnCalls?.has(n))
        throw new NvmlError('nvmlDeviceGetUtilizationRates: GPU is lost', 'NVML_ERROR_GPU_IS_LOST', 15)
      return { gpuUtilPct: n, powerMw: 250_000, unsupported: ['energy'] }
    },
    processes: () => {
      throw new NvmlError('missing', 'TG_NVML_UNSUPPORTED')
    },
    processUtilization: () => [{ pid: 9, timestampUs: 5, smPct: 7, memPct: 1, encPct: 0, decPct: 0 }],
    startEvents: (_mask, cb) => {
      onEvent = cb
      calls.push('startEvents')
      return [{ index: 0, mask: 8 }]
    },
    stopEvents: async () => void calls.push('stopEvents'),
  }
  return { b, calls, emit: (e: NvmlNativeEvent) => onEvent?.(e) }
}
const sink: SampleSink = { recordRequest: () => {}, recordLatency: () => {}, drop: () => {} }

describe('createNvmlSource', () => {
  it('samples, converts units, reports a lost GPU once and its recovery', async () => {
    const f = fakeBinding({ lostOnCalls: new Set([1, 2]) })
    const src = createNvmlSource(() => f.b, 10, { clock: () => 1234 })
    const readings: GpuReading[] = []
    const events: GpuEventReading[] = []
    src.subscribe({ reading: (r) => readings.push(r), event: (e) => events.push(e) })
    await src.start(sink)
    expect(src.status()).toEqual({ state: 'ok' })
    await expect.poll(() => readings.length).toBeGreaterThanOrEqual(4)
    expect(readings[0]!.devices[0]).toEqual({
      uuid: 'GPU-x',
      index: 0,
      name: 'X',
      pciBusId: '0:1',
      values: { gpuUtilPct: 0, powerW: 250 },
      unsupported: ['energy', 'processes'],
    })
    expect(readings[0]!.processes).toEqual([{ uuid: 'GPU-x', index: 0, pid: 9, smUtilPct: 7, memUtilPct: 1 }])
    expect(readings[1]!.devices).toEqual([])
    expect(events.map((e) => e.kind)).toEqual(['gpu_lost', 'gpu_recovered'])
    expect(events[0]).toMatchObject({ uuid: 'GPU-x', message: 'nvmlDeviceGetUtilizationRates: GPU is lost' })
    f.emit({ index: 0, type: 8, data: 79 })
    f.emit({ index: 0, type: 2, data: 0, gpuInstanceId: 1 })
    expect(events.slice(2)).toEqual([
      { timeMs: 1234, uuid: 'GPU-x', index: 0, kind: 'xid', xid: 79, message: 'GPU has fallen off the bus' },
      { timeMs: 1234, uuid: 'GPU-x', index: 0, kind: 'ecc_double_bit', data: 0, gpuInstanceId: 1 },
    ])
    await src.stop()
    expect(f.calls).toEqual(['init', 'startEvents', 'stopEvents', 'shutdown'])
    expect(src.status()).toEqual({ state: 'unavailable', reason: 'stopped' })
  })

  it('is unavailable with the loader’s error and never samples', async () => {
    const src = createNvmlSource(() => {
      throw new NvmlError('dlopen libnvidia-ml.so.1: cannot open shared object file', 'TG_NVML_DLOPEN')
    }, 10)
    await src.start(sink)
    expect(src.status()).toEqual({
      state: 'unavailable',
      reason: 'dlopen libnvidia-ml.so.1: cannot open shared object file',
    })
    await src.stop()
  })
})

// The real addon against the fake libnvidia-ml: each scenario runs in its own child process, because the addon
// opens NVML once per process.
import { Value } from '@sinclair/typebox/value'
import { beforeAll, describe, expect, it } from 'vitest'
import { GpuReportItemSchema } from '../../collector/index.js'
import type { GpuReportItem } from '../../collector/index.js'
import { createNvmlSource } from '../../agent/sources/nvml.js'
import { loadNativeNvml } from '../../agent/sources/nvml-native.js'
import { compileFakeNvml, ensureAddon, loadScenario, runScenario, tempDir } from './fake-nvml.js'
import type { FakeDevice, FakeScenario } from './fake-nvml.js'

type Sample = Record<string, unknown> & { unsupported: string[]; error?: { code: string; message: string } }
interface AddonOut {
  init?: { driverVersion: string; nvmlVersion: string; deviceCount: number }
  error?: { code: string; message: string }
  devices: Array<{
    info: Record<string, unknown>
    samples: Sample[]
    processes: unknown
    processUtilization: unknown
  }>
  events: Array<Record<string, number>>
  registered: Array<{ index: number; mask: number }>
  stopMs: number
  afterShutdown: { code: string }
}
interface SourceOut {
  statusAfterStart: { state: string; reason?: string }
  items: GpuReportItem[]
  metrics: string
  drops: Record<string, number>
  survived: boolean
}

const at = (curve: number[] | undefined, k: number): number | undefined =>
  curve === undefined ? undefined : curve[Math.min(k, curve.length - 1)]
const stat = (curve: number[] | undefined, n: number, scale = 1) => {
  const vs = Array.from({ length: n }, (_, k) => at(curve, k)! * scale)
  return {
    min: Math.min(...vs),
    max: Math.max(...vs),
    mean: vs.reduce((a, b) => a + b, 0) / n,
    last: vs[n - 1],
  }
}
/** What the addon must return for the k-th sample of a fake device (NVML's units). */
function expectedSample(d: FakeDevice, k: number): Record<string, number | undefined> {
  const ns = new Set(d.notSupported ?? [])
  const used = at(d.memUsedBytes, k) ?? 0
  const total = d.memTotalBytes ?? 0
  const reserved = d.memReservedBytes ?? 0
  const pick = (field: string, curve: number[] | undefined) =>
    ns.has(field) ? undefined : (at(curve, k) ?? 0)
  return {
    gpuUtilPct: pick('util', d.utilGpu),
    memUtilPct: pick('util', d.utilMem),
    memTotalBytes: ns.has('mem') ? undefined : total,
    memReservedBytes: ns.has('mem') ? undefined : reserved,
    memUsedBytes: ns.has('mem') ? undefined : used,
    memFreeBytes: ns.has('mem') ? undefined : total - reserved - used,
    powerMw: pick('power', d.powerMw),
    energyMj: pick('energy', d.energyMj),
    temperatureC: pick('temp', d.temperatureC),
    smClockMhz: pick('clocks', d.smClockMhz),
    memClockMhz: pick('clocks', d.memClockMhz),
    clockEventReasons: pick('reasons', d.clockEventReasons),
    eccCorrectedVolatile: pick('ecc', d.eccCorrected),
    eccUncorrectedVolatile: pick('ecc', d.eccUncorrected),
    pcieTxKBps: pick('pcie', d.pcieTxKBps),
    pcieRxKBps: pick('pcie', d.pcieRxKBps),
  }
}
const numericFields = (s: Sample) =>
  Object.fromEntries(Object.entries(s).filter(([, v]) => typeof v === 'number')) as Record<string, number>
const defined = (o: Record<string, number | undefined>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))

let dir: string
let lib: string
let oldLib: string
const OMITTED = [
  'nvmlDeviceGetTotalEnergyConsumption',
  'nvmlDeviceGetMemoryInfo_v2',
  'nvmlDeviceGetCurrentClocksEventReasons',
  'nvmlDeviceGetProcessUtilization',
  'nvmlDeviceGetPcieThroughput',
]

beforeAll(() => {
  ensureAddon()
  dir = tempDir()
  lib = compileFakeNvml(dir)
  oldLib = compileFakeNvml(dir, OMITTED)
})

async function addon(s: FakeScenario, library = lib, env: Record<string, string> = {}): Promise<AddonOut> {
  const r = await runScenario('addon', s, library, env)
  expect(r.code, r.stderr).toBe(0)
  return r.json as AddonOut
}
async function source(s: FakeScenario, library = lib, env: Record<string, string> = {}): Promise<SourceOut> {
  const r = await runScenario('source', s, library, env)
  expect(r.code, r.stderr).toBe(0)
  const out = r.json as SourceOut
  for (const item of out.items) expect(Value.Errors(GpuReportItemSchema, item).First()).toBeUndefined()
  return out
}

describe('NVML addon against the fake libnvidia-ml', () => {
  it('reports versions, identity and every field of the scenario, call after call', async () => {
    const s = loadScenario('h100x2')
    const out = await addon(s)
    expect(out.init).toMatchObject({
      driverVersion: s.driverVersion,
      nvmlVersion: s.nvmlVersion,
      deviceCount: s.devices.length,
    })
    s.devices.forEach((d, i) => {
      const got = out.devices[i]!
      expect(got.info).toMatchObject({
        index: i,
        uuid: d.uuid,
        name: d.name,
        pciBusId: d.pciBusId,
        migEnabled: false,
      })
      got.samples.forEach((sample, k) => {
        expect(numericFields(sample)).toEqual(defined(expectedSample(d, k)))
        expect(sample.unsupported).toEqual([])
      })
      const procs = (d.processes ?? []).map((p) => ({ pid: p.pid, usedMemoryBytes: p.usedMemoryBytes }))
      expect(got.processes).toEqual(procs)
      const util = got.processUtilization as Array<Record<string, number>>
      expect(util.map((u) => [u.pid, u.smPct, u.memPct])).toEqual(
        (d.processUtilization ?? []).map((u) => [u.pid, u.sm, u.mem]),
      )
    })
    expect(out.afterShutdown.code).toBe('TG_NVML_NOT_INITIALIZED')
  })

  it('reads PCIe throughput and energy as field values where the driver has them, not the 20 ms throughput call', async () => {
    const base = loadScenario('h100x2')
    const s: FakeScenario = {
      ...base,
      devices: base.devices.map((d, i) => (i === 0 ? { ...d, pcieCounters: true, energyField: true } : d)),
    }
    // without the older calls, a GPU with the fields still has its rates and energy; one without them has none
    const noThroughputCall = compileFakeNvml(dir, [
      'nvmlDeviceGetPcieThroughput',
      'nvmlDeviceGetTotalEnergyConsumption',
    ])
    for (const library of [lib, noThroughputCall]) {
      const out = await addon(s, library, { TG_TEST_SAMPLES: '4' })
      const [withCounters, without] = [out.devices[0]!, out.devices[1]!]
      const d0 = s.devices[0]!
      // the first reading only sets the counters' baseline; each later one is the rate since the one before
      expect(withCounters.samples[0]).not.toHaveProperty('pcieTxKBps')
      expect(withCounters.samples[0]!.unsupported).toEqual([])
      withCounters.samples.forEach((sample, k) => expect(sample['energyMj']).toBe(at(d0.energyMj, k)))
      withCounters.samples.slice(1).forEach((sample, j) => {
        expect(sample['pcieTxKBps']).toBe(at(d0.pcieTxKBps, j + 1))
        expect(sample['pcieRxKBps']).toBe(at(d0.pcieRxKBps, j + 1))
        expect(sample.unsupported).toEqual([])
      })
      without.samples.forEach((sample, k) => {
        if (library === lib) expect(sample['pcieTxKBps']).toBe(at(s.devices[1]!.pcieTxKBps, k))
        else expect(sample.unsupported).toEqual(['energy', 'pcie'])
      })
    }
  })

  it('leaves NOT_SUPPORTED fields out of the sample', async () => {
    const s = loadScenario('not-supported')
    const out = await addon(s)
    const sample = out.devices[0]!.samples[0]!
    for (const absent of [
      'temperatureC',
      'powerMw',
      'eccCorrectedVolatile',
      'eccUncorrectedVolatile',
      'pcieTxKBps',
      'pcieRxKBps',
    ])
      expect(sample).not.toHaveProperty(absent)
    expect(numericFields(sample)).toEqual(defined(expectedSample(s.devices[0]!, 0)))
    expect(sample.unsupported).toEqual([])
    expect(out.devices[0]!.processUtilization).toEqual({
      error: {
        code: 'NVML_ERROR_NOT_SUPPORTED',
        message: 'nvmlDeviceGetProcessUtilization: fake: not supported',
      },
    })
  })

  it('marks fields whose symbol the driver lacks as unsupported and falls back to older entry points', async () => {
    const s = loadScenario('h100x2')
    const out = await addon(s, oldLib)
    const d = s.devices[0]!
    const sample = out.devices[0]!.samples[1]!
    expect(sample.unsupported).toEqual(['energy', 'pcie'])
    expect(sample).not.toHaveProperty('energyMj')
    expect(sample).not.toHaveProperty('pcieTxKBps')
    // nvmlDeviceGetMemoryInfo (v1) counts reserved memory as used and has no reserved field
    expect(sample).not.toHaveProperty('memReservedBytes')
    expect(sample['memUsedBytes']).toBe(at(d.memUsedBytes, 1)! + d.memReservedBytes!)
    // nvmlDeviceGetCurrentClocksThrottleReasons stands in for the newer ...ClocksEventReasons
    expect(sample['clockEventReasons']).toBe(at(d.clockEventReasons, 1))
    expect(out.devices[0]!.processUtilization).toMatchObject({ error: { code: 'TG_NVML_UNSUPPORTED' } })
  })

  it('reports MIG mode and MIG devices with their instance ids and memory', async () => {
    const s = loadScenario('mig')
    const out = await addon(s)
    const d = s.devices[0]!
    const migDevices = d.migDevices!.map((m) => ({
      slot: m.slot,
      uuid: m.uuid,
      gpuInstanceId: m.gpuInstanceId,
      computeInstanceId: m.computeInstanceId,
    }))
    expect(out.devices[0]!.info).toMatchObject({ migEnabled: true, migPendingEnabled: true, migDevices })
    const sample = out.devices[0]!.samples[0]!
    expect(sample).not.toHaveProperty('gpuUtilPct')
    expect(sample['migDevices']).toEqual(
      d.migDevices!.map((m) => ({
        slot: m.slot,
        uuid: m.uuid,
        gpuInstanceId: m.gpuInstanceId,
        computeInstanceId: m.computeInstanceId,
        memTotalBytes: m.memTotalBytes,
        memUsedBytes: m.memUsedBytes,
        memFreeBytes: m.memTotalBytes - m.memUsedBytes,
      })),
    )
    expect(out.devices[0]!.processes).toEqual(d.processes)
  })

  it('throws typed errors carrying NVML’s own error string (GPU lost, init failure)', async () => {
    const lost = await addon(loadScenario('gpu-lost'))
    const samples = lost.devices[0]!.samples
    expect(samples.slice(0, 2).every((x) => x.error === undefined)).toBe(true)
    expect(samples[2]!.error).toEqual({
      code: 'NVML_ERROR_GPU_IS_LOST',
      message: 'nvmlDeviceGetUtilizationRates: fake: GPU is lost',
    })
    expect(lost.devices[1]!.samples.every((x) => x.error === undefined)).toBe(true)
    const init = await addon(loadScenario('init-error'))
    expect(init.error).toEqual({
      code: 'NVML_ERROR_DRIVER_NOT_LOADED',
      message: 'nvmlInit_v2: fake: driver not loaded',
    })
  })

  it('delivers XID and double-bit ECC events from its native thread, and stops promptly', async () => {
    const s = loadScenario('xid79')
    const out = await addon(s, lib, { TG_TEST_WAIT_MS: '300' })
    expect(out.registered).toEqual([
      { index: 0, mask: 0x8 | 0x2 },
      { index: 1, mask: 0x8 | 0x2 },
    ])
    // the single-bit event (type 1) is outside the mask and never arrives
    expect(out.events).toEqual([
      { index: 0, type: 8, data: 79 },
      { index: 1, type: 2, data: 0 },
    ])
    expect(out.stopMs).toBeLessThan(250)
  })
})

describe('NVML addon, asynchronous entry points', () => {
  it('initializes and samples a pass on the thread pool, and exits cleanly with the event thread running', async () => {
    const s = loadScenario('h100x2')
    const t0 = performance.now()
    const r = await runScenario('exit-with-events', s, lib)
    expect(r.code, r.stderr).toBe(0)
    expect(performance.now() - t0).toBeLessThan(20_000)
    const out = r.json as { deviceCount: number; pass: Array<Record<string, unknown>> }
    expect(out.deviceCount).toBe(2)
    const d = s.devices[0]!
    expect(out.pass).toEqual([
      {
        index: 0,
        sample: expect.objectContaining({
          gpuUtilPct: d.utilGpu![0],
          powerMw: d.powerMw![0],
          unsupported: [],
        }),
        processes: d.processes,
        processUtilization: [
          expect.objectContaining({ pid: 4242, smPct: 88 }),
          expect.objectContaining({ pid: 5151, smPct: 5 }),
        ],
      },
    ])
  })
})

describe('NVML source over the real addon', () => {
  it('folds samples into min/mean/max/last per field, attributes processes and exposes DCGM names', async () => {
    const s = loadScenario('h100x2')
    const out = await source(s, lib, { TG_TEST_EVERY_MS: '100', TG_TEST_RUN_MS: '450' })
    expect(out.statusAfterStart).toEqual({ state: 'ok' })
    const [g0, g1] = out.items
    const d = s.devices[0]!
    const n = g0!.samples
    expect(n).toBeGreaterThanOrEqual(3)
    expect(g0).toMatchObject({ source: 'nvml', uuid: d.uuid, index: 0, name: d.name, pciBusId: d.pciBusId })
    expect(g0!.fields.gpuUtilPct).toEqual(stat(d.utilGpu, n))
    expect(g0!.fields.powerW!.max).toBeCloseTo(stat(d.powerMw, n, 1e-3).max, 9)
    expect(g0!.fields.powerW!.mean).toBeCloseTo(stat(d.powerMw, n, 1e-3).mean, 9)
    expect(g0!.fields.memUsedBytes).toEqual(stat(d.memUsedBytes, n))
    expect(g0!.fields.temperatureC).toEqual(stat(d.temperatureC, n))
    expect(g0!.fields.smClockMhz).toEqual(stat(d.smClockMhz, n))
    expect(g0!.clockEventReasonsSeen).toEqual(['gpu_idle', 'sw_power_cap', 'hw_thermal_slowdown'])
    const p4242 = g0!.processes!.find((p) => p.pid === 4242)!
    expect(p4242.replica).toEqual({ service: 'chat', model: 'llama', version: '3', replica: 'r0' })
    expect(p4242.usedMemoryBytes!.last).toBe(d.processes![0]!.usedMemoryBytes)
    expect(p4242.smUtilPct!.last).toBe(88)
    expect(g0!.processes!.find((p) => p.pid === 5151)!.replica).toBeUndefined()
    expect(g1).toMatchObject({ uuid: s.devices[1]!.uuid, index: 1 })
    expect(out.metrics).toContain(
      `DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="${d.uuid}",pci_bus_id="${d.pciBusId}",device="nvidia0",modelName="${d.name}",Hostname="test-host"} ${at(d.utilGpu, n - 1)}`,
    )
    expect(out.metrics).toMatch(/DCGM_FI_DEV_FB_USED\{gpu="1",[^}]*\} 0/)
    expect(out.metrics).toContain('tailguard_gpu_source_up{source="nvml"} 1')
    expect(out.metrics).toMatch(
      /tailguard_gpu_process_memory_bytes\{[^}]*pid="4242",service="chat"[^}]*\} 40802189312/,
    )
  })

  it('keeps absent what is NOT_SUPPORTED and names what the driver lacks', async () => {
    const ns = await source(loadScenario('not-supported'))
    const item = ns.items[0]!
    expect(Object.keys(item.fields).sort()).toEqual(
      [
        'gpuUtilPct',
        'memUtilPct',
        'memTotalBytes',
        'memReservedBytes',
        'memUsedBytes',
        'memFreeBytes',
        'energyMj',
        'smClockMhz',
        'memClockMhz',
        'clockEventReasons',
      ].sort(),
    )
    expect(item.unsupported).toEqual(['processUtilization'])
    const old = await source(loadScenario('h100x2'), oldLib)
    expect(old.items[0]!.unsupported).toEqual(['energy', 'pcie', 'processUtilization'])
    expect(old.items[0]!.fields.energyMj).toBeUndefined()
    expect(old.items[0]!.fields.gpuUtilPct).toBeDefined()
  })

  it('turns a lost GPU and XID 79 into events and keeps sampling the other GPUs', async () => {
    const s = loadScenario('gpu-lost')
    const out = await source(s, lib, { TG_TEST_EVERY_MS: '50', TG_TEST_RUN_MS: '400' })
    expect(out.survived).toBe(true)
    const lost = out.items.find((i) => i.index === 0)!
    const kinds = lost.events!.map((e) => e.kind)
    expect(kinds.filter((k) => k === 'gpu_lost')).toHaveLength(1)
    expect(lost.events!.find((e) => e.kind === 'xid')).toMatchObject({ xid: 79 })
    // the event thread's wait fails once the GPU is gone: counted once, then it backs off
    expect(out.drops['nvml_event_wait_error']).toBe(1)
    expect(lost.events!.find((e) => e.kind === 'gpu_lost')!.message).toBe(
      'nvmlDeviceGetUtilizationRates: fake: GPU is lost',
    )
    expect(lost.samples).toBe(2)
    const healthy = out.items.find((i) => i.index === 1)!
    expect(healthy.samples).toBeGreaterThan(lost.samples)
    expect(out.metrics).toMatch(/tailguard_gpu_events\{gpu="0",[^}]*kind="gpu_lost"\} 1/)
  })

  it('reports XID 79 and double-bit ECC events on their GPUs, and MIG instances as their own items', async () => {
    const x = await source(loadScenario('xid79'), lib, { TG_TEST_RUN_MS: '300' })
    expect(x.items[0]!.events).toEqual([
      expect.objectContaining({ kind: 'xid', xid: 79, message: 'GPU has fallen off the bus' }),
    ])
    expect(x.items[1]!.events).toEqual([expect.objectContaining({ kind: 'ecc_double_bit', data: 0 })])
    expect(x.metrics).toMatch(
      /DCGM_FI_DEV_XID_ERRORS\{gpu="0",UUID="GPU-0f0f0000-0000-4000-8000-000000000079"[^}]*\} 79/,
    )

    const s = loadScenario('mig')
    const m = await source(s, lib, { TG_TEST_RUN_MS: '200' })
    const parent = m.items.find((i) => i.mig === undefined)!
    expect(parent.fields.gpuUtilPct).toBeUndefined()
    expect(parent.processes!.map((p) => [p.pid, p.gpuInstanceId])).toEqual([
      [7001, 1],
      [7002, 9],
    ])
    expect(parent.events).toEqual([expect.objectContaining({ kind: 'xid', xid: 43, gpuInstanceId: 9 })])
    const migs = m.items.filter((i) => i.mig !== undefined)
    expect(migs.map((i) => [i.mig!.gpuInstanceId, i.mig!.uuid, i.fields.memUsedBytes!.last])).toEqual(
      s.devices[0]!.migDevices!.map((d) => [d.gpuInstanceId, d.uuid, d.memUsedBytes]),
    )
    expect(m.metrics).toMatch(/DCGM_FI_DEV_FB_USED\{gpu="0",[^}]*GPU_I_ID="9"\} 1024/)
  })

  it('stops cleanly while a sampling pass is still on the thread pool', async () => {
    for (let k = 0; k < 3; k++) {
      const out = await source(loadScenario('h100x2'), lib, { TG_TEST_EVERY_MS: '10', TG_TEST_RUN_MS: '0' })
      expect(out.survived).toBe(true)
    }
  })

  it('is unavailable with NVML’s reason when init fails, and the process goes on', async () => {
    const out = await source(loadScenario('init-error'))
    expect(out.statusAfterStart).toEqual({
      state: 'unavailable',
      reason: 'nvmlInit_v2: fake: driver not loaded',
    })
    expect(out.items).toEqual([])
    expect(out.metrics).toContain('tailguard_gpu_source_up{source="nvml"} 0')
    expect(out.survived).toBe(true)
  })
})

describe('NVML source without NVML (this machine)', () => {
  it('reports the dlopen error as the reason', async () => {
    const missing = `${tempDir()}/libnvidia-ml.so.1`
    const src = createNvmlSource(() => loadNativeNvml({ library: missing }), 1000)
    await src.start({ recordRequest: () => {}, recordLatency: () => {}, drop: () => {} })
    const st = src.status()
    expect(st.state).toBe('unavailable')
    expect(st.state === 'unavailable' && st.reason).toMatch(/^dlopen .*libnvidia-ml\.so\.1: .*No such file/)
    await src.stop()
  })

  it('reports a missing addon as the reason', async () => {
    const src = createNvmlSource(() => loadNativeNvml({ addonPath: `${tempDir()}/none.node` }), 1000)
    await src.start({ recordRequest: () => {}, recordLatency: () => {}, drop: () => {} })
    expect(src.status()).toEqual({
      state: 'unavailable',
      reason: expect.stringContaining('NVML addon not built'),
    })
    await src.stop()
  })
})

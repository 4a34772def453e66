import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Value } from '@sinclair/typebox/value'
import { Registry } from 'prom-client'
import { afterEach, describe, expect, it } from 'vitest'
import { GpuReportItemSchema } from '../../../collector/index.js'
import { createGpuCollector } from '../../../agent/gpu/collector.js'
import { parsePromText } from '../../../agent/gpu/prom-text.js'
import type { GpuEventReading, GpuReading } from '../../../agent/gpu/types.js'
import { createDcgmSource, dcgmToReadings } from '../../../agent/sources/dcgm.js'
import type { SampleSink } from '../../../agent/types.js'

const EXPORTER_TEXT = readFileSync(
  join(dirname(fileURLToPath(import.meta.url)), 'dcgm-exporter-a100-mig.txt'),
  'utf8',
)
const GPU0 = 'GPU-9a3b1f02-7c44-4e1b-b2d1-0c8f6a7e0000'
const GPU1 = 'GPU-9a3b1f02-7c44-4e1b-b2d1-0c8f6a7e0001'
const MIB = 1024 * 1024
const drops: Record<string, number> = {}
const sink: SampleSink = {
  recordRequest: () => {},
  recordLatency: () => {},
  drop: (r, n = 1) => {
    drops[r] = (drops[r] ?? 0) + n
  },
}

/** A real HTTP server answering /metrics with whatever `body()` returns now. */
async function exporter(body: () => string) {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') return void res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(body())
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`
  return { url, close: () => new Promise<void>((r) => server.close(() => r())) }
}

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

describe('DCGM exporter scrape', () => {
  it('maps DCGM fields and units, with one reading per GPU and per MIG instance', () => {
    const { samples, malformed } = parsePromText(EXPORTER_TEXT)
    expect(malformed).toBe(0)
    const { devices } = dcgmToReadings(samples)
    expect(devices).toHaveLength(4)
    const g0 = devices.find((d) => d.uuid === GPU0)!
    expect(g0).toMatchObject({ index: 0, name: 'NVIDIA A100-SXM4-80GB', pciBusId: '00000000:07:00.0' })
    expect(g0.mig).toBeUndefined()
    expect(g0.values).toEqual({
      smClockMhz: 1410,
      memClockMhz: 1593,
      temperatureC: 52,
      powerW: 312.447,
      energyMj: 8123456789,
      gpuUtilPct: 87,
      memUtilPct: 31,
      memFreeBytes: 41283 * MIB,
      memUsedBytes: 39877 * MIB,
      grEngineActivePct: 86.1204,
      pcieTxKBps: 104857600 / 1024,
    })
    // the physical GPU 1 only carries non-MIG fields; its instances carry the rest
    const g1 = devices.find((d) => d.uuid === GPU1 && d.mig === undefined)!
    expect(g1.values).toEqual({ smClockMhz: 1275, temperatureC: 47, powerW: 98.25 })
    const mig13 = devices.find((d) => d.mig?.gpuInstanceId === 13)!
    expect(mig13).toMatchObject({
      uuid: GPU1,
      index: 1,
      mig: { gpuInstanceId: 13, profile: '1g.10gb' },
      k8s: { namespace: 'ml-serving', pod: 'triton-llama-7d9f8c6b5-x2k4p', container: 'triton' },
    })
    // no DCGM_FI_DEV_GPU_UTIL under MIG: DCGM_FI_PROF_GR_ENGINE_ACTIVE stands in
    expect(mig13.values.gpuUtilPct).toBeCloseTo(73.4512, 9)
    expect(mig13.values.tensorActivePct).toBeCloseTo(41.2, 9)
    expect(mig13.values.memUsedBytes).toBe(4477 * MIB)
    const mig2 = devices.find((d) => d.mig?.gpuInstanceId === 2)!
    expect(mig2.mig).toEqual({ gpuInstanceId: 2, profile: '3g.40gb' })
    expect(mig2.k8s).toBeUndefined()
    expect(mig2.values.gpuUtilPct).toBe(0)
  })

  it('scrapes a live endpoint, turns a new XID into an event, and folds into schema-valid report items', async () => {
    let xid = 0
    const ex = await exporter(() => EXPORTER_TEXT.replace(/(DCGM_FI_DEV_XID_ERRORS\{[^}]*\}) 0/, `$1 ${xid}`))
    cleanups.push(ex.close)
    const source = createDcgmSource({ url: ex.url, every: 40 })
    const readings: GpuReading[] = []
    const events: GpuEventReading[] = []
    source.subscribe({ reading: (r) => readings.push(r), event: (e) => events.push(e) })
    const gpu = createGpuCollector({ sources: [source], hostname: 'agent-host' })
    const registry = new Registry()
    gpu.registerMetrics(registry)
    await gpu.start(sink)
    cleanups.push(() => gpu.stop())
    await expect.poll(() => readings.length).toBeGreaterThanOrEqual(2)
    expect(source.status()).toEqual({ state: 'ok' })
    expect(events).toEqual([])
    xid = 79
    await expect.poll(() => events.length).toBe(1)
    expect(events[0]).toMatchObject({ source: 'dcgm', uuid: GPU0, index: 0, kind: 'xid', xid: 79 })
    const items = gpu.drainInterval()
    for (const item of items) expect(Value.Errors(GpuReportItemSchema, item).First()).toBeUndefined()
    const g0 = items.find((i) => i.uuid === GPU0)!
    expect(g0.source).toBe('dcgm')
    expect(g0.fields.gpuUtilPct).toEqual({ min: 87, mean: 87, max: 87, last: 87 })
    expect(g0.events).toEqual([
      expect.objectContaining({ kind: 'xid', xid: 79, message: 'GPU has fallen off the bus' }),
    ])
    const mig = items.find((i) => i.mig?.gpuInstanceId === 13)!
    expect(mig.k8s).toEqual({
      namespace: 'ml-serving',
      pod: 'triton-llama-7d9f8c6b5-x2k4p',
      container: 'triton',
    })
    const text = await registry.metrics()
    expect(text).toContain(
      `DCGM_FI_DEV_FB_USED{gpu="1",UUID="${GPU1}",pci_bus_id="00000000:0F:00.0",device="nvidia1",modelName="NVIDIA A100-SXM4-80GB",Hostname="agent-host",GPU_I_PROFILE="1g.10gb",GPU_I_ID="13",namespace="ml-serving",pod="triton-llama-7d9f8c6b5-x2k4p",container="triton"} 4477`,
    )
    expect(text).toMatch(/DCGM_FI_PROF_GR_ENGINE_ACTIVE\{gpu="0",[^}]*\} 0\.861204/)
    expect(text).toMatch(
      /DCGM_FI_DEV_XID_ERRORS\{gpu="0",UUID="GPU-9a3b1f02-7c44-4e1b-b2d1-0c8f6a7e0000",[^}]*\} 79/,
    )
  })

  it('is unavailable with the reason while the exporter cannot be reached, and recovers', async () => {
    const ex = await exporter(() => EXPORTER_TEXT)
    const url = ex.url
    await ex.close()
    const source = createDcgmSource({ url, every: 30 })
    await source.start(sink)
    cleanups.push(() => source.stop())
    await expect
      .poll(() => source.status().state === 'unavailable' && source.status())
      .toMatchObject({
        reason: expect.stringMatching(/^scrape http:\/\/127\.0\.0\.1:\d+\/metrics failed: /),
      })
    const empty = await exporter(() => '# nothing here\nprocess_cpu_seconds_total 1\n')
    cleanups.push(empty.close)
    const s2 = createDcgmSource({ url: empty.url, every: 30 })
    await s2.start(sink)
    cleanups.push(() => s2.stop())
    await expect
      .poll(() => s2.status())
      .toEqual({
        state: 'unavailable',
        reason: `no DCGM_FI_* GPU metrics at ${empty.url}`,
      })
  })
})

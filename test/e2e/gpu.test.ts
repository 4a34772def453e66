// Issue #4 end to end: a real agent samples GPUs through the NVML source (over an in-process fake binding),
// ships them in its interval reports to a real collector on SQLite, and GET /api/v1/gpus shows them.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { createGpuCollector, createNvmlSource, startAgent } from '../../agent/index.js'
import type { NvmlBinding, RunningAgent } from '../../agent/index.js'
import { buildCollector } from '../../collector/app.js'
import { createStore } from '../../collector/index.js'
import type { Store } from '../../collector/index.js'

const READ = 'read-token-gpu-e2e-0123456789'
const AGENT = 'agent-token-gpu-e2e-0123456789'
const CHAT = { service: 'chat', model: 'llama', version: '3', replica: 'r0' }

/** Two GPUs with constant counters, one process of the chat replica on GPU 0, and an XID on demand. */
function fakeNvml() {
  let onEvent: ((e: { index: number; type?: number; data?: number }) => void) | undefined
  const devices = [
    {
      uuid: 'GPU-11111111-e2e',
      name: 'NVIDIA H100 80GB HBM3',
      util: 73,
      memUsed: 12e9,
      powerMw: 251_500,
      temp: 64,
    },
    {
      uuid: 'GPU-22222222-e2e',
      name: 'NVIDIA H100 80GB HBM3',
      util: 5,
      memUsed: 1e9,
      powerMw: 71_000,
      temp: 38,
    },
  ]
  const binding: NvmlBinding = {
    init: () => ({
      library: 'fake',
      driverVersion: '550.54',
      nvmlVersion: '12.550',
      deviceCount: devices.length,
    }),
    shutdown: () => {},
    deviceInfo: (i) => ({
      index: i,
      uuid: devices[i]!.uuid,
      name: devices[i]!.name,
      pciBusId: `00000000:0${i + 1}:00.0`,
      unsupported: [],
    }),
    sample: (i) => ({
      gpuUtilPct: devices[i]!.util,
      memUtilPct: 20,
      memTotalBytes: 80e9,
      memUsedBytes: devices[i]!.memUsed,
      memFreeBytes: 80e9 - devices[i]!.memUsed,
      powerMw: devices[i]!.powerMw,
      temperatureC: devices[i]!.temp,
      smClockMhz: 1980,
      memClockMhz: 2619,
      clockEventReasons: 0,
      unsupported: [],
    }),
    processes: (i) => (i === 0 ? [{ pid: 4242, usedMemoryBytes: 10e9 }] : []),
    processUtilization: (i, sinceUs) =>
      i === 0 ? [{ pid: 4242, timestampUs: sinceUs + 1, smPct: 66, memPct: 10, encPct: 0, decPct: 0 }] : [],
    startEvents: (_mask, cb) => {
      onEvent = cb
      return devices.map((_, index) => ({ index, mask: 8 }))
    },
    stopEvents: async () => {},
  }
  return { binding, devices, xid: (index: number, xid: number) => onEvent?.({ index, type: 8, data: xid }) }
}

interface GpusBody {
  gpus: Array<{
    node: string
    uuid: string
    index: number
    name: string
    pciBusId: string
    fields: Record<string, { min: number; mean: number; max: number; last: number }>
    events: Array<{ kind: string; xid: number | null }>
    processes: Array<{ pid: number; replica: typeof CHAT | null; smUtilPct: { last: number } | null }>
  }>
  replicas: Array<typeof CHAT & { node: string; pids: number[]; latency: { count: number } }>
}

describe('GPU telemetry from a real agent to a real collector', () => {
  const cleanup: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const f of cleanup.reverse()) await f()
    cleanup.length = 0
  })

  it('GET /api/v1/gpus shows the fake binding’s GPUs, values, XID and the process attributed to its replica', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-gpu-e2e-'))
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }))
    const store: Store = await createStore({ url: `sqlite:${join(dir, 'tailguard.db')}` })
    cleanup.push(() => store.close())
    const app: FastifyInstance = await buildCollector(
      {
        tokens: [
          { token: READ, scope: 'read' },
          { token: AGENT, scope: 'agent' },
        ],
        reportBodyLimitBytes: 8 << 20,
        bodyLimitBytes: 1 << 20,
      },
      { store },
    )
    cleanup.push(() => app.close())
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as { port: number }

    const nvml = fakeNvml()
    const gpu = createGpuCollector({
      sources: [createNvmlSource(() => nvml.binding, 100)],
      resolvePid: (pid) => (pid === 4242 ? { replica: CHAT } : undefined),
      hostname: 'gpu-node-1',
    })
    const agent: RunningAgent = await startAgent(
      {
        id: 'gpu-agent',
        node: 'gpu-node-1',
        collectorUrl: `http://127.0.0.1:${port}`,
        token: AGENT,
        intervalMs: 200,
        spoolDir: null,
        spoolMaxBytes: 1 << 20,
        http: null,
      },
      { gpu },
    )
    cleanup.unshift(() => agent.stop())
    for (let i = 0; i < 20; i++)
      agent.recorder.recordRequest({
        labels: { ...CHAT, node: 'gpu-node-1' },
        status: 'ok',
        phasesUs: { total: 30_000 + i * 1000 },
      })
    nvml.xid(0, 79)

    const get = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/gpus`, {
        headers: { authorization: `Bearer ${READ}` },
      })
      expect(res.status).toBe(200)
      return (await res.json()) as GpusBody
    }
    let body = await get()
    const deadline = Date.now() + 15_000
    while (
      Date.now() < deadline &&
      !(
        body.gpus.length === 2 &&
        body.gpus[0]!.events.length > 0 &&
        body.gpus[0]!.processes.length > 0 &&
        body.replicas[0]?.latency.count === 20
      )
    ) {
      await new Promise((r) => setTimeout(r, 100))
      body = await get()
    }

    expect(body.gpus.map((g) => [g.node, g.index, g.uuid, g.name, g.pciBusId])).toEqual(
      nvml.devices.map((d, i) => ['gpu-node-1', i, d.uuid, d.name, `00000000:0${i + 1}:00.0`]),
    )
    body.gpus.forEach((g, i) => {
      const d = nvml.devices[i]!
      expect(g.fields.gpuUtilPct).toEqual({ min: d.util, mean: d.util, max: d.util, last: d.util })
      expect(g.fields.memUsedBytes!.last).toBe(d.memUsed)
      expect(g.fields.powerW!.last).toBe(d.powerMw / 1000)
      expect(g.fields.temperatureC!.last).toBe(d.temp)
      expect(g.fields.smClockMhz!.last).toBe(1980)
    })
    expect(body.gpus[0]!.events).toEqual([expect.objectContaining({ kind: 'xid', xid: 79 })])
    expect(body.gpus[1]!.events).toEqual([])
    expect(body.gpus[0]!.processes).toEqual([
      expect.objectContaining({ pid: 4242, replica: CHAT, smUtilPct: expect.objectContaining({ last: 66 }) }),
    ])
    expect(body.replicas).toEqual([
      expect.objectContaining({
        ...CHAT,
        node: 'gpu-node-1',
        pids: [4242],
        latency: expect.objectContaining({ count: 20 }),
      }),
    ])

    // The time series carries the same values.
    const ts = await fetch(
      `http://127.0.0.1:${port}/api/v1/gpus/timeseries?field=powerW&from=-5m&uuid=${nvml.devices[0]!.uuid}`,
      { headers: { authorization: `Bearer ${READ}` } },
    )
    const series = (await ts.json()) as { gpus: Array<{ points: Array<{ min: number; max: number }> }> }
    expect(series.gpus).toHaveLength(1)
    for (const p of series.gpus[0]!.points) expect([p.min, p.max]).toEqual([251.5, 251.5])
  })
})

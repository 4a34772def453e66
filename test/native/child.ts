// Runs one fake-NVML scenario in its own process (bundled by fake-nvml.ts) and prints one JSON line.
import { createRequire } from 'node:module'
import { Registry } from 'prom-client'
import { createGpuCollector } from '../../agent/gpu/collector.js'
import type { NvmlNativeEvent } from '../../agent/gpu/types.js'
import { createNvmlSource } from '../../agent/sources/nvml.js'
import { loadNativeNvml } from '../../agent/sources/nvml-native.js'
import type { SampleSink } from '../../agent/types.js'

const env = process.env
const addonPath = env['TG_TEST_ADDON']!
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const errorOf = (e: unknown) => ({ code: (e as { code?: string }).code, message: (e as Error).message })

async function rawAddon() {
  const addon = createRequire(import.meta.url)(addonPath) as Record<string, (...a: unknown[]) => unknown>
  const out: Record<string, unknown> = {}
  try {
    out['load'] = addon['load']!(env['TAILGUARD_NVML_LIBRARY'])
    out['init'] = addon['init']!()
  } catch (e) {
    out['error'] = errorOf(e)
    console.log(JSON.stringify(out))
    return
  }
  const n = (out['init'] as { deviceCount: number }).deviceCount
  const devices: unknown[] = []
  const samples = Number(env['TG_TEST_SAMPLES'] ?? 3)
  for (let i = 0; i < n; i++) {
    const d: Record<string, unknown> = {}
    const tryCall = (key: string, fn: () => unknown) => {
      try {
        d[key] = fn()
      } catch (e) {
        d[key] = { error: errorOf(e) }
      }
    }
    tryCall('info', () => addon['deviceInfo']!(i))
    const s: unknown[] = []
    for (let k = 0; k < samples; k++) {
      try {
        s.push(addon['sample']!(i))
      } catch (e) {
        s.push({ error: errorOf(e) })
      }
    }
    d['samples'] = s
    tryCall('processes', () => addon['processes']!(i))
    tryCall('processUtilization', () => addon['processUtilization']!(i, 0))
    devices.push(d)
  }
  out['devices'] = devices
  const events: NvmlNativeEvent[] = []
  try {
    out['registered'] = addon['startEvents']!(0x8 | 0x2, (e: NvmlNativeEvent) => events.push(e), 20)
    await sleep(Number(env['TG_TEST_WAIT_MS'] ?? 300))
    const t0 = performance.now()
    await addon['stopEvents']!()
    out['stopMs'] = performance.now() - t0
  } catch (e) {
    out['eventsError'] = errorOf(e)
  }
  out['events'] = events
  addon['shutdown']!()
  try {
    addon['sample']!(0)
  } catch (e) {
    out['afterShutdown'] = errorOf(e)
  }
  console.log(JSON.stringify(out))
}

async function source() {
  const drops: Record<string, number> = {}
  const logs: string[] = []
  const sink: SampleSink = {
    recordRequest: () => {},
    recordLatency: () => {},
    drop: (reason, n = 1) => {
      drops[reason] = (drops[reason] ?? 0) + n
    },
  }
  const nvml = createNvmlSource(() => loadNativeNvml({ addonPath }), Number(env['TG_TEST_EVERY_MS'] ?? 50), {
    eventWaitMs: 20,
    log: (l) => logs.push(l),
  })
  const gpu = createGpuCollector({
    sources: [nvml],
    hostname: 'test-host',
    resolvePid: (pid) =>
      pid === 4242
        ? { replica: { service: 'chat', model: 'llama', version: '3', replica: 'r0' } }
        : undefined,
  })
  const registry = new Registry()
  gpu.registerMetrics(registry)
  await gpu.start(sink)
  const statusAfterStart = nvml.status()
  await sleep(Number(env['TG_TEST_RUN_MS'] ?? 400))
  const metrics = await registry.metrics()
  const items = gpu.drainInterval()
  await gpu.stop()
  console.log(JSON.stringify({ statusAfterStart, items, metrics, drops, logs, survived: true }))
}

// Starts the event thread and lets the process end on its own: the unref'd thread must not keep it alive, and the
// addon's cleanup hook must stop it before NVML goes away.
async function exitWithEvents() {
  const addon = createRequire(import.meta.url)(addonPath) as Record<string, (...a: unknown[]) => unknown>
  addon['load']!(env['TAILGUARD_NVML_LIBRARY'])
  const info = (await addon['initAsync']!()) as { deviceCount: number }
  const pass = (await addon['samplePass']!([0], {
    processes: true,
    processUtilization: true,
    sinceUs: [0],
  })) as unknown[]
  addon['startEvents']!(0x8, () => {}, 200)
  console.log(JSON.stringify({ deviceCount: info.deviceCount, pass }))
}

const mode = env['TG_TEST_MODE']
await (mode === 'addon' ? rawAddon() : mode === 'exit-with-events' ? exitWithEvents() : source())

import { hostname as osHostname } from 'node:os'
import type { Registry } from 'prom-client'
import type { GpuReportItem } from '../../collector/index.js'
import type { SampleSink, SourceStatus } from '../types.js'
import type { PidResolver } from './attribution.js'
import { createGpuFold } from './fold.js'
import { registerGpuMetrics } from './metrics.js'
import type { GpuMetricsState } from './metrics.js'
import type { GpuDeviceReading, GpuEventReading, GpuProcessReading, GpuSource } from './types.js'

export interface GpuCollectorOptions {
  /** The GPU sources (NVML, DCGM exporter); each samples at its own period. */
  readonly sources: readonly GpuSource[]
  /** Maps GPU process PIDs to replicas (see `createPidResolver`); without it processes stay unattributed. */
  readonly resolvePid?: PidResolver
  /** The `Hostname` label of the metrics (default: this machine's hostname). */
  readonly hostname?: string
}

/**
 * The agent's GPU side: owns the sources, folds their readings into each interval report's `gpus`, and exposes the
 * latest readings on `/metrics` under DCGM exporter's names.
 *
 * @example
 * ```ts
 * const gpu = createGpuCollector({ sources: [createNvmlSource(() => loadNativeNvml(), 1000)], resolvePid })
 * await gpu.start(recorder)
 * gpu.registerMetrics(registry)
 * report.gpus = gpu.drainInterval() // at each interval
 * await gpu.stop()
 * ```
 */
export interface GpuCollector {
  readonly sources: readonly GpuSource[]
  /** Starts every source; resolves once each has started or reported itself unavailable. Never rejects. */
  start(sink: SampleSink): Promise<void>
  stop(): Promise<void>
  /** The interval's GPU items (an empty array when no GPU source is available); starts the next interval. */
  drainInterval(): GpuReportItem[]
  /** Registers the GPU metrics on a prom-client registry (once per registry). */
  registerMetrics(registry: Registry): void
  /** Each source's status, for the agent's health output. */
  statuses(): Array<{ name: string; status: SourceStatus }>
}

export function createGpuCollector(options: GpuCollectorOptions): GpuCollector {
  const fold = createGpuFold()
  const hostname = options.hostname ?? osHostname()
  const latestDevices = new Map<string, readonly GpuDeviceReading[]>()
  const latestProcesses = new Map<string, readonly GpuProcessReading[]>()
  const lastXid = new Map<string, { uuid: string; index: number; xid: number }>()
  const eventCounts = new Map<string, { uuid: string; index: number; kind: string; count: number }>()
  const unsubscribe: Array<() => void> = []

  const onEvent = (e: GpuEventReading) => {
    fold.event(e)
    if (e.kind === 'xid' && e.xid !== undefined)
      lastXid.set(e.uuid, { uuid: e.uuid, index: e.index, xid: e.xid })
    const key = `${e.uuid}\u0000${e.kind}`
    const c = eventCounts.get(key)
    if (c !== undefined) c.count++
    else eventCounts.set(key, { uuid: e.uuid, index: e.index, kind: e.kind, count: 1 })
  }

  for (const s of options.sources) {
    unsubscribe.push(
      s.subscribe({
        reading: (r) => {
          fold.add(r)
          latestDevices.set(s.name, r.devices)
          latestProcesses.set(s.name, r.processes)
        },
        event: onEvent,
      }),
    )
  }

  const identity = new Map<string, { name?: string; pciBusId?: string }>()
  const state: GpuMetricsState = {
    *devices() {
      for (const [name, list] of latestDevices) {
        const status = options.sources.find((s) => s.name === name)?.status()
        if (status?.state !== 'ok') continue
        for (const d of list) {
          identity.set(d.uuid, {
            ...(d.name !== undefined ? { name: d.name } : {}),
            ...(d.pciBusId !== undefined ? { pciBusId: d.pciBusId } : {}),
          })
          yield d
        }
      }
    },
    *processes() {
      for (const list of latestProcesses.values())
        for (const p of list) {
          const replica = options.resolvePid?.(p.pid)?.replica
          yield replica !== undefined ? { reading: p, replica } : { reading: p }
        }
    },
    *lastXids() {
      for (const x of lastXid.values()) yield { ...x, ...identity.get(x.uuid) }
    },
    eventCounts: () => eventCounts.values(),
    *sourceStatus() {
      for (const s of options.sources) yield { name: s.name, up: s.status().state === 'ok' }
    },
  }

  return {
    sources: options.sources,
    async start(sink) {
      await Promise.all(
        options.sources.map(async (s) => {
          try {
            await s.start(sink)
          } catch {
            sink.drop(`gpu_source_start_${s.name}`)
          }
        }),
      )
    },
    async stop() {
      await Promise.all(options.sources.map((s) => s.stop()))
      for (const off of unsubscribe.splice(0)) off()
    },
    drainInterval: () => fold.drain(options.resolvePid),
    registerMetrics: (registry) => registerGpuMetrics(registry, state, hostname),
    statuses: () => options.sources.map((s) => ({ name: s.name, status: s.status() })),
  }
}

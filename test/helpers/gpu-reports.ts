import { Value } from '@sinclair/typebox/value'
import { createGpuFold } from '../../agent/index.js'
import { GpuReportItemSchema } from '../../collector/index.js'
import type { GpuReportItem, IntervalReport } from '../../collector/index.js'
import { makeReport } from './reports.js'
import type { TestSeries } from './reports.js'

/** One fake GPU's readings over an interval: per sample its utilization, memory used and power. */
export interface FakeGpu {
  readonly uuid: string
  readonly index: number
  readonly name?: string
  readonly mig?: { readonly gpuInstanceId: number; readonly computeInstanceId?: number }
  readonly utilPct: readonly number[]
  readonly memUsedBytes?: readonly number[]
  readonly powerW?: readonly number[]
  readonly temperatureC?: number
  readonly clockEventReasons?: number
  readonly events?: ReadonlyArray<{ readonly timeMs: number; readonly kind: string; readonly xid?: number }>
  readonly processes?: ReadonlyArray<{
    readonly pid: number
    readonly usedMemoryBytes: number
    readonly smUtilPct: number
    readonly replica?: { service: string; model: string; version: string; replica: string }
  }>
}

/**
 * Folds fake GPU readings with the agent's real fold (`createGpuFold`) into report items, and checks each item
 * against `GpuReportItemSchema`, as the collector's report route does.
 */
export function foldGpus(gpus: readonly FakeGpu[], startMs: number): GpuReportItem[] {
  const fold = createGpuFold()
  const n = Math.max(...gpus.map((g) => g.utilPct.length))
  for (let i = 0; i < n; i++)
    fold.add({
      source: 'nvml',
      timeMs: startMs + i * 1000,
      devices: gpus
        .filter((g) => i < g.utilPct.length)
        .map((g) => ({
          uuid: g.uuid,
          index: g.index,
          ...(g.name !== undefined ? { name: g.name } : {}),
          ...(g.mig !== undefined ? { mig: g.mig } : {}),
          values: {
            gpuUtilPct: g.utilPct[i]!,
            ...(g.memUsedBytes ? { memUsedBytes: g.memUsedBytes[i]!, memTotalBytes: 80e9 } : {}),
            ...(g.powerW ? { powerW: g.powerW[i]! } : {}),
            ...(g.temperatureC !== undefined ? { temperatureC: g.temperatureC } : {}),
            ...(g.clockEventReasons !== undefined ? { clockEventReasons: g.clockEventReasons } : {}),
          },
        })),
      processes: gpus.flatMap((g) =>
        (g.processes ?? []).map((p) => ({
          uuid: g.uuid,
          index: g.index,
          pid: p.pid,
          usedMemoryBytes: p.usedMemoryBytes,
          smUtilPct: p.smUtilPct,
        })),
      ),
    })
  for (const g of gpus)
    for (const e of g.events ?? [])
      fold.event({ ...e, uuid: g.uuid, index: g.index, ...(e.kind === 'xid' ? { message: 'XID' } : {}) })
  const replicas = new Map(
    gpus.flatMap((g) =>
      (g.processes ?? []).filter((p) => p.replica).map((p) => [p.pid, p.replica!] as const),
    ),
  )
  const items = fold.drain((pid) => {
    const replica = replicas.get(pid)
    return replica ? { replica } : undefined
  })
  for (const item of items)
    if (!Value.Check(GpuReportItemSchema, item))
      throw new Error(
        `fold produced an invalid item: ${JSON.stringify([...Value.Errors(GpuReportItemSchema, item)][0])}`,
      )
  return items
}

/** An interval report (5 s) carrying GPU items folded from `gpus`, and optionally request series. */
export function makeGpuReport(opts: {
  readonly seq: number
  readonly startMs: number
  readonly gpus: readonly FakeGpu[]
  readonly node?: string
  readonly instance?: string
  readonly series?: readonly TestSeries[]
}): IntervalReport {
  const base = makeReport({
    seq: opts.seq,
    startMs: opts.startMs,
    series: opts.series ?? [],
    ...(opts.instance !== undefined ? { instance: opts.instance } : {}),
  })
  return {
    ...base,
    agent: { ...base.agent, node: opts.node ?? base.agent.node },
    gpus: foldGpus(opts.gpus, opts.startMs),
  }
}

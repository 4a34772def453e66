import { GPU_FIELDS } from '../../collector/index.js'
import type { GpuField, GpuProcess, GpuReportItem, GpuStat } from '../../collector/index.js'
import type { PidAttribution } from './attribution.js'
import { clockEventReasonNames } from './nvml-constants.js'
import type { GpuDeviceReading, GpuEventReading, GpuReading, MigIdentity } from './types.js'

class Acc {
  min = Infinity
  max = -Infinity
  sum = 0
  n = 0
  last = 0
  add(v: number): void {
    if (!Number.isFinite(v)) return
    if (v < this.min) this.min = v
    if (v > this.max) this.max = v
    this.sum += v
    this.n++
    this.last = v
  }
  stat(): GpuStat | undefined {
    return this.n === 0
      ? undefined
      : { min: this.min, mean: this.sum / this.n, max: this.max, last: this.last }
  }
}

interface ProcAcc {
  readonly pid: number
  gpuInstanceId?: number
  computeInstanceId?: number
  readonly mem: Acc
  readonly sm: Acc
  readonly memUtil: Acc
}

interface ItemAcc {
  source: 'nvml' | 'dcgm'
  uuid: string
  index: number
  name?: string
  pciBusId?: string
  mig?: MigIdentity
  k8s?: GpuDeviceReading['k8s']
  samples: number
  readonly fields: Map<GpuField, Acc>
  reasonsSeen: number
  unsupported: Set<string>
  readonly events: GpuReportItem['events'] & object
  readonly procs: Map<number, ProcAcc>
}

/** Resolves a GPU process to the replica it belongs to (see `createPidResolver`). */
export type ProcessAttributor = (pid: number) => PidAttribution | undefined

/** The most events one GPU item carries per interval; more are counted as dropped. */
export const MAX_EVENTS_PER_GPU = 256

const itemKey = (uuid: string, mig: MigIdentity | undefined): string =>
  mig === undefined ? uuid : `${uuid}/${mig.gpuInstanceId}/${mig.computeInstanceId ?? ''}`

/**
 * Folds the GPU readings and events of one interval into the report's `gpus` array: per GPU or MIG instance,
 * min/mean/max/last of every field, the events as a list, and the processes seen (attributed at drain time).
 *
 * @example
 * ```ts
 * const fold = createGpuFold()
 * fold.add(reading); fold.event(xid79)
 * const gpus = fold.drain((pid) => resolver(pid)) // GpuReportItem[] for IntervalReport.gpus
 * ```
 */
export interface GpuFold {
  add(reading: GpuReading): void
  event(e: GpuEventReading): void
  /** Returns the interval's items and starts a new interval. */
  drain(attribute?: ProcessAttributor): GpuReportItem[]
  /** Events refused because a GPU had more than {@link MAX_EVENTS_PER_GPU} in the interval. */
  readonly droppedEvents: number
}

export function createGpuFold(): GpuFold {
  let items = new Map<string, ItemAcc>()
  let droppedEvents = 0

  const item = (
    source: 'nvml' | 'dcgm',
    uuid: string,
    index: number,
    mig: MigIdentity | undefined,
  ): ItemAcc => {
    const key = itemKey(uuid, mig)
    let it = items.get(key)
    if (it === undefined) {
      it = {
        source,
        uuid,
        index,
        ...(mig !== undefined ? { mig } : {}),
        samples: 0,
        fields: new Map(),
        reasonsSeen: 0,
        unsupported: new Set(),
        events: [],
        procs: new Map(),
      }
      items.set(key, it)
    }
    return it
  }

  return {
    get droppedEvents() {
      return droppedEvents
    },
    add(reading) {
      for (const d of reading.devices) {
        const it = item(reading.source, d.uuid, d.index, d.mig)
        it.source = reading.source
        it.index = d.index
        if (d.name !== undefined) it.name = d.name
        if (d.pciBusId !== undefined) it.pciBusId = d.pciBusId
        if (d.mig !== undefined) it.mig = d.mig
        if (d.k8s !== undefined) it.k8s = d.k8s
        it.samples++
        for (const f of GPU_FIELDS) {
          const v = d.values[f]
          if (v === undefined) continue
          let acc = it.fields.get(f)
          if (acc === undefined) it.fields.set(f, (acc = new Acc()))
          acc.add(v)
          if (f === 'clockEventReasons') it.reasonsSeen = (it.reasonsSeen | v) >>> 0
        }
        for (const u of d.unsupported ?? []) it.unsupported.add(u)
      }
      for (const p of reading.processes) {
        const it = item(reading.source, p.uuid, p.index, undefined)
        let pa = it.procs.get(p.pid)
        if (pa === undefined) {
          pa = { pid: p.pid, mem: new Acc(), sm: new Acc(), memUtil: new Acc() }
          it.procs.set(p.pid, pa)
        }
        if (p.gpuInstanceId !== undefined) pa.gpuInstanceId = p.gpuInstanceId
        if (p.computeInstanceId !== undefined) pa.computeInstanceId = p.computeInstanceId
        if (p.usedMemoryBytes !== undefined) pa.mem.add(p.usedMemoryBytes)
        if (p.smUtilPct !== undefined) pa.sm.add(p.smUtilPct)
        if (p.memUtilPct !== undefined) pa.memUtil.add(p.memUtilPct)
      }
    },
    event(e) {
      const it = item(e.source ?? 'nvml', e.uuid, e.index, undefined)
      if (it.events.length >= MAX_EVENTS_PER_GPU) {
        droppedEvents++
        return
      }
      it.events.push({
        timeMs: Math.max(0, Math.round(e.timeMs)),
        kind: e.kind,
        ...(e.xid !== undefined ? { xid: e.xid } : {}),
        ...(e.data !== undefined ? { data: e.data } : {}),
        ...(e.gpuInstanceId !== undefined ? { gpuInstanceId: e.gpuInstanceId } : {}),
        ...(e.computeInstanceId !== undefined ? { computeInstanceId: e.computeInstanceId } : {}),
        ...(e.message !== undefined ? { message: e.message.slice(0, 1024) } : {}),
      })
    },
    drain(attribute) {
      const out: GpuReportItem[] = []
      const done = items
      items = new Map()
      for (const it of done.values()) {
        if (it.samples === 0 && it.events.length === 0 && it.procs.size === 0) continue
        const fields: Partial<Record<GpuField, GpuStat>> = {}
        for (const [f, acc] of it.fields) {
          const s = acc.stat()
          if (s !== undefined) fields[f] = s
        }
        const processes: GpuProcess[] = []
        for (const p of it.procs.values()) {
          const a = attribute?.(p.pid)
          const mem = p.mem.stat()
          const sm = p.sm.stat()
          const mu = p.memUtil.stat()
          processes.push({
            pid: p.pid,
            ...(p.gpuInstanceId !== undefined ? { gpuInstanceId: p.gpuInstanceId } : {}),
            ...(p.computeInstanceId !== undefined ? { computeInstanceId: p.computeInstanceId } : {}),
            ...(mem !== undefined ? { usedMemoryBytes: mem } : {}),
            ...(sm !== undefined ? { smUtilPct: sm } : {}),
            ...(mu !== undefined ? { memUtilPct: mu } : {}),
            ...(a?.replica !== undefined ? { replica: a.replica } : {}),
            ...(a?.podUid !== undefined ? { podUid: a.podUid } : {}),
            ...(a?.containerId !== undefined ? { containerId: a.containerId } : {}),
          })
        }
        processes.sort((x, y) => x.pid - y.pid)
        out.push({
          source: it.source,
          uuid: it.uuid,
          index: it.index,
          ...(it.name !== undefined ? { name: it.name } : {}),
          ...(it.pciBusId !== undefined ? { pciBusId: it.pciBusId } : {}),
          ...(it.mig !== undefined ? { mig: { ...it.mig } } : {}),
          samples: it.samples,
          fields,
          ...(it.reasonsSeen !== 0 ? { clockEventReasonsSeen: clockEventReasonNames(it.reasonsSeen) } : {}),
          ...(it.unsupported.size > 0 ? { unsupported: [...it.unsupported].sort() } : {}),
          ...(it.events.length > 0 ? { events: it.events } : {}),
          ...(processes.length > 0 ? { processes } : {}),
          ...(it.k8s !== undefined ? { k8s: { ...it.k8s } } : {}),
        })
      }
      out.sort((a, b) => a.index - b.index || (a.mig?.gpuInstanceId ?? -1) - (b.mig?.gpuInstanceId ?? -1))
      return out
    },
  }
}

/**
 * Pure transforms of the GPU API's responses into what the GPU page draws: inventory rows, chart rows per GPU,
 * events and processes beside their replica's latency. No DOM, no React.
 *
 * @example
 * ```ts
 * const rows = gpuTableRows(inventory)          // one row per GPU or MIG instance
 * const chart = gpuChartRows(util, mem, rows[0].key) // [{ tMs, utilPct, memUsedGiB }]
 * ```
 */
import type { GpuIdentity, GpuInfo, GpuReplicaUse, GpuTimeseriesResponse, GpusResponse } from './gpu-types.js'

const DASH = '–'
const GIB = 1024 ** 3

/** Rounds to `digits` significant digits and drops trailing zeros. */
function sig(value: number, digits: number): string {
  if (value === 0) return '0'
  return String(Number(value.toPrecision(digits)))
}

/**
 * A stable key per GPU row: node, physical UUID, MIG instance and source.
 *
 * @example gpuKey({ node: 'n0', uuid: 'GPU-1', mig: null, source: 'nvml', … }) // 'n0/GPU-1/-/nvml'
 */
export function gpuKey(g: Pick<GpuIdentity, 'node' | 'uuid' | 'mig' | 'source'>): string {
  const mig = g.mig ? `${g.mig.gpuInstanceId}.${g.mig.computeInstanceId ?? ''}` : '-'
  return `${g.node}/${g.uuid}/${mig}/${g.source}`
}

/**
 * How a GPU is named on the page: its index, and the MIG instance for one.
 *
 * @example gpuLabel({ index: 1, mig: { gpuInstanceId: 3, computeInstanceId: 0, … } }) // 'GPU 1 · MIG 3/0'
 */
export function gpuLabel(g: Pick<GpuIdentity, 'index' | 'mig'>): string {
  return g.mig ? `GPU ${g.index} · ${migLabel(g.mig)}` : `GPU ${g.index}`
}

/**
 * A MIG instance as text: GPU/compute instance ids and the profile where known; an en dash for a whole GPU.
 *
 * @example migLabel({ gpuInstanceId: 3, computeInstanceId: 0, profile: '1g.10gb', uuid: null }) // 'MIG 3/0 (1g.10gb)'
 */
export function migLabel(mig: GpuIdentity['mig']): string {
  if (!mig) return DASH
  const ids =
    mig.computeInstanceId === null ? `${mig.gpuInstanceId}` : `${mig.gpuInstanceId}/${mig.computeInstanceId}`
  return `MIG ${ids}${mig.profile ? ` (${mig.profile})` : ''}`
}

/**
 * Bytes as GiB/MiB text, three significant digits.
 *
 * @example formatBytes(12 * 1024 ** 3) // '12 GiB'
 */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return DASH
  if (Math.abs(bytes) >= GIB) return `${sig(bytes / GIB, 3)} GiB`
  if (Math.abs(bytes) >= 1024 ** 2) return `${sig(bytes / 1024 ** 2, 3)} MiB`
  return `${sig(bytes / 1024, 3)} KiB`
}

/**
 * A value with a unit: whole numbers from 100 up, else three significant digits; an en dash when absent.
 *
 * @example formatUnit(251.5, 'W') // '252 W'
 */
export function formatUnit(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return DASH
  const text = Math.abs(value) >= 100 ? String(Math.round(value)) : sig(value, 3)
  return `${text}${unit === '%' ? '' : ' '}${unit}`
}

/** One row of the inventory table, values already chosen (the last value of the newest report). */
export interface GpuTableRow {
  readonly key: string
  readonly node: string
  readonly label: string
  readonly uuid: string
  readonly name: string
  readonly mig: string
  readonly utilPct: number | null
  /** Mean utilization over the newest report's interval. */
  readonly utilMeanPct: number | null
  readonly memUsedBytes: number | null
  readonly memTotalBytes: number | null
  /** Used out of total, 0..1, where both are known. */
  readonly memRatio: number | null
  readonly powerW: number | null
  readonly temperatureC: number | null
  readonly smClockMhz: number | null
  readonly memClockMhz: number | null
  readonly throttleReasons: readonly string[]
  readonly lastSeenMs: number
  readonly processCount: number
  readonly eventCount: number
}

const last = (g: GpuInfo, f: string): number | null => g.fields[f]?.last ?? null

/**
 * The inventory table's rows, in the collector's order (node, index, MIG instance).
 *
 * @example gpuTableRows({ gpus, replicas: [] })[0].utilPct // 93
 */
export function gpuTableRows(r: Pick<GpusResponse, 'gpus'>): GpuTableRow[] {
  return r.gpus.map((g) => {
    const used = last(g, 'memUsedBytes')
    const total = last(g, 'memTotalBytes')
    return {
      key: gpuKey(g),
      node: g.node,
      label: gpuLabel(g),
      uuid: g.uuid,
      name: g.name ?? DASH,
      mig: migLabel(g.mig),
      utilPct: last(g, 'gpuUtilPct'),
      utilMeanPct: g.fields.gpuUtilPct?.mean ?? null,
      memUsedBytes: used,
      memTotalBytes: total,
      memRatio: used !== null && total !== null && total > 0 ? used / total : null,
      powerW: last(g, 'powerW'),
      temperatureC: last(g, 'temperatureC'),
      smClockMhz: last(g, 'smClockMhz'),
      memClockMhz: last(g, 'memClockMhz'),
      throttleReasons: g.clockEventReasonsSeen,
      lastSeenMs: Date.parse(g.lastSeen),
      processCount: g.processes.length,
      eventCount: g.events.length,
    }
  })
}

/** One point of a GPU's chart: utilization (mean over the bucket) and memory used (max, GiB). */
export interface GpuChartRow {
  readonly tMs: number
  readonly utilPct: number | null
  readonly utilMaxPct: number | null
  readonly memUsedGiB: number | null
}

/**
 * Joins a GPU's utilization and memory series (two `/gpus/timeseries` answers) on time, oldest first. A bucket
 * present in only one of them has `null` for the other, so the chart leaves a gap instead of drawing zero.
 *
 * @example gpuChartRows(utilResponse, memResponse, 'n0/GPU-1/-/nvml') // [{ tMs, utilPct: 71, utilMaxPct: 93, memUsedGiB: 12 }]
 */
export function gpuChartRows(
  util: Pick<GpuTimeseriesResponse, 'gpus'> | null,
  mem: Pick<GpuTimeseriesResponse, 'gpus'> | null,
  key: string,
): GpuChartRow[] {
  const rows = new Map<
    number,
    { utilPct: number | null; utilMaxPct: number | null; memUsedGiB: number | null }
  >()
  const row = (t: number) => {
    let r = rows.get(t)
    if (!r) rows.set(t, (r = { utilPct: null, utilMaxPct: null, memUsedGiB: null }))
    return r
  }
  for (const p of util?.gpus.find((g) => gpuKey(g) === key)?.points ?? []) {
    const r = row(Date.parse(p.t))
    r.utilPct = p.mean
    r.utilMaxPct = p.max
  }
  for (const p of mem?.gpus.find((g) => gpuKey(g) === key)?.points ?? [])
    row(Date.parse(p.t)).memUsedGiB = p.max / GIB
  return [...rows.entries()].sort((a, b) => a[0] - b[0]).map(([tMs, r]) => ({ tMs, ...r }))
}

/** One GPU event on the page, newest first. */
export interface GpuEventRow {
  readonly key: string
  readonly tMs: number
  readonly node: string
  readonly gpu: string
  readonly kind: string
  /** `XID 79`, `ecc_double_bit`, … */
  readonly what: string
  readonly message: string
}

/**
 * Every GPU's recent events, newest first.
 *
 * @example gpuEventRows(inventory)[0].what // 'XID 79'
 */
export function gpuEventRows(r: Pick<GpusResponse, 'gpus'>): GpuEventRow[] {
  const out: GpuEventRow[] = []
  for (const g of r.gpus)
    g.events.forEach((e, i) =>
      out.push({
        key: `${gpuKey(g)}#${e.time}#${i}`,
        tMs: Date.parse(e.time),
        node: g.node,
        gpu: gpuLabel(g),
        kind: e.kind,
        what: e.kind === 'xid' && e.xid !== null ? `XID ${e.xid}` : e.kind,
        message: e.message ?? '',
      }),
    )
  return out.sort((a, b) => b.tMs - a.tMs || a.key.localeCompare(b.key))
}

/** One process on a GPU, with the replica it belongs to and that replica's latency (when attributed). */
export interface GpuProcessRow {
  readonly key: string
  readonly node: string
  readonly gpu: string
  readonly pid: number
  readonly usedMemoryBytes: number | null
  readonly smUtilPct: number | null
  /** `service/model@version replica`, or `null` when the agent could not attribute the process. */
  readonly replica: string | null
  readonly p50Ms: number | null
  readonly p99Ms: number | null
  /** Pod UID or container id, where the agent read one from the process's cgroup. */
  readonly container: string | null
}

/**
 * Every GPU process of the newest reports, attributed ones joined to their replica's latency.
 *
 * @example gpuProcessRows(inventory).find((p) => p.pid === 4242)?.replica // 'chat/llama@3 r0'
 */
export function gpuProcessRows(r: GpusResponse): GpuProcessRow[] {
  const latency = new Map<string, GpuReplicaUse['latency']>()
  const replicaKey = (
    x: { service: string; model: string; version: string; replica: string },
    node: string,
  ) => [x.service, x.model, x.version, x.replica, node].join('\u0000')
  for (const rep of r.replicas) latency.set(replicaKey(rep, rep.node), rep.latency)
  const out: GpuProcessRow[] = []
  for (const g of r.gpus)
    for (const p of g.processes) {
      const lat = p.replica ? latency.get(replicaKey(p.replica, g.node)) : undefined
      out.push({
        key: `${gpuKey(g)}#${p.pid}`,
        node: g.node,
        gpu: gpuLabel(g),
        pid: p.pid,
        usedMemoryBytes: p.usedMemoryBytes?.last ?? null,
        smUtilPct: p.smUtilPct?.mean ?? null,
        replica: p.replica
          ? `${p.replica.service}/${p.replica.model}@${p.replica.version} ${p.replica.replica}`
          : null,
        p50Ms: lat?.p50Ms ?? null,
        p99Ms: lat?.p99Ms ?? null,
        container: p.podUid ?? p.containerId?.slice(0, 12) ?? null,
      })
    }
  return out
}

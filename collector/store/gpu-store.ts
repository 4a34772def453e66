import { sql } from 'kysely'
import type { Kysely, Transaction } from 'kysely'
import { GPU_FIELDS } from '../report/index.js'
import type { GpuField, GpuReportItem, GpuStat, IntervalReport } from '../report/index.js'
import { fetchTerms, floorTo, rowCounts } from './levels.js'
import type { Segment } from './levels.js'
import { claimGroups } from './rollup.js'
import type { DB, GpuTable } from './schema.js'
import type {
  EpochMs,
  GpuEventInfo,
  GpuIdentity,
  GpuInfo,
  GpuPoint,
  GpuProcessInfo,
  GpuSelector,
  GpuSeries,
  TimeRange,
} from './types.js'

type Db = Kysely<DB> | Transaction<DB>

/** Rows per multi-row INSERT (the widest GPU table has 12 columns: stays under SQLite's 32,766 parameters). */
const INSERT_CHUNK_ROWS = 500
/** How far back {@link loadGpus} lists events. @example loadEvents(db, { fromMs: now - GPU_RECENT_EVENTS_MS, toMs: now }, {}) */
export const GPU_RECENT_EVENTS_MS = 3600_000
/** Events listed per GPU in the inventory at most (newest first). */
const MAX_INVENTORY_EVENTS_PER_GPU = 50
const FIELD_SET: ReadonlySet<string> = new Set(GPU_FIELDS)

/** The state of one GPU item kept in `tg_gpu.state` (JSON). */
interface GpuState {
  readonly samples: number
  readonly fields: Partial<Record<GpuField, GpuStat>>
  readonly clockEventReasonsSeen: readonly string[]
  readonly unsupported: readonly string[]
  readonly k8s: GpuReportItem['k8s'] | null
}

const isStat = (s: GpuStat | undefined): s is GpuStat =>
  s !== undefined &&
  Number.isFinite(s.min) &&
  Number.isFinite(s.mean) &&
  Number.isFinite(s.max) &&
  Number.isFinite(s.last)

function keyOf(node: string, item: GpuReportItem): string {
  return [
    node,
    item.uuid,
    item.mig?.gpuInstanceId ?? -1,
    item.mig?.computeInstanceId ?? -1,
    item.source,
  ].join('\u0000')
}

function rowKey(r: { node: string; uuid: string; mig_gi: number; mig_ci: number; source: string }): string {
  return [r.node, r.uuid, Number(r.mig_gi), Number(r.mig_ci), r.source].join('\u0000')
}

/**
 * Writes a report's GPU items inside the report's ingest transaction (after its dedupe key was inserted, so a
 * retried report writes nothing here): upserts each GPU's identity and newest state, appends one stat row per
 * GPU and field on the finest level, the events, and the processes with their replica attribution.
 *
 * @example await ingestGpus(trx, report, receivedAtMs, 10_000)
 */
export async function ingestGpus(
  trx: Db,
  report: IntervalReport,
  receivedAtMs: EpochMs,
  finestMs: number,
): Promise<void> {
  const items = report.gpus ?? []
  if (items.length === 0) return
  const node = report.agent.node
  const bucketMs = floorTo(report.intervalStartMs, finestMs)
  const seenMs = Math.min(report.intervalEndMs, receivedAtMs)
  const reportMs = report.intervalEndMs
  // One upsert row per key (PostgreSQL refuses to update one row twice in a statement); the last item wins.
  const byKey = new Map<string, GpuReportItem>()
  for (const item of items) byKey.set(keyOf(node, item), item)
  const upserts = [...byKey.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1))
  const ids = new Map<string, number>()
  for (let i = 0; i < upserts.length; i += INSERT_CHUNK_ROWS) {
    const rows = await trx
      .insertInto('tg_gpu')
      .values(
        upserts.slice(i, i + INSERT_CHUNK_ROWS).map(([, item]) => ({
          node,
          uuid: item.uuid,
          mig_gi: item.mig?.gpuInstanceId ?? -1,
          mig_ci: item.mig?.computeInstanceId ?? -1,
          source: item.source,
          gpu_index: item.index,
          name: item.name ?? null,
          pci_bus_id: item.pciBusId ?? null,
          mig_uuid: item.mig?.uuid ?? null,
          mig_profile: item.mig?.profile ?? null,
          first_seen_ms: seenMs,
          last_seen_ms: seenMs,
          last_report_ms: reportMs,
          state: JSON.stringify(stateOf(item)),
        })),
      )
      .onConflict((oc) =>
        oc.columns(['node', 'uuid', 'mig_gi', 'mig_ci', 'source']).doUpdateSet({
          last_seen_ms: sql<number>`case when excluded.last_seen_ms > tg_gpu.last_seen_ms then excluded.last_seen_ms else tg_gpu.last_seen_ms end`,
          first_seen_ms: sql<number>`case when excluded.first_seen_ms < tg_gpu.first_seen_ms then excluded.first_seen_ms else tg_gpu.first_seen_ms end`,
          // Identity and state follow the newest report; a late (spooled) report does not roll them back.
          ...Object.fromEntries(
            (
              [
                'gpu_index',
                'name',
                'pci_bus_id',
                'mig_uuid',
                'mig_profile',
                'state',
                'last_report_ms',
              ] as const
            ).map((c) => [
              c,
              sql`case when excluded.last_report_ms >= tg_gpu.last_report_ms then excluded.${sql.ref(c)} else tg_gpu.${sql.ref(c)} end`,
            ]),
          ),
        }),
      )
      .returning(['id', 'node', 'uuid', 'mig_gi', 'mig_ci', 'source'])
      .execute()
    for (const r of rows) ids.set(rowKey(r), Number(r.id))
  }

  const stats: Array<DB['tg_gpu_stat'] extends infer R ? { [K in keyof R]: R[K] } : never> = []
  const events: Array<DB['tg_gpu_event']> = []
  const processes: Array<DB['tg_gpu_process']> = []
  for (const item of items) {
    const gpuId = ids.get(keyOf(node, item))!
    const weight = Math.max(1, item.samples)
    for (const [field, stat] of Object.entries(item.fields) as Array<[GpuField, GpuStat | undefined]>) {
      if (!isStat(stat)) continue
      stats.push({
        step_ms: finestMs,
        bucket_ms: bucketMs,
        gpu_id: gpuId,
        field,
        consumed: 0,
        samples: weight,
        min_value: stat.min,
        mean_value: stat.mean,
        max_value: stat.max,
        last_value: stat.last,
        last_ms: reportMs,
      })
    }
    for (const e of item.events ?? [])
      events.push({
        gpu_id: gpuId,
        time_ms: e.timeMs,
        kind: e.kind,
        xid: e.xid ?? null,
        data: e.data !== undefined && Number.isFinite(e.data) ? e.data : null,
        gpu_instance_id: e.gpuInstanceId ?? null,
        compute_instance_id: e.computeInstanceId ?? null,
        message: e.message ?? null,
      })
    for (const p of item.processes ?? [])
      processes.push({
        gpu_id: gpuId,
        time_ms: reportMs,
        pid: p.pid,
        gpu_instance_id: p.gpuInstanceId ?? null,
        compute_instance_id: p.computeInstanceId ?? null,
        service: p.replica?.service ?? null,
        model: p.replica?.model ?? null,
        version: p.replica?.version ?? null,
        replica: p.replica?.replica ?? null,
        pod_uid: p.podUid ?? null,
        container_id: p.containerId ?? null,
        stats: JSON.stringify({
          ...(isStat(p.usedMemoryBytes) ? { usedMemoryBytes: p.usedMemoryBytes } : {}),
          ...(isStat(p.smUtilPct) ? { smUtilPct: p.smUtilPct } : {}),
          ...(isStat(p.memUtilPct) ? { memUtilPct: p.memUtilPct } : {}),
        }),
      })
  }
  for (let i = 0; i < stats.length; i += INSERT_CHUNK_ROWS)
    await trx
      .insertInto('tg_gpu_stat')
      .values(stats.slice(i, i + INSERT_CHUNK_ROWS))
      .execute()
  for (let i = 0; i < events.length; i += INSERT_CHUNK_ROWS)
    await trx
      .insertInto('tg_gpu_event')
      .values(events.slice(i, i + INSERT_CHUNK_ROWS))
      .execute()
  for (let i = 0; i < processes.length; i += INSERT_CHUNK_ROWS)
    await trx
      .insertInto('tg_gpu_process')
      .values(processes.slice(i, i + INSERT_CHUNK_ROWS))
      .execute()
}

function stateOf(item: GpuReportItem): GpuState {
  const fields: Partial<Record<GpuField, GpuStat>> = {}
  for (const [f, s] of Object.entries(item.fields) as Array<[GpuField, GpuStat | undefined]>)
    if (isStat(s)) fields[f] = s
  return {
    samples: item.samples,
    fields,
    clockEventReasonsSeen: item.clockEventReasonsSeen ?? [],
    unsupported: item.unsupported ?? [],
    k8s: item.k8s ?? null,
  }
}

type GpuRow = Pick<
  GpuTable,
  | 'node'
  | 'uuid'
  | 'mig_gi'
  | 'mig_ci'
  | 'source'
  | 'gpu_index'
  | 'name'
  | 'pci_bus_id'
  | 'mig_uuid'
  | 'mig_profile'
>

function identityOf(r: GpuRow): GpuIdentity {
  const gi = Number(r.mig_gi)
  const ci = Number(r.mig_ci)
  return {
    node: r.node,
    uuid: r.uuid,
    index: Number(r.gpu_index),
    name: r.name,
    pciBusId: r.pci_bus_id,
    source: r.source,
    mig:
      gi < 0
        ? null
        : {
            gpuInstanceId: gi,
            computeInstanceId: ci < 0 ? null : ci,
            uuid: r.mig_uuid,
            profile: r.mig_profile,
          },
  }
}

const GPU_COLUMNS = [
  'id',
  'node',
  'uuid',
  'mig_gi',
  'mig_ci',
  'source',
  'gpu_index',
  'name',
  'pci_bus_id',
  'mig_uuid',
  'mig_profile',
] as const

/** Orders GPUs by node, index, MIG instance and source. */
function compareGpus(a: GpuIdentity, b: GpuIdentity): number {
  return (
    a.node.localeCompare(b.node) ||
    a.index - b.index ||
    (a.mig?.gpuInstanceId ?? -1) - (b.mig?.gpuInstanceId ?? -1) ||
    (a.mig?.computeInstanceId ?? -1) - (b.mig?.computeInstanceId ?? -1) ||
    a.source.localeCompare(b.source) ||
    a.uuid.localeCompare(b.uuid)
  )
}

const nullableNumber = (v: number | null): number | null => (v === null ? null : Number(v))

/**
 * The GPU inventory: every GPU with its newest state, its events since `nowMs - 1 h`, and the processes of its
 * newest report.
 *
 * @example const gpus = await loadGpus(trx, Date.now())
 */
export async function loadGpus(db: Db, nowMs: EpochMs): Promise<GpuInfo[]> {
  const gpus = await db
    .selectFrom('tg_gpu')
    .select([...GPU_COLUMNS, 'first_seen_ms', 'last_seen_ms', 'last_report_ms', 'state'])
    .execute()
  if (gpus.length === 0) return []
  const events = await loadEvents(db, { fromMs: nowMs - GPU_RECENT_EVENTS_MS, toMs: nowMs + 1 }, {})
  const eventsById = new Map<number, GpuEventInfo[]>()
  for (const e of events) {
    const list = eventsById.get(e.gpuId) ?? []
    if (list.length < MAX_INVENTORY_EVENTS_PER_GPU) list.push(e.info)
    eventsById.set(e.gpuId, list)
  }
  const procRows = await db
    .selectFrom('tg_gpu_process as p')
    .innerJoin('tg_gpu as g', (j) =>
      j.onRef('g.id', '=', 'p.gpu_id').onRef('g.last_report_ms', '=', 'p.time_ms'),
    )
    .select([
      'p.gpu_id',
      'p.time_ms',
      'p.pid',
      'p.gpu_instance_id',
      'p.compute_instance_id',
      'p.service',
      'p.model',
      'p.version',
      'p.replica',
      'p.pod_uid',
      'p.container_id',
      'p.stats',
    ])
    .orderBy('p.pid')
    .execute()
  const procsById = new Map<number, GpuProcessInfo[]>()
  for (const p of procRows) {
    const stats = JSON.parse(p.stats) as {
      usedMemoryBytes?: GpuStat
      smUtilPct?: GpuStat
      memUtilPct?: GpuStat
    }
    const info: GpuProcessInfo = {
      pid: Number(p.pid),
      timeMs: Number(p.time_ms),
      gpuInstanceId: nullableNumber(p.gpu_instance_id),
      computeInstanceId: nullableNumber(p.compute_instance_id),
      usedMemoryBytes: stats.usedMemoryBytes ?? null,
      smUtilPct: stats.smUtilPct ?? null,
      memUtilPct: stats.memUtilPct ?? null,
      replica:
        p.service === null
          ? null
          : { service: p.service, model: p.model ?? '', version: p.version ?? '', replica: p.replica ?? '' },
      podUid: p.pod_uid,
      containerId: p.container_id,
    }
    const id = Number(p.gpu_id)
    const list = procsById.get(id)
    if (list) list.push(info)
    else procsById.set(id, [info])
  }
  return gpus
    .map((g): GpuInfo => {
      const state = JSON.parse(g.state) as GpuState
      return {
        ...identityOf(g),
        firstSeenMs: Number(g.first_seen_ms),
        lastSeenMs: Number(g.last_seen_ms),
        lastReportMs: Number(g.last_report_ms),
        samples: state.samples,
        fields: state.fields,
        clockEventReasonsSeen: state.clockEventReasonsSeen,
        unsupported: state.unsupported,
        k8s: state.k8s ?? null,
        events: eventsById.get(Number(g.id)) ?? [],
        processes: procsById.get(Number(g.id)) ?? [],
      }
    })
    .sort(compareGpus)
}

/**
 * GPU events in `[fromMs, toMs)` on the selected GPUs, newest first.
 *
 * @example const events = await loadEvents(db, { fromMs, toMs }, { node: 'gpu-node-1' })
 */
export async function loadEvents(
  db: Db,
  range: TimeRange,
  selector: GpuSelector,
): Promise<Array<{ gpuId: number; info: GpuEventInfo }>> {
  let q = db
    .selectFrom('tg_gpu_event as e')
    .innerJoin('tg_gpu as g', 'g.id', 'e.gpu_id')
    .select([
      'g.id',
      'g.node',
      'g.uuid',
      'g.mig_gi',
      'g.mig_ci',
      'g.source',
      'g.gpu_index',
      'g.name',
      'g.pci_bus_id',
      'g.mig_uuid',
      'g.mig_profile',
      'e.time_ms',
      'e.kind',
      'e.xid',
      'e.data',
      'e.gpu_instance_id',
      'e.compute_instance_id',
      'e.message',
    ])
    .where('e.time_ms', '>=', range.fromMs)
    .where('e.time_ms', '<', range.toMs)
  if (selector.node !== undefined) q = q.where('g.node', '=', selector.node)
  if (selector.uuid !== undefined) q = q.where('g.uuid', '=', selector.uuid)
  const rows = await q.orderBy('e.time_ms', 'desc').orderBy('g.node').orderBy('g.gpu_index').execute()
  return rows.map((r) => ({
    gpuId: Number(r.id),
    info: {
      ...identityOf(r),
      timeMs: Number(r.time_ms),
      kind: r.kind,
      xid: nullableNumber(r.xid),
      data: nullableNumber(r.data),
      gpuInstanceId: nullableNumber(r.gpu_instance_id),
      computeInstanceId: nullableNumber(r.compute_instance_id),
      message: r.message,
    },
  }))
}

interface StatRow {
  gpu_id: number
  step_ms: number
  bucket_ms: number
  consumed: number
  samples: number
  min_value: number
  mean_value: number
  max_value: number
  last_value: number
  last_ms: number
}

/** The columns of a folded stat row (`tg_gpu_stat`, `tg_signal`) that {@link mergeStats} reads. */
export type FoldedStatRow = Pick<
  StatRow,
  'samples' | 'min_value' | 'mean_value' | 'max_value' | 'last_value' | 'last_ms'
>

/**
 * Merges folded stat rows: min of mins, max of maxes, sample-weighted mean, and the newest `last`.
 *
 * @example mergeStats(rows) // { min, mean, max, last, samples, lastMs }
 */
export function mergeStats(
  rows: readonly FoldedStatRow[],
): Omit<GpuPoint, 'tMs'> & { samples: number; lastMs: number } {
  let samples = 0
  let sum = 0
  let min = Infinity
  let max = -Infinity
  let last = 0
  let lastMs = -Infinity
  for (const r of rows) {
    const n = Number(r.samples)
    samples += n
    sum += Number(r.mean_value) * n
    min = Math.min(min, Number(r.min_value))
    max = Math.max(max, Number(r.max_value))
    if (Number(r.last_ms) >= lastMs) {
      lastMs = Number(r.last_ms)
      last = Number(r.last_value)
    }
  }
  return { min, max, mean: samples > 0 ? sum / samples : 0, last, samples, lastMs }
}

/**
 * One field's series per GPU, read from the segments a query plan chose (coarsest rollups that fit, finer
 * unconsumed rows included), bucketed on `stepMs`.
 *
 * @example const series = await readGpuSeries(trx, { node: 'n0' }, segments, steps, 'gpuUtilPct', 60_000)
 */
export async function readGpuSeries(
  db: Db,
  selector: GpuSelector,
  segments: readonly Segment[],
  steps: readonly number[],
  field: GpuField,
  stepMs: number,
  maxRangesPerLevel: number,
): Promise<GpuSeries[]> {
  if (!FIELD_SET.has(field)) return []
  let gq = db.selectFrom('tg_gpu').select(GPU_COLUMNS)
  if (selector.node !== undefined) gq = gq.where('node', '=', selector.node)
  if (selector.uuid !== undefined) gq = gq.where('uuid', '=', selector.uuid)
  const gpus = await gq.execute()
  if (gpus.length === 0) return []
  const terms = fetchTerms(segments, steps, maxRangesPerLevel)
  if (terms.length === 0) return []
  const ids = gpus.map((g) => Number(g.id))
  const filtered = selector.node !== undefined || selector.uuid !== undefined
  const read = (t: (typeof terms)[number]) => {
    let q = db
      .selectFrom('tg_gpu_stat')
      .select([
        'gpu_id',
        'step_ms',
        'bucket_ms',
        'consumed',
        'samples',
        'min_value',
        'mean_value',
        'max_value',
        'last_value',
        'last_ms',
      ])
      .where('field', '=', field)
      .where('step_ms', '=', t.stepMs)
      .where('consumed', 'in', t.unconsumedOnly ? [0] : [0, 1])
      .where('bucket_ms', '>=', t.fromMs)
      .where('bucket_ms', '<', t.toMs)
    if (filtered) q = q.where('gpu_id', 'in', ids)
    return q
  }
  let q = read(terms[0]!)
  for (const t of terms.slice(1)) q = q.unionAll(read(t))
  const rows = (await q.execute()).filter((r) =>
    rowCounts(segments, {
      stepMs: Number(r.step_ms),
      bucketMs: Number(r.bucket_ms),
      consumed: Number(r.consumed) === 1,
    }),
  )
  const byGpu = new Map<number, Map<number, StatRow[]>>()
  for (const r of rows) {
    const id = Number(r.gpu_id)
    const t = floorTo(Number(r.bucket_ms), stepMs)
    let buckets = byGpu.get(id)
    if (!buckets) byGpu.set(id, (buckets = new Map()))
    const list = buckets.get(t)
    if (list) list.push(r)
    else buckets.set(t, [r])
  }
  return gpus
    .filter((g) => byGpu.has(Number(g.id)))
    .map((g): GpuSeries => {
      const buckets = byGpu.get(Number(g.id))!
      return {
        ...identityOf(g),
        points: [...buckets.entries()]
          .sort((a, b) => a[0] - b[0])
          .map(([tMs, list]) => {
            const m = mergeStats(list)
            return { tMs, min: m.min, mean: m.mean, max: m.max, last: m.last }
          }),
      }
    })
    .sort(compareGpus)
}

/**
 * Rolls the finer level's unconsumed GPU stat rows of `[fromMs, toMs)` into one row per GPU, field and coarse
 * bucket (claim with `consumed = 1`, merge, insert: one transaction, as for `tg_count`). Returns the rows written.
 *
 * @example const n = await rollUpGpuStats(trx, 10_000, 60_000, fromMs, toMs)
 */
export async function rollUpGpuStats(
  trx: Transaction<DB>,
  fine: number,
  coarse: number,
  fromMs: number,
  toMs: number,
): Promise<number> {
  const groups = await claimGroups(
    trx,
    'tg_gpu_stat',
    ['gpu_id', 'field', 'samples', 'min_value', 'mean_value', 'max_value', 'last_value', 'last_ms'],
    fine,
    coarse,
    fromMs,
    toMs,
    (r) => `${r.gpu_id}\u0000${r.field}`,
  )
  const rows = groups.map((g) => {
    const m = mergeStats(g.rows)
    return {
      step_ms: coarse,
      bucket_ms: g.bucketMs,
      gpu_id: Number(g.rows[0]!.gpu_id),
      field: g.rows[0]!.field,
      consumed: 0,
      samples: m.samples,
      min_value: m.min,
      mean_value: m.mean,
      max_value: m.max,
      last_value: m.last,
      last_ms: m.lastMs,
    }
  })
  for (let i = 0; i < rows.length; i += INSERT_CHUNK_ROWS)
    await trx
      .insertInto('tg_gpu_stat')
      .values(rows.slice(i, i + INSERT_CHUNK_ROWS))
      .execute()
  return rows.length
}

/**
 * Retention of the GPU rows that are not rolled up: events older than `eventsBeforeMs` and process rows older
 * than `processesBeforeMs` are deleted (either `null`: kept). Returns the rows deleted.
 *
 * @example await deleteOldGpuRows(db, now - 14 * DAY, now - 2 * DAY)
 */
export async function deleteOldGpuRows(
  db: Db,
  eventsBeforeMs: number | null,
  processesBeforeMs: number | null,
): Promise<number> {
  let n = 0
  if (eventsBeforeMs !== null)
    n += Number(
      (await db.deleteFrom('tg_gpu_event').where('time_ms', '<', eventsBeforeMs).executeTakeFirst())
        .numDeletedRows,
    )
  if (processesBeforeMs !== null)
    n += Number(
      (await db.deleteFrom('tg_gpu_process').where('time_ms', '<', processesBeforeMs).executeTakeFirst())
        .numDeletedRows,
    )
  return n
}

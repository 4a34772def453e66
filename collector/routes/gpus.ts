import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { GPU_FIELDS, GpuStatSchema, summarizeMs } from '../report/index.js'
import type { GpuField } from '../report/index.js'
import type { GpuEventInfo, GpuIdentity, GpuInfo, GpuSelector } from '../store/types.js'
import { BadRequest } from '../errors.js'
import { isoTime, parseRange, resolveStepMs } from '../time.js'

/** The window over which `GET /gpus` reports each attributed replica's latency. */
const REPLICA_LATENCY_WINDOW_MS = 5 * 60_000
const FIELD_SET: ReadonlySet<string> = new Set(GPU_FIELDS)

const Str = Type.String()
const NullableStr = Type.Union([Type.String(), Type.Null()])
const NullableNum = Type.Union([Type.Number(), Type.Null()])
const NullableStat = Type.Union([GpuStatSchema, Type.Null()])

const GpuIdentitySchema = {
  node: Str,
  uuid: Str,
  index: Type.Integer(),
  name: NullableStr,
  pciBusId: NullableStr,
  source: Str,
  mig: Type.Union([
    Type.Object({
      gpuInstanceId: Type.Integer(),
      computeInstanceId: Type.Union([Type.Integer(), Type.Null()]),
      uuid: NullableStr,
      profile: NullableStr,
    }),
    Type.Null(),
  ]),
}
const GpuEventResponse = Type.Object({
  ...GpuIdentitySchema,
  time: Str,
  kind: Str,
  xid: Type.Union([Type.Integer(), Type.Null()]),
  data: NullableNum,
  gpuInstanceId: Type.Union([Type.Integer(), Type.Null()]),
  computeInstanceId: Type.Union([Type.Integer(), Type.Null()]),
  message: NullableStr,
})
const ReplicaRefSchema = Type.Object({ service: Str, model: Str, version: Str, replica: Str })
const GpuProcessResponse = Type.Object({
  pid: Type.Integer(),
  gpuInstanceId: Type.Union([Type.Integer(), Type.Null()]),
  computeInstanceId: Type.Union([Type.Integer(), Type.Null()]),
  usedMemoryBytes: NullableStat,
  smUtilPct: NullableStat,
  memUtilPct: NullableStat,
  replica: Type.Union([ReplicaRefSchema, Type.Null()]),
  podUid: NullableStr,
  containerId: NullableStr,
})
const GpuResponse = Type.Object({
  ...GpuIdentitySchema,
  firstSeen: Str,
  lastSeen: Str,
  lastReport: Str,
  samples: Type.Integer(),
  fields: Type.Record(Type.String(), GpuStatSchema),
  clockEventReasonsSeen: Type.Array(Str),
  unsupported: Type.Array(Str),
  k8s: Type.Union([
    Type.Object({
      namespace: Type.Optional(Str),
      pod: Type.Optional(Str),
      container: Type.Optional(Str),
    }),
    Type.Null(),
  ]),
  events: Type.Array(GpuEventResponse),
  processes: Type.Array(GpuProcessResponse),
})
const ReplicaGpuUse = Type.Object({
  service: Str,
  model: Str,
  version: Str,
  replica: Str,
  node: Str,
  gpus: Type.Array(
    Type.Object({
      uuid: Str,
      index: Type.Integer(),
      mig: Type.Union([Type.Object({ gpuInstanceId: Type.Integer() }), Type.Null()]),
      gpuUtilPct: NullableNum,
    }),
  ),
  pids: Type.Array(Type.Integer()),
  /** Sum over the replica's processes of their latest GPU memory. */
  usedMemoryBytes: NullableNum,
  /** Sum over the replica's processes of their mean SM utilization in the last report. */
  smUtilPct: NullableNum,
  latency: Type.Object({
    window: Str,
    count: Type.Integer(),
    p50Ms: NullableNum,
    p99Ms: NullableNum,
  }),
})
const GpusResponse = Type.Object({
  gpus: Type.Array(GpuResponse),
  replicas: Type.Array(ReplicaGpuUse),
})
const RangeQuery = {
  node: Type.Optional(Type.String({ maxLength: 256 })),
  uuid: Type.Optional(Type.String({ maxLength: 256 })),
  from: Type.Optional(
    Type.String({ maxLength: 64, description: 'ISO time, now, relative (-1h) or epoch ms; default -1h' }),
  ),
  to: Type.Optional(
    Type.String({ maxLength: 64, description: 'ISO time, now, relative or epoch ms; default now' }),
  ),
}
const GpuTimeseriesQuery = Type.Object(
  {
    ...RangeQuery,
    field: Type.Optional(
      Type.String({ maxLength: 64, description: `one of ${GPU_FIELDS.join(', ')}; default gpuUtilPct` }),
    ),
    step: Type.Optional(
      Type.String({ maxLength: 16, description: 'bucket width: 10s, 1m, 1h…; default fits ~60 points' }),
    ),
  },
  { additionalProperties: false },
)
const GpuTimeseriesResponse = Type.Object({
  from: Str,
  to: Str,
  field: Str,
  stepMs: Type.Integer(),
  gpus: Type.Array(
    Type.Object({
      ...GpuIdentitySchema,
      points: Type.Array(
        Type.Object({
          t: Str,
          min: Type.Number(),
          mean: Type.Number(),
          max: Type.Number(),
          last: Type.Number(),
        }),
      ),
    }),
  ),
})
const GpuEventsQuery = Type.Object(RangeQuery, { additionalProperties: false })
const GpuEventsResponse = Type.Object({ from: Str, to: Str, events: Type.Array(GpuEventResponse) })

const iso = isoTime

function identity(g: GpuIdentity): GpuIdentity {
  return {
    node: g.node,
    uuid: g.uuid,
    index: g.index,
    name: g.name,
    pciBusId: g.pciBusId,
    source: g.source,
    mig: g.mig,
  }
}

function eventOut(e: GpuEventInfo) {
  const { timeMs, ...rest } = e
  return { ...rest, time: iso(timeMs) }
}

/** Parses `?field=`; an unknown field is a 400 naming the parameter and the fields there are. @example parseGpuField('powerW') // 'powerW' */
export function parseGpuField(text: string | undefined): GpuField {
  if (text === undefined || text === '') return 'gpuUtilPct'
  if (!FIELD_SET.has(text))
    throw new BadRequest(`field: unknown GPU field '${text}'; expected one of ${GPU_FIELDS.join(', ')}`)
  return text as GpuField
}

function selectorOf(q: { node?: string; uuid?: string }): GpuSelector {
  const s: { -readonly [K in keyof GpuSelector]: string } = {}
  if (q.node) s.node = q.node
  if (q.uuid) s.uuid = q.uuid
  return s
}

const sumOrNull = (xs: readonly number[]): number | null =>
  xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0)

/**
 * Per replica (service, model, version, replica, node) that a GPU process was attributed to: its GPUs, PIDs,
 * GPU memory and SM utilization in the newest report, and its latency over the last 5 minutes.
 */
async function replicaUse(
  gpus: readonly GpuInfo[],
  latency: (sel: {
    service: string
    model: string
    version: string
    replica: string
    node: string
  }) => Promise<{ count: number; p50Ms: number | null; p99Ms: number | null }>,
) {
  const byReplica = new Map<
    string,
    {
      ref: { service: string; model: string; version: string; replica: string; node: string }
      gpus: Map<
        string,
        { uuid: string; index: number; mig: { gpuInstanceId: number } | null; gpuUtilPct: number | null }
      >
      pids: Set<number>
      mem: number[]
      sm: number[]
    }
  >()
  for (const g of gpus)
    for (const p of g.processes) {
      if (p.replica === null) continue
      const ref = { ...p.replica, node: g.node }
      const key = [ref.service, ref.model, ref.version, ref.replica, ref.node].join('\u0000')
      let r = byReplica.get(key)
      if (!r) byReplica.set(key, (r = { ref, gpus: new Map(), pids: new Set(), mem: [], sm: [] }))
      const gpuKey = `${g.uuid}/${g.mig?.gpuInstanceId ?? ''}`
      r.gpus.set(gpuKey, {
        uuid: g.uuid,
        index: g.index,
        mig: g.mig === null ? null : { gpuInstanceId: g.mig.gpuInstanceId },
        gpuUtilPct: g.fields.gpuUtilPct?.mean ?? null,
      })
      r.pids.add(p.pid)
      if (p.usedMemoryBytes) r.mem.push(p.usedMemoryBytes.last)
      if (p.smUtilPct) r.sm.push(p.smUtilPct.mean)
    }
  const out = []
  for (const r of [...byReplica.values()].sort((a, b) =>
    [a.ref.service, a.ref.model, a.ref.version, a.ref.replica, a.ref.node]
      .join('\u0000')
      .localeCompare([b.ref.service, b.ref.model, b.ref.version, b.ref.replica, b.ref.node].join('\u0000')),
  ))
    out.push({
      ...r.ref,
      gpus: [...r.gpus.values()],
      pids: [...r.pids].sort((a, b) => a - b),
      usedMemoryBytes: sumOrNull(r.mem),
      smUtilPct: sumOrNull(r.sm),
      latency: { window: '5m', ...(await latency(r.ref)) },
    })
  return out
}

/**
 * The GPU API (read scope): `GET /gpus` (inventory, current state, recent events, processes and the replicas
 * they belong to, beside each replica's latency), `GET /gpus/timeseries`, `GET /gpus/events`.
 *
 * @example
 * ```ts
 * await api.register(gpuRoutes) // under the /api/v1 prefix, as buildCollector does
 * const res = await app.inject({ url: '/api/v1/gpus', headers: { authorization: `Bearer ${readToken}` } })
 * ```
 */
export const gpuRoutes: FastifyPluginAsync = async (fastify) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.get(
    '/gpus',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'GPU inventory: current state, events of the last hour, processes and their replicas',
        response: { 200: GpusResponse },
      },
    },
    async () => {
      const nowMs = app.clock()
      const gpus = await app.store.gpus(nowMs)
      const window = { fromMs: nowMs - REPLICA_LATENCY_WINDOW_MS, toMs: nowMs }
      const replicas = await replicaUse(gpus, async (sel) => {
        const h = (await app.store.histograms(sel, window, ['total'])).get('total')
        const s = summarizeMs(h, ['0.5', '0.99'])
        return { count: s.count, p50Ms: s.quantiles['0.5'] ?? null, p99Ms: s.quantiles['0.99'] ?? null }
      })
      return {
        gpus: gpus.map((g) => ({
          ...identity(g),
          firstSeen: iso(g.firstSeenMs),
          lastSeen: iso(g.lastSeenMs),
          lastReport: iso(g.lastReportMs),
          samples: g.samples,
          fields: { ...g.fields },
          clockEventReasonsSeen: [...g.clockEventReasonsSeen],
          unsupported: [...g.unsupported],
          k8s: g.k8s === null ? null : { ...g.k8s },
          events: g.events.map(eventOut),
          processes: g.processes.map((p) => ({
            pid: p.pid,
            gpuInstanceId: p.gpuInstanceId,
            computeInstanceId: p.computeInstanceId,
            usedMemoryBytes: p.usedMemoryBytes,
            smUtilPct: p.smUtilPct,
            memUtilPct: p.memUtilPct,
            replica: p.replica,
            podUid: p.podUid,
            containerId: p.containerId,
          })),
        })),
        replicas,
      }
    },
  )

  app.get(
    '/gpus/timeseries',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'One GPU field per GPU over time (min, mean, max, last per bucket)',
        querystring: GpuTimeseriesQuery,
        response: { 200: GpuTimeseriesResponse },
      },
    },
    async (req) => {
      const q = req.query
      const field = parseGpuField(q.field)
      const range = parseRange(q.from, q.to, app.clock(), 3600_000)
      const stepMs = resolveStepMs(q.step, range, app.store.rollupStepsMs)
      const series = await app.store.gpuSeries(selectorOf(q), range, field, stepMs)
      return {
        from: iso(range.fromMs),
        to: iso(range.toMs),
        field,
        stepMs,
        gpus: series.map((s) => ({
          ...identity(s),
          points: s.points.map((p) => ({
            t: iso(p.tMs),
            min: p.min,
            mean: p.mean,
            max: p.max,
            last: p.last,
          })),
        })),
      }
    },
  )

  app.get(
    '/gpus/events',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'GPU events (XID, ECC, GPU lost, …) in a time range, newest first',
        querystring: GpuEventsQuery,
        response: { 200: GpuEventsResponse },
      },
    },
    async (req) => {
      const q = req.query
      const range = parseRange(q.from, q.to, app.clock(), 3600_000)
      const events = await app.store.gpuEvents(range, selectorOf(q))
      return { from: iso(range.fromMs), to: iso(range.toMs), events: events.map(eventOut) }
    },
  )
}

import { Type } from '@sinclair/typebox'
import type { Static, TOptional, TString } from '@sinclair/typebox'
import { METRICS } from './phases.js'

/**
 * The interval report an agent sends to `POST /api/v1/reports`: the collector owns this format.
 *
 * One report covers one interval of one agent instance. `(agent.instance, seq)` identifies it: a retry
 * of the same report is acknowledged again but never counted twice.
 *
 * @example
 * ```json
 * { "version": 1, "agent": { "id": "node-a", "instance": "6f1c…", "node": "node-a" }, "seq": 7,
 *   "intervalStartMs": 1763750000000, "intervalEndMs": 1763750005000,
 *   "series": [{ "labels": { "service": "chat", "model": "llama", "version": "3", "replica": "r0", "node": "node-a" },
 *                "histograms": { "total": "HISTFAAAA…" }, "requests": { "ok": 120, "error": 1, "shed": 0 },
 *                "errorClasses": { "timeout": 1 }, "outputTokens": 5400 }] }
 * ```
 */
export const REPORT_VERSION = 1

const LabelValue = Type.String({ maxLength: 256, pattern: '^[^\\u0000]*$' })
const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

export const SeriesLabelsSchema = Type.Object(
  {
    service: Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' }),
    model: LabelValue,
    version: LabelValue,
    replica: LabelValue,
    node: LabelValue,
  },
  { additionalProperties: false },
)

const metricProps = Object.fromEntries(
  METRICS.map((m) => [m, Type.Optional(Type.String({ minLength: 1, maxLength: 1_000_000 }))]),
) as Record<(typeof METRICS)[number], TOptional<TString>>

export const ReportSeriesSchema = Type.Object(
  {
    labels: SeriesLabelsSchema,
    /** Per metric (phase or token metric): an HdrHistogram in compressed base64, values in µs. */
    histograms: Type.Object(metricProps, { additionalProperties: false }),
    requests: Type.Object({ ok: Count, error: Count, shed: Count }, { additionalProperties: false }),
    errorClasses: Type.Optional(Type.Record(Type.String({ maxLength: 128 }), Count, { maxProperties: 64 })),
    outputTokens: Type.Optional(Count),
  },
  { additionalProperties: false },
)

/**
 * The GPU counters an agent folds per interval. Units are in the names; percentages are 0–100.
 * `clockEventReasons` is NVML's clock event (throttle) reason bitmask.
 */
export const GPU_FIELDS = [
  'gpuUtilPct',
  'memUtilPct',
  'memUsedBytes',
  'memFreeBytes',
  'memTotalBytes',
  'memReservedBytes',
  'powerW',
  'energyMj',
  'temperatureC',
  'smClockMhz',
  'memClockMhz',
  'clockEventReasons',
  'eccCorrectedVolatile',
  'eccUncorrectedVolatile',
  'pcieTxKBps',
  'pcieRxKBps',
  'grEngineActivePct',
  'smActivePct',
  'tensorActivePct',
] as const
export type GpuField = (typeof GPU_FIELDS)[number]

const Num = Type.Number()
/** min, mean, max and last of one counter over one interval. */
export const GpuStatSchema = Type.Object(
  { min: Num, mean: Num, max: Num, last: Num },
  { additionalProperties: false },
)

const gpuFieldProps = Object.fromEntries(GPU_FIELDS.map((f) => [f, Type.Optional(GpuStatSchema)])) as Record<
  GpuField,
  TOptional<typeof GpuStatSchema>
>

const OptId = Type.Optional(Type.Integer({ minimum: 0, maximum: 0xffffffff }))
const Short = Type.String({ maxLength: 256 })

/** One GPU event of the interval: an XID, a double-bit ECC error, a GPU that fell off the bus, … */
export const GpuEventSchema = Type.Object(
  {
    timeMs: Type.Integer({ minimum: 0 }),
    kind: Type.String({ maxLength: 64 }),
    xid: Type.Optional(Type.Integer({ minimum: 0 })),
    data: Type.Optional(Num),
    gpuInstanceId: OptId,
    computeInstanceId: OptId,
    message: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: false },
)

/** One process on a GPU over the interval, attributed to a replica the agent knows when it could be. */
export const GpuProcessSchema = Type.Object(
  {
    pid: Type.Integer({ minimum: 0 }),
    gpuInstanceId: OptId,
    computeInstanceId: OptId,
    usedMemoryBytes: Type.Optional(GpuStatSchema),
    smUtilPct: Type.Optional(GpuStatSchema),
    memUtilPct: Type.Optional(GpuStatSchema),
    replica: Type.Optional(
      Type.Object(
        { service: LabelValue, model: LabelValue, version: LabelValue, replica: LabelValue },
        { additionalProperties: false },
      ),
    ),
    podUid: Type.Optional(Short),
    containerId: Type.Optional(Short),
  },
  { additionalProperties: false },
)

/**
 * One GPU (or one MIG instance of it) over one interval. `uuid` is always the physical GPU's; a MIG instance
 * carries `mig` (its GPU/compute instance ids, and its own MIG UUID where NVML gave one).
 *
 * @example
 * ```json
 * { "source": "nvml", "uuid": "GPU-5f…", "index": 0, "name": "NVIDIA H100 80GB HBM3", "samples": 5,
 *   "fields": { "gpuUtilPct": { "min": 71, "mean": 80.4, "max": 93, "last": 77 } },
 *   "events": [{ "timeMs": 1763750001200, "kind": "xid", "xid": 79 }], "processes": [] }
 * ```
 */
export const GpuReportItemSchema = Type.Object(
  {
    source: Type.Union([Type.Literal('nvml'), Type.Literal('dcgm')]),
    uuid: Short,
    index: Type.Integer({ minimum: 0, maximum: 1023 }),
    name: Type.Optional(Short),
    pciBusId: Type.Optional(Short),
    mig: Type.Optional(
      Type.Object(
        {
          gpuInstanceId: Type.Integer({ minimum: 0 }),
          computeInstanceId: OptId,
          uuid: Type.Optional(Short),
          profile: Type.Optional(Short),
        },
        { additionalProperties: false },
      ),
    ),
    samples: Count,
    fields: Type.Object(gpuFieldProps, { additionalProperties: false }),
    /** Bitwise OR of every clock event reason seen in the interval, and their names. */
    clockEventReasonsSeen: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 32 })),
    /** Fields this driver or exporter lacks entirely (a missing NVML symbol, a field DCGM does not export). */
    unsupported: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 64 })),
    events: Type.Optional(Type.Array(GpuEventSchema, { maxItems: 256 })),
    processes: Type.Optional(Type.Array(GpuProcessSchema, { maxItems: 1024 })),
    /** Kubernetes labels DCGM exporter attached to this GPU (pod mapping), when present. */
    k8s: Type.Optional(
      Type.Object(
        { namespace: Type.Optional(Short), pod: Type.Optional(Short), container: Type.Optional(Short) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

export type GpuStat = Static<typeof GpuStatSchema>
export type GpuEvent = Static<typeof GpuEventSchema>
export type GpuProcess = Static<typeof GpuProcessSchema>
export type GpuReportItem = Static<typeof GpuReportItemSchema>

export const IntervalReportSchema = Type.Object(
  {
    version: Type.Literal(REPORT_VERSION),
    agent: Type.Object(
      {
        id: Type.String({ minLength: 1, maxLength: 256 }),
        instance: Type.String({ minLength: 1, maxLength: 128 }),
        node: Type.String({ maxLength: 256 }),
      },
      { additionalProperties: false },
    ),
    seq: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    intervalStartMs: Type.Integer({ minimum: 0 }),
    intervalEndMs: Type.Integer({ minimum: 0 }),
    series: Type.Array(ReportSeriesSchema, { maxItems: 10_000 }),
    /** Observations the agent refused, by reason (negative durations, unknown phases, …). */
    dropped: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Count, { maxProperties: 64 })),
    /** GPU samples folded over the interval, one item per GPU or MIG instance (see {@link GpuReportItemSchema}). */
    gpus: Type.Optional(Type.Array(GpuReportItemSchema, { maxItems: 1024 })),
  },
  { additionalProperties: false },
)

export type IntervalReport = Static<typeof IntervalReportSchema>
export type ReportSeries = Static<typeof ReportSeriesSchema>

export const ReportAckSchema = Type.Object({
  status: Type.Union([Type.Literal('stored'), Type.Literal('duplicate')]),
  seq: Type.Integer(),
})
export type ReportAck = Static<typeof ReportAckSchema>

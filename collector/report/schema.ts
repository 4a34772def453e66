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

/**
 * Hard bounds of the report format (docs/limits.md). Counts per series per report stop at 10^12, so sums over
 * thousands of reports stay exact in a double; times stop at the end of JavaScript's date range.
 */
export const REPORT_LIMITS = {
  /** Most series in one report; the agent splits larger intervals into several reports. */
  maxSeries: 10_000,
  /** Largest count (requests, tokens, samples) of one series in one report. */
  maxCount: 1e12,
  /** Latest time (epoch ms) a report may carry: JavaScript's largest date. */
  maxTimeMs: 8_640_000_000_000_000,
  /** Largest magnitude of a GPU or signal gauge value. */
  maxGauge: 1e15,
  /** Longest label value (UTF-16 code units). */
  maxLabelLength: 256,
} as const

const LabelValue = Type.String({ maxLength: REPORT_LIMITS.maxLabelLength, pattern: '^[^\\u0000]*$' })
const Count = Type.Integer({ minimum: 0, maximum: REPORT_LIMITS.maxCount })
const TimeMs = Type.Integer({ minimum: 0, maximum: REPORT_LIMITS.maxTimeMs })
/** A record key of 1..`max` characters: the key schema TypeBox checks (with additionalProperties: false). */
const Key = (max: number) => Type.String({ pattern: `^[\\s\\S]{1,${max}}$` })

export const SeriesLabelsSchema = Type.Object(
  {
    service: Type.String({ minLength: 1, maxLength: REPORT_LIMITS.maxLabelLength, pattern: '^[^\\u0000]*$' }),
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

const Num = Type.Number({ minimum: -REPORT_LIMITS.maxGauge, maximum: REPORT_LIMITS.maxGauge })
/** min, mean, max and last of one counter over one interval. */
export const GpuStatSchema = Type.Object(
  { min: Num, mean: Num, max: Num, last: Num },
  { additionalProperties: false },
)

const gpuFieldProps = Object.fromEntries(GPU_FIELDS.map((f) => [f, Type.Optional(GpuStatSchema)])) as Record<
  GpuField,
  TOptional<typeof GpuStatSchema>
>

const OptId = Type.Optional(Type.Integer({ minimum: 0, maximum: 0x7fffffff }))
const Short = Type.String({ maxLength: 256 })

/** One GPU event of the interval: an XID, a double-bit ECC error, a GPU that fell off the bus, … */
export const GpuEventSchema = Type.Object(
  {
    timeMs: TimeMs,
    kind: Type.String({ maxLength: 64 }),
    xid: Type.Optional(Type.Integer({ minimum: 0, maximum: 0x7fffffff })),
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
    pid: Type.Integer({ minimum: 0, maximum: 0x7fffffff }),
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
          gpuInstanceId: Type.Integer({ minimum: 0, maximum: 0x7fffffff }),
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

/**
 * Live saturation gauges an agent samples per series over an interval (proxy, scrape adapters, SDK, OTLP
 * attributes): requests in flight and queued, running and waiting sequences (LLM servers), KV-cache use
 * (fraction 0..1), dispatched batch size, and `busy`, the proxy's upstreams with at least one request in
 * flight. Each is folded as min/mean/max/last over the interval.
 */
export const SIGNAL_GAUGES = [
  'inFlight',
  'queued',
  'running',
  'waiting',
  'kvCacheUsage',
  'batchSize',
  'busy',
] as const
export type SignalGauge = (typeof SIGNAL_GAUGES)[number]

/** Counts over the interval that come with the gauges (tokens in and out, preemptions, prefix-cache use). */
export const SIGNAL_COUNTERS = [
  'inputTokens',
  'outputTokens',
  'preemptions',
  'prefixCacheQueries',
  'prefixCacheHits',
  'batches',
] as const
export type SignalCounter = (typeof SIGNAL_COUNTERS)[number]

const gaugeProps = Object.fromEntries(SIGNAL_GAUGES.map((g) => [g, Type.Optional(GpuStatSchema)])) as Record<
  SignalGauge,
  TOptional<typeof GpuStatSchema>
>
const counterProps = Object.fromEntries(SIGNAL_COUNTERS.map((c) => [c, Type.Optional(Count)])) as Record<
  SignalCounter,
  TOptional<typeof Count>
>

/** Per priority class: what the proxy's admission control held and shed over the interval. */
export const ClassSignalsSchema = Type.Object(
  {
    priorityClass: Type.Integer({ minimum: 0, maximum: 15 }),
    inFlight: Type.Optional(GpuStatSchema),
    queued: Type.Optional(GpuStatSchema),
    admitted: Type.Optional(Count),
    /** Shed requests by reason (`queue_full`, `queue_timeout`, `deadline`, `concurrency`, …). */
    shed: Type.Optional(Type.Record(Key(64), Count, { maxProperties: 32, additionalProperties: false })),
  },
  { additionalProperties: false },
)

/**
 * The live signals of one series over the interval (all optional: a source fills what it sees). `sources`
 * names where they came from (`proxy`, `scrape:vllm`, `sdk`, `otlp`, …).
 */
export const SeriesSignalsSchema = Type.Object(
  {
    gauges: Type.Optional(Type.Object(gaugeProps, { additionalProperties: false })),
    counters: Type.Optional(Type.Object(counterProps, { additionalProperties: false })),
    byClass: Type.Optional(Type.Array(ClassSignalsSchema, { maxItems: 16 })),
    sources: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 16 })),
  },
  { additionalProperties: false },
)
export type SeriesSignals = Static<typeof SeriesSignalsSchema>
export type ClassSignals = Static<typeof ClassSignalsSchema>

/** Most finite bucket bounds one imported histogram may carry (vLLM's widest has about 30). */
export const MAX_BUCKET_BOUNDS = 64

/**
 * One latency histogram a model server exports in Prometheus bucket form (vLLM, TGI, SGLang, Triton), imported
 * as it is for one interval: the increments of its buckets, never re-recorded into an HDR histogram (the values
 * inside a bucket are unknown). `boundsMs` are the finite upper bounds (`le`), ascending; `counts` has one more
 * entry than `boundsMs`, the last being the `+Inf` bucket, and each count is that bucket's own increment (not
 * cumulative). An empty `boundsMs` carries only a count and a sum: a mean (Triton's cumulative duration
 * counters). `quantilesMs` are a Prometheus summary's quantiles at the end of the interval, when the server
 * exports one (Triton's `*_summary_us`). The API flags these `precision: "buckets"` (or `"summary"`).
 *
 * @example
 * ```json
 * { "boundsMs": [10, 25, 50], "counts": [3, 12, 1, 0], "sumMs": 402.5, "source": "scrape:vllm" }
 * ```
 */
export const BucketHistogramSchema = Type.Object(
  {
    boundsMs: Type.Array(Type.Number({ minimum: 0 }), { maxItems: MAX_BUCKET_BOUNDS }),
    counts: Type.Array(Count, { minItems: 1, maxItems: MAX_BUCKET_BOUNDS + 1 }),
    sumMs: Type.Number({ minimum: 0 }),
    quantilesMs: Type.Optional(
      Type.Array(
        Type.Object(
          { q: Type.Number({ minimum: 0, maximum: 1 }), ms: Type.Number({ minimum: 0 }) },
          { additionalProperties: false },
        ),
        { maxItems: 16 },
      ),
    ),
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: false },
)
export type BucketHistogram = Static<typeof BucketHistogramSchema>

const bucketProps = Object.fromEntries(
  METRICS.map((m) => [m, Type.Optional(BucketHistogramSchema)]),
) as Record<(typeof METRICS)[number], TOptional<typeof BucketHistogramSchema>>

/**
 * Checks what the schema cannot: ascending finite bounds and one count per bucket plus `+Inf`. Returns the
 * problem, or `null` when the histogram is well formed.
 *
 * @example bucketHistogramProblem({ boundsMs: [10, 5], counts: [1, 1, 0], sumMs: 3 }) // 'boundsMs must ascend'
 */
export function bucketHistogramProblem(h: BucketHistogram): string | null {
  if (h.counts.length !== h.boundsMs.length + 1)
    return `counts must have one entry per bound plus +Inf (${h.boundsMs.length + 1}), got ${h.counts.length}`
  for (let i = 0; i < h.boundsMs.length; i++) {
    if (!Number.isFinite(h.boundsMs[i]!)) return 'boundsMs must be finite (the +Inf bucket is implied)'
    if (i > 0 && !(h.boundsMs[i]! > h.boundsMs[i - 1]!)) return 'boundsMs must ascend'
  }
  if (!Number.isFinite(h.sumMs)) return 'sumMs must be finite'
  return null
}

export const ReportSeriesSchema = Type.Object(
  {
    labels: SeriesLabelsSchema,
    /** Per metric (phase or token metric): an HdrHistogram in compressed base64, values in µs. */
    histograms: Type.Object(metricProps, { additionalProperties: false }),
    requests: Type.Object({ ok: Count, error: Count, shed: Count }, { additionalProperties: false }),
    errorClasses: Type.Optional(
      Type.Record(Key(128), Count, { maxProperties: 64, additionalProperties: false }),
    ),
    outputTokens: Type.Optional(Count),
    /** Live saturation signals (see {@link SeriesSignalsSchema}); absent when no source saw any. */
    signals: Type.Optional(SeriesSignalsSchema),
    /**
     * Latency histograms a model server exported in Prometheus bucket form, per metric (see
     * {@link BucketHistogramSchema}): kept apart from the HDR `histograms`, never presented as exact.
     */
    bucketHistograms: Type.Optional(Type.Object(bucketProps, { additionalProperties: false })),
  },
  { additionalProperties: false },
)

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
    intervalStartMs: TimeMs,
    intervalEndMs: TimeMs,
    series: Type.Array(ReportSeriesSchema, { maxItems: REPORT_LIMITS.maxSeries }),
    /** Observations the agent refused, by reason (negative durations, unknown phases, …). */
    dropped: Type.Optional(Type.Record(Key(64), Count, { maxProperties: 64, additionalProperties: false })),
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

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
    /**
     * GPU samples folded over the interval (filled by the GPU sources; see agent/sources). Kept open here so
     * the collector can store them without a format change; the GPU issue defines the item schema.
     */
    gpus: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 1024 })),
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

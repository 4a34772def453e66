/**
 * The part of an OTLP span that tailguard reads, as both decoders return it.
 *
 * Times: `startTimeUnixNano` is a float (nanoseconds since the epoch, good to about 0.25 µs), but
 * `durationNs` and each event's `offsetNs` are computed from the exact 64-bit integers, so a duration is
 * exact to the nanosecond however far from 1970 the span lies.
 */

/**
 * An OTLP `AnyValue`, as a plain JavaScript value. 64-bit integers become numbers (exact up to 2^53).
 *
 * @example
 * ```ts
 * const v: AttributeValue = ['a', 1, { nested: true }]
 * ```
 */
export type AttributeValue =
  | string
  | number
  | boolean
  | Uint8Array
  | readonly AttributeValue[]
  | { readonly [key: string]: AttributeValue }

/** Attributes by key. Later duplicates of a key win. @example span.attributes['tailguard.phase'] // 'kernel' */
export type Attributes = Readonly<Record<string, AttributeValue>>

/**
 * One span event (e.g. Triton's `QUEUE_START`), timed relative to its span's start.
 *
 * @example
 * ```ts
 * const queueStart = span.events.find((e) => e.name === 'QUEUE_START')?.offsetNs
 * ```
 */
export interface OtlpEvent {
  readonly name: string
  /** Event time minus span start time, in ns (exact). */
  readonly offsetNs: number
  readonly attributes: Attributes
}

/** OTLP span status code: unset. @example span.statusCode === STATUS_CODE_UNSET */
export const STATUS_CODE_UNSET = 0
/** OTLP span status code: ok. @example span.statusCode === STATUS_CODE_OK */
export const STATUS_CODE_OK = 1
/** OTLP span status code: error. @example span.statusCode === STATUS_CODE_ERROR */
export const STATUS_CODE_ERROR = 2

/**
 * One decoded span with its resource's attributes.
 *
 * @example
 * ```ts
 * const r = decodeTracesProtobuf(body)
 * if (r.ok) for (const s of r.spans) console.log(s.name, s.durationNs / 1e6, 'ms')
 * ```
 */
export interface OtlpSpan {
  /** Hex, lowercase; empty when absent. */
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  /** SpanKind enum value: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number
  readonly startTimeUnixNano: number
  /** End minus start in ns, exact; negative when the sender's clock went backwards. */
  readonly durationNs: number
  readonly attributes: Attributes
  /** The attributes of the span's resource (shared by every span of that resource). */
  readonly resource: Attributes
  readonly events: readonly OtlpEvent[]
  readonly statusCode: number
  readonly statusMessage: string
}

/**
 * What a decoder returns: spans, or why the payload could not be read. Decoders never throw.
 *
 * @example
 * ```ts
 * const r: DecodeResult = decodeTracesJson(body)
 * if (!r.ok) return reply.code(400).send({ message: r.error })
 * ```
 */
export type DecodeResult =
  { readonly ok: true; readonly spans: OtlpSpan[] } | { readonly ok: false; readonly error: string }

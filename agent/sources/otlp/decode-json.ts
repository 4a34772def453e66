import { newAttributes } from './attributes.js'
import type { MutableAttributes } from './attributes.js'
import type { AttributeValue, DecodeResult, OtlpEvent, OtlpSpan } from './types.js'

// OTLP/JSON (the OTLP specification, "JSON Protobuf Encoding"): the proto3 JSON mapping with
// lowerCamelCase keys, trace and span ids as hex strings (not base64), enums as integers, and 64-bit
// integers as decimal strings (numbers are accepted too). Unknown keys are ignored, as the spec requires.

const MAX_VALUE_DEPTH = 32

type Json = unknown

// Paths in error messages are built only when something fails: each function reports the path relative
// to the value it was given, and loops prepend the element's index on the way out (no string building on
// the success path).
class JsonShapeError extends Error {
  constructor(
    public path: string,
    readonly detail: string,
  ) {
    super(detail)
  }
}

function fail(path: string, message: string): never {
  throw new JsonShapeError(path, message)
}

/** Prefixes the path of a shape error thrown below `prefix`; other errors pass through. */
function within(err: unknown, prefix: string): unknown {
  if (err instanceof JsonShapeError) err.path = prefix + err.path
  return err
}

const isObject = (v: Json): v is Record<string, Json> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

function arrayAt(v: Json, path: string): readonly Json[] {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v)) fail(path, `expected an array, got ${describe(v)}`)
  return v
}

function objectAt(v: Json, path: string): Record<string, Json> {
  if (!isObject(v)) fail(path, `expected an object, got ${describe(v)}`)
  return v
}

function stringAt(v: Json, path: string): string {
  if (v === undefined || v === null) return ''
  if (typeof v !== 'string') fail(path, `expected a string, got ${describe(v)}`)
  return v
}

const HEX = /^[0-9a-fA-F]*$/

/**
 * A trace or span id: hex digits (OTLP/JSON writes ids in base 16, not base64), `bytes` long or empty (absent),
 * lowercased.
 */
function idAt(v: Json, path: string, bytes: 8 | 16): string {
  const s = stringAt(v, path)
  if (s.length !== 0 && (s.length !== bytes * 2 || !HEX.test(s)))
    fail(path, `expected ${bytes * 2} hex digits (${bytes} bytes), got ${describe(v)}`)
  return s.toLowerCase()
}

function describe(v: Json): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`
}

const DECIMAL = /^[0-9]{1,20}$/
const INTEGER = /^-?[0-9]{1,20}$/
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/** A 64-bit unsigned nanosecond time split as [seconds, nanoseconds], so differences stay exact. */
function timeAt(v: Json, path: string): [number, number] {
  if (v === undefined || v === null) return [0, 0]
  if (typeof v === 'string') {
    if (!DECIMAL.test(v)) fail(path, `expected a decimal integer string, got ${describe(v)}`)
    if (v.length <= 9) return [0, Number(v)]
    return [Number(v.slice(0, -9)), Number(v.slice(-9))]
  }
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v < 0) fail(path, `expected a non-negative integer, got ${v}`)
    const s = Math.floor(v / 1e9)
    return [s, v - s * 1e9]
  }
  return fail(path, `expected nanoseconds as a decimal string or a number, got ${describe(v)}`)
}

function enumAt(v: Json, path: string, names: readonly string[]): number {
  if (v === undefined || v === null) return 0
  if (typeof v === 'number' && Number.isInteger(v)) return v
  if (typeof v === 'string') {
    // proto3 JSON parsers accept enum names too.
    const i = names.indexOf(v)
    if (i >= 0) return i
  }
  return fail(path, `expected an enum integer, got ${describe(v)}`)
}

const KIND_NAMES = [
  'SPAN_KIND_UNSPECIFIED',
  'SPAN_KIND_INTERNAL',
  'SPAN_KIND_SERVER',
  'SPAN_KIND_CLIENT',
  'SPAN_KIND_PRODUCER',
  'SPAN_KIND_CONSUMER',
]
const STATUS_NAMES = ['STATUS_CODE_UNSET', 'STATUS_CODE_OK', 'STATUS_CODE_ERROR']

function anyValue(v: Json, depth: number): AttributeValue | undefined {
  if (depth > MAX_VALUE_DEPTH) fail('', `attribute values nested deeper than ${MAX_VALUE_DEPTH}`)
  if (v === undefined || v === null) return undefined
  const o = objectAt(v, '')
  if (o.stringValue !== undefined) return stringAt(o.stringValue, '.stringValue')
  if (o.boolValue !== undefined) {
    if (typeof o.boolValue !== 'boolean')
      fail('.boolValue', `expected a boolean, got ${describe(o.boolValue)}`)
    return o.boolValue
  }
  if (o.intValue !== undefined) {
    const i = o.intValue
    if (typeof i === 'number' && Number.isInteger(i)) return i
    if (typeof i === 'string' && INTEGER.test(i)) return Number(i)
    return fail('.intValue', `expected an integer or a decimal string, got ${describe(i)}`)
  }
  if (o.doubleValue !== undefined) {
    const d = o.doubleValue
    if (typeof d === 'number') return d
    // proto3 JSON writes non-finite doubles as strings.
    if (d === 'NaN' || d === 'Infinity' || d === '-Infinity') return Number(d)
    if (typeof d === 'string' && d.trim() !== '' && Number.isFinite(Number(d))) return Number(d)
    return fail('.doubleValue', `expected a number, got ${describe(d)}`)
  }
  if (o.arrayValue !== undefined) {
    const a = objectAt(o.arrayValue, '.arrayValue')
    const values = arrayAt(a.values, '.arrayValue.values')
    const out: AttributeValue[] = []
    for (let i = 0; i < values.length; i++) {
      try {
        const x = anyValue(values[i], depth + 1)
        if (x !== undefined) out.push(x)
      } catch (err) {
        throw within(err, `.arrayValue.values[${i}]`)
      }
    }
    return out
  }
  if (o.kvlistValue !== undefined) {
    const kv = objectAt(o.kvlistValue, '.kvlistValue')
    const into = newAttributes()
    try {
      keyValues(kv.values, into, depth + 1)
    } catch (err) {
      throw within(err, '.kvlistValue.values')
    }
    return into
  }
  if (o.bytesValue !== undefined) {
    const b = stringAt(o.bytesValue, '.bytesValue')
    // proto3 JSON: bytes are base64 (standard or URL-safe alphabet).
    if (!BASE64.test(b)) fail('.bytesValue', 'expected base64')
    return new Uint8Array(Buffer.from(b, 'base64'))
  }
  return undefined
}

/** Reads a KeyValue list into `into`; errors carry paths relative to the list. */
function keyValues(v: Json, into: MutableAttributes, depth: number): void {
  const list = arrayAt(v, '')
  for (let i = 0; i < list.length; i++) {
    try {
      const kv = objectAt(list[i], '')
      const key = stringAt(kv.key, '.key')
      let value: AttributeValue | undefined
      try {
        value = anyValue(kv.value, depth)
      } catch (err) {
        throw within(err, '.value')
      }
      if (value !== undefined) into[key] = value
    } catch (err) {
      throw within(err, `[${i}]`)
    }
  }
}

function attributesAt(v: Json, path: string, into: MutableAttributes): void {
  try {
    keyValues(v, into, 0)
  } catch (err) {
    throw within(err, path)
  }
}

function span(v: Json, resource: MutableAttributes): OtlpSpan {
  const s = objectAt(v, '')
  const [startS, startNs] = timeAt(s.startTimeUnixNano, '.startTimeUnixNano')
  const [endS, endNs] = timeAt(s.endTimeUnixNano, '.endTimeUnixNano')
  const attributes = newAttributes()
  attributesAt(s.attributes, '.attributes', attributes)
  const events: OtlpEvent[] = []
  const rawEvents = arrayAt(s.events, '.events')
  for (let i = 0; i < rawEvents.length; i++) {
    try {
      const e = objectAt(rawEvents[i], '')
      const [es, ens] = timeAt(e.timeUnixNano, '.timeUnixNano')
      const ea = newAttributes()
      attributesAt(e.attributes, '.attributes', ea)
      events.push({
        name: stringAt(e.name, '.name'),
        offsetNs: (es - startS) * 1e9 + (ens - startNs),
        attributes: ea,
      })
    } catch (err) {
      throw within(err, `.events[${i}]`)
    }
  }
  let statusCode = 0
  let statusMessage = ''
  if (s.status !== undefined && s.status !== null) {
    const st = objectAt(s.status, '.status')
    statusCode = enumAt(st.code, '.status.code', STATUS_NAMES)
    statusMessage = stringAt(st.message, '.status.message')
  }
  return {
    traceId: idAt(s.traceId, '.traceId', 16),
    spanId: idAt(s.spanId, '.spanId', 8),
    parentSpanId: idAt(s.parentSpanId, '.parentSpanId', 8),
    name: stringAt(s.name, '.name'),
    kind: enumAt(s.kind, '.kind', KIND_NAMES),
    startTimeUnixNano: startS * 1e9 + startNs,
    durationNs: (endS - startS) * 1e9 + (endNs - startNs),
    attributes,
    resource,
    events,
    statusCode,
    statusMessage,
  }
}

function resourceSpans(v: Json, out: OtlpSpan[]): void {
  const rs = objectAt(v, '')
  const resource = newAttributes()
  if (rs.resource !== undefined && rs.resource !== null)
    attributesAt(objectAt(rs.resource, '.resource').attributes, '.resource.attributes', resource)
  const sss = arrayAt(rs.scopeSpans, '.scopeSpans')
  for (let j = 0; j < sss.length; j++) {
    let k = -1
    try {
      const list = arrayAt(objectAt(sss[j], '').spans, '.spans')
      for (k = 0; k < list.length; k++) out.push(span(list[k], resource))
    } catch (err) {
      throw within(err, k < 0 ? `.scopeSpans[${j}]` : `.scopeSpans[${j}].spans[${k}]`)
    }
  }
}

/**
 * Decodes an OTLP/JSON `ExportTraceServiceRequest` (already parsed with `JSON.parse`). Never throws: a
 * value of the wrong shape comes back as `{ ok: false, error }` naming the path of the first problem.
 *
 * @example
 * ```ts
 * const r = decodeTracesJsonValue({ resourceSpans: [] }) // { ok: true, spans: [] }
 * ```
 */
export function decodeTracesJsonValue(value: unknown): DecodeResult {
  try {
    const root = objectAt(value, '')
    const spans: OtlpSpan[] = []
    const rss = arrayAt(root.resourceSpans, '.resourceSpans')
    for (let i = 0; i < rss.length; i++) {
      try {
        resourceSpans(rss[i], spans)
      } catch (err) {
        throw within(err, `.resourceSpans[${i}]`)
      }
    }
    return { ok: true, spans }
  } catch (err) {
    const message =
      err instanceof JsonShapeError
        ? `$${err.path}: ${err.detail}`
        : err instanceof Error
          ? err.message
          : String(err)
    return { ok: false, error: `invalid OTLP/JSON payload: ${message}` }
  }
}

/**
 * Decodes the body of `POST /v1/traces` with `Content-Type: application/json`: parses the JSON, then
 * {@link decodeTracesJsonValue}. Never throws.
 *
 * @example
 * ```ts
 * const r = decodeTracesJson(Buffer.from('{"resourceSpans":[]}'))
 * ```
 */
export function decodeTracesJson(body: Uint8Array | string): DecodeResult {
  let value: unknown
  try {
    value = JSON.parse(
      typeof body === 'string'
        ? body
        : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'),
    )
  } catch (err) {
    return { ok: false, error: `invalid JSON: ${err instanceof Error ? err.message : String(err)}` }
  }
  return decodeTracesJsonValue(value)
}

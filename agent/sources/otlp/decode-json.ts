import { newAttributes } from './attributes.js'
import type { MutableAttributes } from './attributes.js'
import type { AttributeValue, DecodeResult, OtlpEvent, OtlpSpan } from './types.js'

// OTLP/JSON (the OTLP specification, "JSON Protobuf Encoding"): the proto3 JSON mapping with
// lowerCamelCase keys, trace and span ids as hex strings (not base64), enums as integers, and 64-bit
// integers as decimal strings (numbers are accepted too). Unknown keys are ignored, as the spec requires.

const MAX_VALUE_DEPTH = 32

type Json = unknown

class JsonShapeError extends Error {}

function fail(path: string, message: string): never {
  throw new JsonShapeError(`${path}: ${message}`)
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

function describe(v: Json): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`
}

const DECIMAL = /^[0-9]{1,20}$/

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

function anyValue(v: Json, path: string, depth: number): AttributeValue | undefined {
  if (depth > MAX_VALUE_DEPTH) fail(path, `attribute values nested deeper than ${MAX_VALUE_DEPTH}`)
  if (v === undefined || v === null) return undefined
  const o = objectAt(v, path)
  if (o.stringValue !== undefined) return stringAt(o.stringValue, `${path}.stringValue`)
  if (o.boolValue !== undefined) {
    if (typeof o.boolValue !== 'boolean')
      fail(`${path}.boolValue`, `expected a boolean, got ${describe(o.boolValue)}`)
    return o.boolValue
  }
  if (o.intValue !== undefined) {
    const i = o.intValue
    if (typeof i === 'number' && Number.isInteger(i)) return i
    if (typeof i === 'string' && /^-?[0-9]{1,20}$/.test(i)) return Number(i)
    return fail(`${path}.intValue`, `expected an integer or a decimal string, got ${describe(i)}`)
  }
  if (o.doubleValue !== undefined) {
    const d = o.doubleValue
    if (typeof d === 'number') return d
    // proto3 JSON writes non-finite doubles as strings.
    if (d === 'NaN' || d === 'Infinity' || d === '-Infinity') return Number(d)
    if (typeof d === 'string' && d.trim() !== '' && Number.isFinite(Number(d))) return Number(d)
    return fail(`${path}.doubleValue`, `expected a number, got ${describe(d)}`)
  }
  if (o.arrayValue !== undefined) {
    const a = objectAt(o.arrayValue, `${path}.arrayValue`)
    const values = arrayAt(a.values, `${path}.arrayValue.values`)
    const out: AttributeValue[] = []
    for (let i = 0; i < values.length; i++) {
      const x = anyValue(values[i], `${path}.arrayValue.values[${i}]`, depth + 1)
      if (x !== undefined) out.push(x)
    }
    return out
  }
  if (o.kvlistValue !== undefined) {
    const kv = objectAt(o.kvlistValue, `${path}.kvlistValue`)
    const into = newAttributes()
    keyValues(kv.values, `${path}.kvlistValue.values`, into, depth + 1)
    return into
  }
  if (o.bytesValue !== undefined) {
    const b = stringAt(o.bytesValue, `${path}.bytesValue`)
    // proto3 JSON: bytes are base64 (standard or URL-safe alphabet).
    if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(b)) fail(`${path}.bytesValue`, 'expected base64')
    return new Uint8Array(Buffer.from(b, 'base64'))
  }
  return undefined
}

function keyValues(v: Json, path: string, into: MutableAttributes, depth: number): void {
  const list = arrayAt(v, path)
  for (let i = 0; i < list.length; i++) {
    const p = `${path}[${i}]`
    const kv = objectAt(list[i], p)
    const key = stringAt(kv.key, `${p}.key`)
    const value = anyValue(kv.value, `${p}.value`, depth)
    if (value !== undefined) into[key] = value
  }
}

function span(v: Json, path: string, resource: MutableAttributes): OtlpSpan {
  const s = objectAt(v, path)
  const [startS, startNs] = timeAt(s.startTimeUnixNano, `${path}.startTimeUnixNano`)
  const [endS, endNs] = timeAt(s.endTimeUnixNano, `${path}.endTimeUnixNano`)
  const attributes = newAttributes()
  keyValues(s.attributes, `${path}.attributes`, attributes, 0)
  const events: OtlpEvent[] = []
  const rawEvents = arrayAt(s.events, `${path}.events`)
  for (let i = 0; i < rawEvents.length; i++) {
    const p = `${path}.events[${i}]`
    const e = objectAt(rawEvents[i], p)
    const [es, ens] = timeAt(e.timeUnixNano, `${p}.timeUnixNano`)
    const ea = newAttributes()
    keyValues(e.attributes, `${p}.attributes`, ea, 0)
    events.push({
      name: stringAt(e.name, `${p}.name`),
      offsetNs: (es - startS) * 1e9 + (ens - startNs),
      attributes: ea,
    })
  }
  let statusCode = 0
  let statusMessage = ''
  if (s.status !== undefined && s.status !== null) {
    const st = objectAt(s.status, `${path}.status`)
    statusCode = enumAt(st.code, `${path}.status.code`, STATUS_NAMES)
    statusMessage = stringAt(st.message, `${path}.status.message`)
  }
  return {
    traceId: stringAt(s.traceId, `${path}.traceId`).toLowerCase(),
    spanId: stringAt(s.spanId, `${path}.spanId`).toLowerCase(),
    parentSpanId: stringAt(s.parentSpanId, `${path}.parentSpanId`).toLowerCase(),
    name: stringAt(s.name, `${path}.name`),
    kind: enumAt(s.kind, `${path}.kind`, KIND_NAMES),
    startTimeUnixNano: startS * 1e9 + startNs,
    durationNs: (endS - startS) * 1e9 + (endNs - startNs),
    attributes,
    resource,
    events,
    statusCode,
    statusMessage,
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
    const root = objectAt(value, '$')
    const spans: OtlpSpan[] = []
    const rss = arrayAt(root.resourceSpans, '$.resourceSpans')
    for (let i = 0; i < rss.length; i++) {
      const p = `$.resourceSpans[${i}]`
      const rs = objectAt(rss[i], p)
      const resource = newAttributes()
      if (rs.resource !== undefined && rs.resource !== null)
        keyValues(objectAt(rs.resource, `${p}.resource`).attributes, `${p}.resource.attributes`, resource, 0)
      const sss = arrayAt(rs.scopeSpans, `${p}.scopeSpans`)
      for (let j = 0; j < sss.length; j++) {
        const sp = `${p}.scopeSpans[${j}]`
        const list = arrayAt(objectAt(sss[j], sp).spans, `${sp}.spans`)
        for (let k = 0; k < list.length; k++) spans.push(span(list[k], `${sp}.spans[${k}]`, resource))
      }
    }
    return { ok: true, spans }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
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

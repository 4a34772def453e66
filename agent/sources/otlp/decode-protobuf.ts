import protobuf from 'protobufjs/minimal.js'
import { newAttributes } from './attributes.js'
import type { MutableAttributes } from './attributes.js'
import type { AttributeValue, DecodeResult, OtlpEvent, OtlpSpan } from './types.js'

// Field numbers and wire types from opentelemetry-proto (collector/trace/v1/trace_service.proto,
// trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto). Only these are read;
// everything else is skipped by wire type.
//   ExportTraceServiceRequest: 1 resource_spans (msg, repeated)
//   ResourceSpans: 1 resource (msg), 2 scope_spans (msg, repeated)
//   Resource: 1 attributes (KeyValue, repeated)
//   ScopeSpans: 1 scope (skipped), 2 spans (msg, repeated)
//   Span: 1 trace_id, 2 span_id, 4 parent_span_id (bytes), 5 name (string), 6 kind (enum varint),
//         7 start_time_unix_nano, 8 end_time_unix_nano (fixed64), 9 attributes, 11 events, 15 status
//   Span.Event: 1 time_unix_nano (fixed64), 2 name, 3 attributes
//   Status: 2 message (string), 3 code (enum varint)
//   KeyValue: 1 key, 2 value (AnyValue)
//   AnyValue: 1 string, 2 bool, 3 int64, 4 double, 5 ArrayValue, 6 KeyValueList, 7 bytes
//   ArrayValue / KeyValueList: 1 values (repeated)
const WT_VARINT = 0
const WT_FIXED64 = 1
const WT_LEN = 2

const TWO_32 = 4294967296
/** Deepest AnyValue nesting accepted (arrays and kvlists inside each other). */
const MAX_VALUE_DEPTH = 32

type Reader = protobuf.Reader

class ProtobufDecodeError extends Error {}

function fail(message: string): never {
  throw new ProtobufDecodeError(message)
}

/** Reads a length prefix and returns the end offset of the sub-message, checked against its parent's end. */
function subEnd(r: Reader, parentEnd: number, what: string): number {
  const at = r.pos
  const len = r.uint32()
  const end = r.pos + len
  if (end > parentEnd) fail(`${what}: length ${len} at offset ${at} runs past the end of its message`)
  return end
}

function expectWire(actual: number, expected: number, what: string, at: number): void {
  if (actual !== expected) fail(`${what} at offset ${at}: wire type ${actual}, expected ${expected}`)
}

function skipField(r: Reader, wireType: number, end: number): void {
  r.skipType(wireType)
  if (r.pos > end) fail(`skipped field at offset ${r.pos} runs past the end of its message`)
}

function readTag(r: Reader): number {
  const at = r.pos
  const tag = r.uint32()
  if (tag >>> 3 === 0) fail(`invalid field number 0 at offset ${at}`)
  return tag
}

function outOfRange(r: Reader, len: number): never {
  throw new RangeError(`index out of range: ${r.pos} + ${len} > ${r.len}`)
}

/**
 * A length-delimited bytes field as lowercase hex (span and trace ids), without a Buffer per id: `bytes` long,
 * or empty (absent).
 */
function readHex(r: Reader, bytes: 8 | 16, what: string, at: number): string {
  const len = r.uint32()
  const start = r.pos
  const end = start + len
  if (end > r.len) outOfRange(r, len)
  if (len !== 0 && len !== bytes) fail(`${what} at offset ${at}: ${len} bytes, expected ${bytes}`)
  r.pos = end
  return len === 0 ? '' : (r.buf as Buffer).toString('hex', start, end)
}

// Short strings repeat a lot in OTLP (attribute keys, service and model names, span names): a direct-mapped
// cache keyed by the bytes returns the same string object for the same bytes, which skips a UTF-8 decode
// and lets the recorder compare labels by pointer. Entries are verified byte for byte.
const STRING_CACHE_SLOTS = 2048
const INTERN_MAX_BYTES = 48
const cachedBytes: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(STRING_CACHE_SLOTS)
const cachedStrings: string[] = new Array<string>(STRING_CACHE_SLOTS).fill('')

function readString(r: Reader): string {
  const len = r.uint32()
  const start = r.pos
  const end = start + len
  if (end > r.len) outOfRange(r, len)
  r.pos = end
  const buf = r.buf as Buffer
  if (len === 0) return ''
  if (len > INTERN_MAX_BYTES) return buf.toString('utf8', start, end)
  let h = 0x811c9dc5 ^ len
  for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 16777619)
  const slot = (h >>> 0) & (STRING_CACHE_SLOTS - 1)
  const known = cachedBytes[slot]
  if (known !== undefined && known.length === len) {
    let same = true
    for (let i = 0; i < len; i++)
      if (known[i] !== buf[start + i]) {
        same = false
        break
      }
    if (same) return cachedStrings[slot]!
  }
  const s = buf.toString('utf8', start, end)
  cachedBytes[slot] = Uint8Array.prototype.slice.call(buf, start, end)
  cachedStrings[slot] = s
  return s
}

function readInt64(r: Reader): number {
  const v = r.int64() as unknown as number | { toNumber(): number }
  return typeof v === 'number' ? v : v.toNumber()
}

function readAnyValue(r: Reader, end: number, depth: number): AttributeValue | undefined {
  if (depth > MAX_VALUE_DEPTH) fail(`attribute values nested deeper than ${MAX_VALUE_DEPTH}`)
  let value: AttributeValue | undefined
  while (r.pos < end) {
    const at = r.pos
    const tag = readTag(r)
    const wt = tag & 7
    switch (tag >>> 3) {
      case 1:
        expectWire(wt, WT_LEN, 'AnyValue.string_value', at)
        value = readString(r)
        break
      case 2:
        expectWire(wt, WT_VARINT, 'AnyValue.bool_value', at)
        value = r.bool()
        break
      case 3:
        expectWire(wt, WT_VARINT, 'AnyValue.int_value', at)
        value = readInt64(r)
        break
      case 4:
        expectWire(wt, WT_FIXED64, 'AnyValue.double_value', at)
        value = r.double()
        break
      case 5: {
        expectWire(wt, WT_LEN, 'AnyValue.array_value', at)
        const e = subEnd(r, end, 'AnyValue.array_value')
        const values: AttributeValue[] = []
        while (r.pos < e) {
          const at2 = r.pos
          const t = readTag(r)
          if (t >>> 3 === 1) {
            expectWire(t & 7, WT_LEN, 'ArrayValue.values', at2)
            const ve = subEnd(r, e, 'ArrayValue.values')
            const v = readAnyValue(r, ve, depth + 1)
            if (v !== undefined) values.push(v)
          } else skipField(r, t & 7, e)
        }
        if (r.pos !== e) fail(`ArrayValue at offset ${at} overruns its length`)
        value = values
        break
      }
      case 6: {
        expectWire(wt, WT_LEN, 'AnyValue.kvlist_value', at)
        const e = subEnd(r, end, 'AnyValue.kvlist_value')
        const kv = newAttributes()
        while (r.pos < e) {
          const at2 = r.pos
          const t = readTag(r)
          if (t >>> 3 === 1) {
            expectWire(t & 7, WT_LEN, 'KeyValueList.values', at2)
            readKeyValue(r, subEnd(r, e, 'KeyValueList.values'), kv, depth + 1)
          } else skipField(r, t & 7, e)
        }
        if (r.pos !== e) fail(`KeyValueList at offset ${at} overruns its length`)
        value = kv
        break
      }
      case 7:
        expectWire(wt, WT_LEN, 'AnyValue.bytes_value', at)
        // A copy: a view would keep the whole request body alive.
        value = new Uint8Array(r.bytes())
        break
      default:
        skipField(r, wt, end)
    }
  }
  if (r.pos !== end) fail(`AnyValue overruns its length at offset ${r.pos}`)
  return value
}

function readKeyValue(r: Reader, end: number, into: MutableAttributes, depth: number): void {
  let key = ''
  let value: AttributeValue | undefined
  while (r.pos < end) {
    const at = r.pos
    const tag = readTag(r)
    const wt = tag & 7
    switch (tag >>> 3) {
      case 1:
        expectWire(wt, WT_LEN, 'KeyValue.key', at)
        key = readString(r)
        break
      case 2:
        expectWire(wt, WT_LEN, 'KeyValue.value', at)
        value = readAnyValue(r, subEnd(r, end, 'KeyValue.value'), depth)
        break
      default:
        skipField(r, wt, end)
    }
  }
  if (r.pos !== end) fail(`KeyValue overruns its length at offset ${r.pos}`)
  if (value !== undefined) into[key] = value
}

/** Reads repeated KeyValue fields numbered `field` of a message until `end`; skips the rest. */
function readAttributesMessage(r: Reader, end: number, field: number, into: MutableAttributes, what: string) {
  while (r.pos < end) {
    const at = r.pos
    const tag = readTag(r)
    if (tag >>> 3 === field) {
      expectWire(tag & 7, WT_LEN, what, at)
      readKeyValue(r, subEnd(r, end, what), into, 0)
    } else skipField(r, tag & 7, end)
  }
  if (r.pos !== end) fail(`${what}: message overruns its length at offset ${r.pos}`)
}

interface RawEvent {
  name: string
  hi: number
  lo: number
  attributes: MutableAttributes
}

function readEvent(r: Reader, end: number): RawEvent {
  const ev: RawEvent = { name: '', hi: 0, lo: 0, attributes: newAttributes() }
  while (r.pos < end) {
    const at = r.pos
    const tag = readTag(r)
    const wt = tag & 7
    switch (tag >>> 3) {
      case 1:
        expectWire(wt, WT_FIXED64, 'Span.Event.time_unix_nano', at)
        ev.lo = r.fixed32()
        ev.hi = r.fixed32()
        break
      case 2:
        expectWire(wt, WT_LEN, 'Span.Event.name', at)
        ev.name = readString(r)
        break
      case 3:
        expectWire(wt, WT_LEN, 'Span.Event.attributes', at)
        readKeyValue(r, subEnd(r, end, 'Span.Event.attributes'), ev.attributes, 0)
        break
      default:
        skipField(r, wt, end)
    }
  }
  if (r.pos !== end) fail(`Span.Event overruns its length at offset ${r.pos}`)
  return ev
}

function readSpan(r: Reader, end: number, resource: MutableAttributes): OtlpSpan {
  let traceId = ''
  let spanId = ''
  let parentSpanId = ''
  let name = ''
  let kind = 0
  let startHi = 0
  let startLo = 0
  let endHi = 0
  let endLo = 0
  const attributes = newAttributes()
  let rawEvents: RawEvent[] | undefined
  let statusCode = 0
  let statusMessage = ''
  while (r.pos < end) {
    const at = r.pos
    const tag = readTag(r)
    const wt = tag & 7
    switch (tag >>> 3) {
      case 1:
        expectWire(wt, WT_LEN, 'Span.trace_id', at)
        traceId = readHex(r, 16, 'Span.trace_id', at)
        break
      case 2:
        expectWire(wt, WT_LEN, 'Span.span_id', at)
        spanId = readHex(r, 8, 'Span.span_id', at)
        break
      case 4:
        expectWire(wt, WT_LEN, 'Span.parent_span_id', at)
        parentSpanId = readHex(r, 8, 'Span.parent_span_id', at)
        break
      case 5:
        expectWire(wt, WT_LEN, 'Span.name', at)
        name = readString(r)
        break
      case 6:
        expectWire(wt, WT_VARINT, 'Span.kind', at)
        kind = r.int32()
        break
      case 7:
        expectWire(wt, WT_FIXED64, 'Span.start_time_unix_nano', at)
        startLo = r.fixed32()
        startHi = r.fixed32()
        break
      case 8:
        expectWire(wt, WT_FIXED64, 'Span.end_time_unix_nano', at)
        endLo = r.fixed32()
        endHi = r.fixed32()
        break
      case 9:
        expectWire(wt, WT_LEN, 'Span.attributes', at)
        readKeyValue(r, subEnd(r, end, 'Span.attributes'), attributes, 0)
        break
      case 11:
        expectWire(wt, WT_LEN, 'Span.events', at)
        ;(rawEvents ??= []).push(readEvent(r, subEnd(r, end, 'Span.events')))
        break
      case 15: {
        expectWire(wt, WT_LEN, 'Span.status', at)
        const e = subEnd(r, end, 'Span.status')
        while (r.pos < e) {
          const at2 = r.pos
          const t = readTag(r)
          if (t >>> 3 === 2) {
            expectWire(t & 7, WT_LEN, 'Status.message', at2)
            statusMessage = readString(r)
          } else if (t >>> 3 === 3) {
            expectWire(t & 7, WT_VARINT, 'Status.code', at2)
            statusCode = r.int32()
          } else skipField(r, t & 7, e)
        }
        if (r.pos !== e) fail(`Span.status overruns its length at offset ${r.pos}`)
        break
      }
      default:
        skipField(r, wt, end)
    }
  }
  if (r.pos !== end) fail(`Span overruns its length at offset ${r.pos}`)
  const events: OtlpEvent[] = []
  if (rawEvents)
    for (const ev of rawEvents)
      events.push({
        name: ev.name,
        offsetNs: (ev.hi - startHi) * TWO_32 + (ev.lo - startLo),
        attributes: ev.attributes,
      })
  return {
    traceId,
    spanId,
    parentSpanId,
    name,
    kind,
    startTimeUnixNano: startHi * TWO_32 + startLo,
    durationNs: (endHi - startHi) * TWO_32 + (endLo - startLo),
    attributes,
    resource,
    events,
    statusCode,
    statusMessage,
  }
}

function readResourceSpans(r: Reader, end: number, out: OtlpSpan[]): void {
  // Filled in place, so spans decoded before the resource field (fields may come in any order) share it.
  const resource = newAttributes()
  while (r.pos < end) {
    const at = r.pos
    const tag = readTag(r)
    const wt = tag & 7
    const field = tag >>> 3
    if (field === 1) {
      expectWire(wt, WT_LEN, 'ResourceSpans.resource', at)
      readAttributesMessage(r, subEnd(r, end, 'ResourceSpans.resource'), 1, resource, 'Resource.attributes')
    } else if (field === 2) {
      expectWire(wt, WT_LEN, 'ResourceSpans.scope_spans', at)
      const e = subEnd(r, end, 'ResourceSpans.scope_spans')
      while (r.pos < e) {
        const at2 = r.pos
        const t = readTag(r)
        if (t >>> 3 === 2) {
          expectWire(t & 7, WT_LEN, 'ScopeSpans.spans', at2)
          out.push(readSpan(r, subEnd(r, e, 'ScopeSpans.spans'), resource))
        } else skipField(r, t & 7, e)
      }
      if (r.pos !== e) fail(`ScopeSpans overruns its length at offset ${r.pos}`)
    } else skipField(r, wt, end)
  }
  if (r.pos !== end) fail(`ResourceSpans overruns its length at offset ${r.pos}`)
}

/**
 * Decodes an OTLP `ExportTraceServiceRequest` in protobuf (the body of `POST /v1/traces` with
 * `Content-Type: application/x-protobuf`), reading only the fields tailguard uses. Never throws: a payload
 * that is not a valid request comes back as `{ ok: false, error }` saying where it went wrong.
 *
 * @example
 * ```ts
 * const r = decodeTracesProtobuf(body)
 * if (!r.ok) reply.code(400).send(r.error)
 * else mapper.map(r.spans, sink)
 * ```
 */
export function decodeTracesProtobuf(body: Uint8Array): DecodeResult {
  try {
    // Always a Buffer, so strings decode with Buffer#toString.
    const r = protobuf.Reader.create(
      Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength),
    )
    const spans: OtlpSpan[] = []
    const end = r.len
    while (r.pos < end) {
      const at = r.pos
      const tag = readTag(r)
      if (tag >>> 3 === 1) {
        expectWire(tag & 7, WT_LEN, 'ExportTraceServiceRequest.resource_spans', at)
        readResourceSpans(r, subEnd(r, end, 'ExportTraceServiceRequest.resource_spans'), spans)
      } else skipField(r, tag & 7, end)
    }
    return { ok: true, spans }
  } catch (err) {
    // protobufjs throws RangeError/Error on truncated or malformed input; we throw ProtobufDecodeError.
    const message = err instanceof Error ? err.message : String(err)
    return { ok: false, error: `invalid OTLP protobuf payload: ${message}` }
  }
}

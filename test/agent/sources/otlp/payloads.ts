import protobuf from 'protobufjs/minimal.js'

// Hand-built OTLP payloads for the tests: written once in the OTLP/JSON shape, and encoded to protobuf by a
// small writer that follows the same field numbers as the proto files (so both decoders see the same data).

export type JsonAnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string | number }
  | { doubleValue: number }
  | { bytesValue: string }
  | { arrayValue: { values: JsonAnyValue[] } }
  | { kvlistValue: { values: JsonKeyValue[] } }
export interface JsonKeyValue {
  key: string
  value: JsonAnyValue
}
export interface JsonEvent {
  timeUnixNano: string
  name: string
  attributes?: JsonKeyValue[]
}
export interface JsonSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind?: number
  startTimeUnixNano: string
  endTimeUnixNano: string
  attributes?: JsonKeyValue[]
  events?: JsonEvent[]
  status?: { code?: number; message?: string }
}
export interface JsonRequest {
  resourceSpans: {
    resource?: { attributes: JsonKeyValue[] }
    scopeSpans: { scope?: { name: string }; spans: JsonSpan[] }[]
  }[]
}

/** Attributes from a plain object: strings, booleans, integers (as intValue), other numbers (doubleValue). */
export function attrs(o: Record<string, string | number | boolean>): JsonKeyValue[] {
  return Object.entries(o).map(([key, v]) => ({
    key,
    value:
      typeof v === 'string'
        ? { stringValue: v }
        : typeof v === 'boolean'
          ? { boolValue: v }
          : Number.isInteger(v)
            ? { intValue: String(v) }
            : { doubleValue: v },
  }))
}

/** Decimal nanoseconds since the epoch: `base` plus `offsetNs`, exactly (BigInt arithmetic). */
export function ns(offsetNs: number | bigint, base = 1_763_700_000_000_000_000n): string {
  return (base + BigInt(offsetNs)).toString()
}

export function span(
  p: Partial<JsonSpan> & { name: string; durationNs?: number; startNs?: number },
): JsonSpan {
  const start = p.startNs ?? 0
  const { durationNs, startNs: _s, ...rest } = p
  return {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    startTimeUnixNano: ns(start),
    endTimeUnixNano: ns(start + (durationNs ?? 1_000_000)),
    ...rest,
  }
}

export function request(resource: Record<string, string | number | boolean>, spans: JsonSpan[]): JsonRequest {
  return {
    resourceSpans: [
      { resource: { attributes: attrs(resource) }, scopeSpans: [{ scope: { name: 'test' }, spans }] },
    ],
  }
}

const Writer = protobuf.Writer
type W = protobuf.Writer

function fixed64(w: W, field: number, decimal: string): void {
  const v = BigInt(decimal)
  w.uint32((field << 3) | 1)
    .fixed32(Number(v & 0xffffffffn))
    .fixed32(Number(v >> 32n))
}

function anyValue(w: W, v: JsonAnyValue): void {
  if ('stringValue' in v) w.uint32((1 << 3) | 2).string(v.stringValue)
  else if ('boolValue' in v) w.uint32((2 << 3) | 0).bool(v.boolValue)
  else if ('intValue' in v) w.uint32((3 << 3) | 0).int64(Number(v.intValue))
  else if ('doubleValue' in v) w.uint32((4 << 3) | 1).double(v.doubleValue)
  else if ('bytesValue' in v) w.uint32((7 << 3) | 2).bytes(Buffer.from(v.bytesValue, 'base64'))
  else if ('arrayValue' in v) {
    w.uint32((5 << 3) | 2).fork()
    for (const x of v.arrayValue.values) {
      w.uint32((1 << 3) | 2).fork()
      anyValue(w, x)
      w.ldelim()
    }
    w.ldelim()
  } else {
    w.uint32((6 << 3) | 2).fork()
    for (const kv of v.kvlistValue.values) keyValue(w, 1, kv)
    w.ldelim()
  }
}

function keyValue(w: W, field: number, kv: JsonKeyValue): void {
  w.uint32((field << 3) | 2).fork()
  w.uint32((1 << 3) | 2).string(kv.key)
  w.uint32((2 << 3) | 2).fork()
  anyValue(w, kv.value)
  w.ldelim()
  w.ldelim()
}

function spanMessage(w: W, s: JsonSpan): void {
  w.uint32((1 << 3) | 2).bytes(Buffer.from(s.traceId, 'hex'))
  w.uint32((2 << 3) | 2).bytes(Buffer.from(s.spanId, 'hex'))
  if (s.parentSpanId) w.uint32((4 << 3) | 2).bytes(Buffer.from(s.parentSpanId, 'hex'))
  w.uint32((5 << 3) | 2).string(s.name)
  if (s.kind !== undefined) w.uint32((6 << 3) | 0).int32(s.kind)
  fixed64(w, 7, s.startTimeUnixNano)
  fixed64(w, 8, s.endTimeUnixNano)
  for (const kv of s.attributes ?? []) keyValue(w, 9, kv)
  for (const e of s.events ?? []) {
    w.uint32((11 << 3) | 2).fork()
    fixed64(w, 1, e.timeUnixNano)
    w.uint32((2 << 3) | 2).string(e.name)
    for (const kv of e.attributes ?? []) keyValue(w, 3, kv)
    w.ldelim()
  }
  if (s.status) {
    w.uint32((15 << 3) | 2).fork()
    if (s.status.message) w.uint32((2 << 3) | 2).string(s.status.message)
    if (s.status.code) w.uint32((3 << 3) | 0).int32(s.status.code)
    w.ldelim()
  }
}

/** Encodes a request written in the OTLP/JSON shape as an OTLP protobuf `ExportTraceServiceRequest`. */
export function toProtobuf(req: JsonRequest): Buffer {
  const w = Writer.create()
  for (const rs of req.resourceSpans) {
    w.uint32((1 << 3) | 2).fork()
    if (rs.resource) {
      w.uint32((1 << 3) | 2).fork()
      for (const kv of rs.resource.attributes) keyValue(w, 1, kv)
      w.ldelim()
    }
    for (const ss of rs.scopeSpans) {
      w.uint32((2 << 3) | 2).fork()
      if (ss.scope)
        w.uint32((1 << 3) | 2)
          .fork()
          .uint32((1 << 3) | 2)
          .string(ss.scope.name)
          .ldelim()
      for (const s of ss.spans) {
        w.uint32((2 << 3) | 2).fork()
        spanMessage(w, s)
        w.ldelim()
      }
      w.ldelim()
    }
    w.ldelim()
  }
  return Buffer.from(w.finish())
}

export const toJson = (req: JsonRequest): Buffer => Buffer.from(JSON.stringify(req))

import protobuf from 'protobufjs/minimal.js'
import { describe, expect, it } from 'vitest'
import { decodeTracesJson, decodeTracesJsonValue, decodeTracesProtobuf } from '../../../../agent/index.js'
import type { DecodeResult, OtlpSpan } from '../../../../agent/index.js'
import { attrs, ns, request, span, toJson, toProtobuf } from './payloads.js'
import type { JsonRequest } from './payloads.js'

function spansOf(r: DecodeResult): OtlpSpan[] {
  if (!r.ok) throw new Error(r.error)
  return r.spans
}

const both = (req: JsonRequest) => ({
  protobuf: spansOf(decodeTracesProtobuf(toProtobuf(req))),
  json: spansOf(decodeTracesJson(toJson(req))),
})

const rich: JsonRequest = request(
  { 'service.name': 'chat', 'host.name': 'node-a', 'service.instance.id': 'r0' },
  [
    span({
      name: 'kernel',
      traceId: '5b8efff798038103d269b633813fc60c',
      spanId: 'eee19b7ec3c1b174',
      parentSpanId: 'eee19b7ec3c1b173',
      kind: 2,
      startNs: 1000,
      durationNs: 4_200_123,
      attributes: [
        ...attrs({
          'tailguard.phase': 'kernel',
          'gen_ai.request.model': 'llama',
          batch: 8,
          ratio: 0.25,
          warm: true,
        }),
        {
          key: 'shape',
          value: { arrayValue: { values: [{ intValue: '1' }, { intValue: 2 }, { stringValue: 'x' }] } },
        },
        { key: 'nested', value: { kvlistValue: { values: attrs({ a: 'b', n: 3 }) } } },
        { key: 'blob', value: { bytesValue: Buffer.from([1, 2, 255]).toString('base64') } },
      ],
      events: [
        { timeUnixNano: ns(1000 + 2_000_001), name: 'tailguard.first_token', attributes: attrs({ k: 'v' }) },
      ],
      status: { code: 2, message: 'CUDA out of memory' },
    }),
    span({ name: 'queue', spanId: '00000000000000aa', startNs: 5, durationNs: 800_000 }),
  ],
)

describe('OTLP decoders (protobuf and JSON agree)', () => {
  it('decode the same request to the same spans', () => {
    const { protobuf: p, json: j } = both(rich)
    expect(p).toHaveLength(2)
    expect(j).toEqual(p)
    const k = p[0]!
    expect(k).toMatchObject({
      traceId: '5b8efff798038103d269b633813fc60c',
      spanId: 'eee19b7ec3c1b174',
      parentSpanId: 'eee19b7ec3c1b173',
      name: 'kernel',
      kind: 2,
      durationNs: 4_200_123,
      statusCode: 2,
      statusMessage: 'CUDA out of memory',
    })
    expect({ ...k.attributes }).toEqual({
      'tailguard.phase': 'kernel',
      'gen_ai.request.model': 'llama',
      batch: 8,
      ratio: 0.25,
      warm: true,
      shape: [1, 2, 'x'],
      nested: Object.assign(Object.create(null) as object, { a: 'b', n: 3 }),
      blob: new Uint8Array([1, 2, 255]),
    })
    expect({ ...k.resource }).toEqual({
      'service.name': 'chat',
      'host.name': 'node-a',
      'service.instance.id': 'r0',
    })
    expect(k.resource).toBe(p[1]!.resource) // one object per resource
    expect(k.events).toHaveLength(1)
    expect(k.events[0]!.name).toBe('tailguard.first_token')
    expect(k.events[0]!.offsetNs).toBe(2_000_001)
    expect({ ...k.events[0]!.attributes }).toEqual({ k: 'v' })
  })

  it('keep durations exact to the nanosecond far from the epoch (64-bit times)', () => {
    const req = request({ 'service.name': 's' }, [
      span({ name: 'a', startTimeUnixNano: '18446744073709551000', endTimeUnixNano: '18446744073709551001' }),
      span({ name: 'b', startTimeUnixNano: '1763700000999999999', endTimeUnixNano: '1763700001000000000' }),
      span({ name: 'c', startTimeUnixNano: '1763700001000000000', endTimeUnixNano: '1763700000000000000' }),
    ])
    for (const spans of Object.values(both(req))) expect(spans.map((s) => s.durationNs)).toEqual([1, 1, -1e9])
  })

  it('accept JSON times as numbers, enums as names, and ignore unknown keys', () => {
    const r = decodeTracesJsonValue({
      resourceSpans: [
        {
          futureField: 1,
          scopeSpans: [
            {
              spans: [
                {
                  name: 'x',
                  kind: 'SPAN_KIND_SERVER',
                  startTimeUnixNano: 1000,
                  endTimeUnixNano: 3500,
                  status: { code: 'STATUS_CODE_ERROR' },
                  extra: { a: 1 },
                },
              ],
            },
          ],
        },
      ],
    })
    const s = spansOf(r)[0]!
    expect(s).toMatchObject({ name: 'x', kind: 2, durationNs: 2500, statusCode: 2 })
  })

  it('treat "__proto__" as a plain attribute key', () => {
    const req = request({ 'service.name': 's' }, [
      span({
        name: 'q',
        attributes: [
          { key: '__proto__', value: { stringValue: 'x' } },
          { key: 'toString', value: { stringValue: 'y' } },
        ],
      }),
    ])
    for (const spans of Object.values(both(req))) {
      expect(spans[0]!.attributes['__proto__']).toBe('x')
      expect(spans[0]!.attributes['toString']).toBe('y')
      expect(({} as Record<string, unknown>)['x']).toBeUndefined()
    }
  })

  it('accept an empty request', () => {
    expect(decodeTracesProtobuf(Buffer.alloc(0))).toEqual({ ok: true, spans: [] })
    expect(decodeTracesJson('{}')).toEqual({ ok: true, spans: [] })
  })
})

describe('protobuf decoder on bad bytes', () => {
  const good = toProtobuf(rich)

  it('skips unknown fields of every wire type', () => {
    const w = protobuf.Writer.create()
    w.uint32((99 << 3) | 0).uint64(12345)
    w.uint32((98 << 3) | 1).fixed64(7)
    w.uint32((97 << 3) | 5).fixed32(7)
    w.uint32((96 << 3) | 2).string('ignored')
    const withUnknown = Buffer.concat([Buffer.from(w.finish()), good])
    expect(spansOf(decodeTracesProtobuf(withUnknown))).toEqual(spansOf(decodeTracesProtobuf(good)))
  })

  it('reports truncation instead of throwing', () => {
    for (const cut of [1, 2, 10, good.length >> 1, good.length - 1]) {
      const r = decodeTracesProtobuf(good.subarray(0, cut))
      expect(r.ok).toBe(false)
      if (!r.ok) expect(r.error).toMatch(/^invalid OTLP protobuf payload: /)
    }
  })

  it('reports a length that runs past the end', () => {
    const bad = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00])
    const r = decodeTracesProtobuf(bad)
    expect(r).toEqual({
      ok: false,
      error: expect.stringMatching(/resource_spans: length 4294967295 at offset 1 runs past/),
    })
  })

  it('reports a known field with the wrong wire type', () => {
    const bad = Buffer.from([(1 << 3) | 0, 0x01]) // resource_spans as a varint
    const r = decodeTracesProtobuf(bad)
    expect(r).toEqual({
      ok: false,
      error: expect.stringMatching(/resource_spans at offset 0: wire type 0, expected 2/),
    })
  })

  it('reports invalid wire types and field number 0', () => {
    expect(decodeTracesProtobuf(Buffer.from([(5 << 3) | 7])).ok).toBe(false)
    expect(decodeTracesProtobuf(Buffer.from([0x00])).ok).toBe(false)
  })

  it('refuses attribute values nested deeper than 32', () => {
    let v: Record<string, unknown> = { stringValue: 'leaf' }
    for (let i = 0; i < 40; i++) v = { arrayValue: { values: [v] } }
    const req = request({ 'service.name': 's' }, [
      span({ name: 'q', attributes: [{ key: 'deep', value: v as never }] }),
    ])
    const p = decodeTracesProtobuf(toProtobuf(req))
    const j = decodeTracesJson(toJson(req))
    expect(p).toEqual({ ok: false, error: expect.stringMatching(/nested deeper than 32/) })
    expect(j).toEqual({ ok: false, error: expect.stringMatching(/nested deeper than 32/) })
  })

  it('refuse ids of the wrong length: 16 bytes for a trace, 8 for a span, or none', () => {
    const short = request({ 'service.name': 's' }, [span({ name: 'q', traceId: 'abcd' })])
    expect(decodeTracesProtobuf(toProtobuf(short))).toEqual({
      ok: false,
      error: expect.stringMatching(/Span\.trace_id at offset \d+: 2 bytes, expected 16/),
    })
    expect(decodeTracesJson(toJson(short))).toEqual({
      ok: false,
      error: expect.stringMatching(
        /spans\[0\]\.traceId: expected 32 hex digits \(16 bytes\), got the string "abcd"/,
      ),
    })
    const long = request({ 'service.name': 's' }, [span({ name: 'q', spanId: 'b7ad6b7169203331ff' })])
    expect(decodeTracesProtobuf(toProtobuf(long))).toEqual({
      ok: false,
      error: expect.stringMatching(/Span\.span_id at offset \d+: 9 bytes, expected 8/),
    })
    // No ids at all (an empty field) decode as empty.
    const none = spansOf(
      decodeTracesJson(toJson(request({}, [span({ name: 'q', traceId: '', spanId: '' })]))),
    )
    expect([none[0]!.traceId, none[0]!.spanId]).toEqual(['', ''])
  })
})

describe('JSON decoder on bad input', () => {
  const cases: [string, unknown, RegExp][] = [
    ['not an object', [1, 2], /\$: expected an object, got an array/],
    ['resourceSpans not an array', { resourceSpans: 'x' }, /\$\.resourceSpans: expected an array/],
    [
      'spans not an array',
      { resourceSpans: [{ scopeSpans: [{ spans: {} }] }] },
      /\$\.resourceSpans\[0\]\.scopeSpans\[0\]\.spans: expected an array, got an object/,
    ],
    [
      'time not a decimal',
      { resourceSpans: [{ scopeSpans: [{ spans: [{ name: 'a', startTimeUnixNano: '12ab' }] }] }] },
      /spans\[0\]\.startTimeUnixNano: expected a decimal integer string, got the string "12ab"/,
    ],
    [
      'name not a string',
      { resourceSpans: [{ scopeSpans: [{ spans: [{ name: 7 }] }] }] },
      /spans\[0\]\.name: expected a string, got number 7/,
    ],
    [
      'intValue not an integer',
      {
        resourceSpans: [
          { scopeSpans: [{ spans: [{ attributes: [{ key: 'n', value: { intValue: 'ten' } }] }] }] },
        ],
      },
      /attributes\[0\]\.value\.intValue: expected an integer or a decimal string/,
    ],
    [
      'boolValue not a boolean',
      {
        resourceSpans: [
          { resource: { attributes: [{ key: 'b', value: { boolValue: 'yes' } }] }, scopeSpans: [] },
        ],
      },
      /resource\.attributes\[0\]\.value\.boolValue: expected a boolean/,
    ],
    [
      'a trace id is not hex (OTLP/JSON writes ids in base 16)',
      { resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'not-a-trace-id-but-32-characters' }] }] }] },
      /spans\[0\]\.traceId: expected 32 hex digits \(16 bytes\), got the string "not-a-trace-id-but-32-characters"/,
    ],
    [
      'a span id is base64, as the protobuf JSON mapping writes bytes',
      { resourceSpans: [{ scopeSpans: [{ spans: [{ parentSpanId: 't61rcWkgMzE=' }] }] }] },
      /spans\[0\]\.parentSpanId: expected 16 hex digits \(8 bytes\)/,
    ],
    [
      'status code not an enum',
      { resourceSpans: [{ scopeSpans: [{ spans: [{ status: { code: 'BROKEN' } }] }] }] },
      /status\.code: expected an enum integer/,
    ],
  ]
  for (const [what, value, message] of cases)
    it(`names the path when ${what}`, () => {
      const r = decodeTracesJsonValue(value)
      expect(r.ok).toBe(false)
      if (!r.ok) expect(r.error).toMatch(message)
    })

  it('reports unparseable JSON', () => {
    const r = decodeTracesJson('{"resourceSpans": [')
    expect(r).toEqual({ ok: false, error: expect.stringMatching(/^invalid JSON: /) })
  })
})

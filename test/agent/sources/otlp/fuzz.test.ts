import { gzipSync } from 'node:zlib'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRecorder, otlpReceiver } from '../../../../agent/index.js'
import type { Recorder } from '../../../../agent/index.js'
import { prng } from './helpers.js'
import { attrs, ns, request, span, toProtobuf } from './payloads.js'
import type { JsonRequest } from './payloads.js'

// Mutated payloads through app.inject(): the receiver must never answer 5xx, never crash, and must keep
// serving (a valid request afterwards succeeds). Seeded, so a failure names a reproducible case.

const N = 10_000
const BATCH = 25

const base: JsonRequest = {
  resourceSpans: [
    ...request({ 'service.name': 'vllm', 'host.name': 'gpu-1' }, [
      span({
        name: 'llm_request',
        durationNs: 2e9,
        attributes: attrs({
          'gen_ai.response.model': 'llama',
          'gen_ai.latency.e2e': 2.0,
          'gen_ai.latency.time_in_queue': 0.1,
          'gen_ai.usage.completion_tokens': 64,
        }),
      }),
      span({
        name: 'kernel',
        durationNs: 4e6,
        attributes: [
          ...attrs({ 'tailguard.phase': 'kernel', batch: 8 }),
          { key: 'dims', value: { arrayValue: { values: [{ intValue: '1' }, { doubleValue: 2.5 }] } } },
          { key: 'kv', value: { kvlistValue: { values: attrs({ a: 'b' }) } } },
          { key: 'raw', value: { bytesValue: 'AQID' } },
        ],
        events: [{ timeUnixNano: ns(1000), name: 'tailguard.first_token' }],
        status: { code: 2, message: 'oom' },
      }),
    ]).resourceSpans,
    ...request({ 'service.name': 'triton' }, [
      span({
        name: 'resnet',
        spanId: 'aaaaaaaaaaaaaaaa',
        attributes: attrs({ 'triton.model_name': 'resnet', 'triton.model_version': 1 }),
        events: [{ timeUnixNano: ns(10), name: 'QUEUE_START' }],
      }),
      span({
        name: 'compute',
        parentSpanId: 'aaaaaaaaaaaaaaaa',
        events: [
          { timeUnixNano: ns(20), name: 'COMPUTE_START' },
          { timeUnixNano: ns(30), name: 'COMPUTE_INPUT_END' },
          { timeUnixNano: ns(40), name: 'COMPUTE_OUTPUT_START' },
          { timeUnixNano: ns(50), name: 'COMPUTE_END' },
        ],
      }),
    ]).resourceSpans,
  ],
}
const baseProto = toProtobuf(base)
const baseJson = JSON.stringify(base)

const CONTENT_TYPES = [
  'application/x-protobuf',
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/X-PROTOBUF',
  'text/plain',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
  '',
  ';;;',
]

let app: FastifyInstance
let recorder: Recorder
beforeAll(async () => {
  recorder = createRecorder()
  app = Fastify()
  await app.register(otlpReceiver, {
    sink: recorder,
    bodyLimitBytes: 256 * 1024,
    maxDecompressedBytes: 1024 * 1024,
  })
  await app.ready()
})
afterAll(async () => {
  await app.close()
})

interface Case {
  body: Buffer
  headers: Record<string, string>
}

function pick<T>(rand: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rand() * xs.length)]!
}

function randomBytes(rand: () => number, n: number): Buffer {
  const b = Buffer.alloc(n)
  for (let i = 0; i < n; i++) b[i] = Math.floor(rand() * 256)
  return b
}

function mutateBytes(rand: () => number, src: Buffer): Buffer {
  const b = Buffer.from(src)
  const at = Math.floor(rand() * Math.max(1, b.length))
  switch (Math.floor(rand() * 7)) {
    case 0: {
      const flips = 1 + Math.floor(rand() * 8)
      for (let i = 0; i < flips; i++) {
        const p = Math.floor(rand() * b.length)
        b[p] = b[p]! ^ (1 << Math.floor(rand() * 8))
      }
      return b
    }
    case 1:
      return b.subarray(0, at)
    case 2:
      return Buffer.concat([
        b.subarray(0, at),
        randomBytes(rand, 1 + Math.floor(rand() * 32)),
        b.subarray(at),
      ])
    case 3: // a huge length prefix
      return Buffer.concat([
        b.subarray(0, at),
        Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]),
        b.subarray(at),
      ])
    case 4: {
      const len = Math.floor(rand() * 200)
      return Buffer.concat([b.subarray(0, at), b.subarray(at, at + len), b.subarray(at)])
    }
    case 5:
      return randomBytes(rand, Math.floor(rand() * 2048))
    default: {
      const p = Math.floor(rand() * b.length)
      b[p] = Math.floor(rand() * 256)
      return b
    }
  }
}

const ODD_VALUES: unknown[] = [
  null,
  0,
  -1,
  1e308,
  -1e308,
  '',
  'x',
  '-1',
  '99999999999999999999999',
  'NaN',
  true,
  [],
  {},
  [[[]]],
  { stringValue: 5 },
  { intValue: 'abc' },
  { arrayValue: { values: 'no' } },
  { kvlistValue: { values: [{ key: 1 }] } },
  { bytesValue: '***' },
  Array.from({ length: 50 }, () => ({})),
]

function mutateJsonValue(rand: () => number, v: unknown, depth: number): unknown {
  if (depth > 0 && rand() < 0.08) return pick(rand, ODD_VALUES)
  if (Array.isArray(v)) {
    const out = v.map((x) => mutateJsonValue(rand, x, depth + 1))
    if (rand() < 0.05) out.push(pick(rand, ODD_VALUES))
    return out
  }
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) {
      if (rand() < 0.03) continue
      out[rand() < 0.02 ? k.toUpperCase() : k] = mutateJsonValue(rand, x, depth + 1)
    }
    return out
  }
  return v
}

function mutateJsonText(rand: () => number, s: string): string {
  const at = Math.floor(rand() * s.length)
  switch (Math.floor(rand() * 4)) {
    case 0:
      return s.slice(0, at)
    case 1:
      return (
        s.slice(0, at) +
        pick(rand, ['{', '}', '[', ']', '"', ',', ':', '\\', '\u0000', '1e999']) +
        s.slice(at + 1)
      )
    case 2:
      return s.slice(0, at) + '['.repeat(Math.floor(rand() * 5000)) + s.slice(at)
    default:
      return s.slice(0, at) + s.slice(at + Math.floor(rand() * 100))
  }
}

function headersFor(rand: () => number, preferred: string): Record<string, string> {
  const h: Record<string, string> = {}
  const r = rand()
  const type = r < 0.8 ? preferred : pick(rand, CONTENT_TYPES)
  if (type !== '') h['content-type'] = type
  if (rand() < 0.03) h['content-encoding'] = pick(rand, ['gzip', 'br', 'deflate', 'identity', 'x'])
  return h
}

function protobufCase(rand: () => number): Case {
  const body = mutateBytes(rand, rand() < 0.3 ? mutateBytes(rand, baseProto) : baseProto)
  const headers = headersFor(rand, 'application/x-protobuf')
  if (rand() < 0.1) {
    headers['content-encoding'] = 'gzip'
    return { body: rand() < 0.5 ? gzipSync(body) : mutateBytes(rand, gzipSync(body)), headers }
  }
  return { body, headers }
}

function jsonCase(rand: () => number): Case {
  const text = rand() < 0.5 ? JSON.stringify(mutateJsonValue(rand, base, 0)) : mutateJsonText(rand, baseJson)
  const headers = headersFor(rand, 'application/json')
  if (rand() < 0.1) {
    headers['content-encoding'] = 'gzip'
    return { body: gzipSync(text), headers }
  }
  return { body: Buffer.from(text), headers }
}

async function run(make: (rand: () => number) => Case, seed: number) {
  const rand = prng(seed)
  const statuses = new Map<number, number>()
  for (let i = 0; i < N; i += BATCH) {
    const cases = Array.from({ length: Math.min(BATCH, N - i) }, () => make(rand))
    const responses = await Promise.all(
      cases.map((c) =>
        app.inject({ method: 'POST', url: '/v1/traces', payload: c.body, headers: c.headers }),
      ),
    )
    responses.forEach((res, j) => {
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      if (res.statusCode >= 500)
        throw new Error(`case ${i + j} (seed ${seed}) answered ${res.statusCode}: ${res.body.slice(0, 200)}`)
      if (res.statusCode >= 400) expect(res.body.length).toBeGreaterThan(0)
    })
  }
  // Still serving: a valid request is accepted and recorded.
  recorder.drain()
  const ok = await app.inject({
    method: 'POST',
    url: '/v1/traces',
    payload: baseProto,
    headers: { 'content-type': 'application/x-protobuf' },
  })
  expect(ok.statusCode).toBe(200)
  expect(recorder.drain().series.length).toBeGreaterThan(0)
  return statuses
}

describe('fuzzing the receiver', () => {
  it(`never answers 5xx to ${N} mutated protobuf payloads`, async () => {
    const statuses = await run(protobufCase, 0x5eed)
    // The mutations reach both outcomes: some payloads still decode, many do not.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(100)
    expect(statuses.get(400) ?? 0).toBeGreaterThan(1000)
  })

  it(`never answers 5xx to ${N} mutated JSON payloads`, async () => {
    const statuses = await run(jsonCase, 0xbeef)
    expect(statuses.get(200) ?? 0).toBeGreaterThan(100)
    expect(statuses.get(400) ?? 0).toBeGreaterThan(1000)
  })
})

import { gzipSync } from 'node:zlib'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { createRecorder, otlpReceiver } from '../../../../agent/index.js'
import type { OtlpReceiverOptions, Recorder } from '../../../../agent/index.js'
import { refusalMessage } from '../../../../agent/sources/otlp/receiver.js'
import { toJson, toProtobuf } from './payloads.js'
import { decodePartialSuccess, decodeTwoFields, good, partly } from './helpers.js'

let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  app = undefined
})

async function build(
  options: Partial<OtlpReceiverOptions> = {},
): Promise<{ app: FastifyInstance; recorder: Recorder }> {
  const recorder = createRecorder()
  app = Fastify()
  await app.register(otlpReceiver, { sink: recorder, ...options })
  await app.ready()
  return { app, recorder }
}

const post = (a: FastifyInstance, body: Buffer | string, headers: Record<string, string>) =>
  a.inject({ method: 'POST', url: '/v1/traces', payload: body, headers })

describe('POST /v1/traces', () => {
  it('accepts protobuf: 200 with an empty ExportTraceServiceResponse and records the spans', async () => {
    const { app, recorder } = await build()
    const res = await post(app, toProtobuf(good), { 'content-type': 'application/x-protobuf' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/x-protobuf')
    expect(res.rawPayload.length).toBe(0)
    const { series } = recorder.drain()
    expect(Object.keys(series[0]!.histograms).sort()).toEqual(['kernel', 'queue'])
  })

  it('accepts JSON (with a charset parameter): 200 with {}', async () => {
    const { app, recorder } = await build()
    const res = await post(app, toJson(good), { 'content-type': 'application/json; charset=utf-8' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({})
    expect(recorder.drain().series).toHaveLength(1)
  })

  it('accepts gzip bodies in both encodings', async () => {
    const { app, recorder } = await build()
    for (const [body, type] of [
      [toProtobuf(good), 'application/x-protobuf'],
      [toJson(good), 'application/json'],
    ] as const) {
      const res = await post(app, gzipSync(body), { 'content-type': type, 'content-encoding': 'gzip' })
      expect(res.statusCode).toBe(200)
    }
    const s = recorder.drain().series[0]!
    expect(s.histograms.queue).toBeDefined()
  })

  it('answers partial_success with rejected_spans and the reasons, in the request encoding', async () => {
    const { app, recorder } = await build()
    const p = await post(app, toProtobuf(partly), { 'content-type': 'application/x-protobuf' })
    expect(p.statusCode).toBe(200)
    const ps = decodePartialSuccess(p.rawPayload)
    expect(ps?.one).toBe(2)
    expect(ps?.two).toMatch(/2 of 3 spans not recorded \(1 unknown_phase, 1 negative_duration\)/)

    const j = await post(app, toJson(partly), { 'content-type': 'application/json' })
    expect(j.statusCode).toBe(200)
    expect(j.json()).toEqual({
      partialSuccess: {
        rejectedSpans: '2',
        errorMessage: expect.stringMatching(/1 unknown_phase, 1 negative_duration/),
      },
    })
    expect(recorder.drain().dropped).toEqual({ unknown_phase: 2, negative_duration: 2 })
  })

  it('gives the hint for each reason a span was refused, and only those', () => {
    const msg = (refusedBy: Record<string, number>) =>
      refusalMessage({ accepted: 1, refused: Object.values(refusedBy).reduce((a, b) => a + b, 0), refusedBy })
    expect(msg({ negative_duration: 1 })).toBe(
      '1 of 2 spans not recorded (1 negative_duration); a span ended before it started (endTimeUnixNano < startTimeUnixNano)',
    )
    expect(msg({ unknown_phase: 2 })).toBe(
      "2 of 3 spans not recorded (2 unknown_phase); set the tailguard.phase attribute or add the span name to the mapping's spanNamePhases",
    )
    expect(msg({ unknown_phase: 1, negative_duration: 1 })).toMatch(
      /spanNamePhases; a span ended before it started/,
    )
  })

  it('answers 400 with a google.rpc.Status saying what was wrong for undecodable protobuf', async () => {
    const { app } = await build()
    const res = await post(app, toProtobuf(good).subarray(0, 20), {
      'content-type': 'application/x-protobuf',
    })
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toBe('application/x-protobuf')
    const status = decodeTwoFields(res.rawPayload)
    expect(status.one).toBe(3) // INVALID_ARGUMENT
    expect(status.two).toMatch(/^invalid OTLP protobuf payload: /)
  })

  it('answers 400 for malformed JSON and for JSON of the wrong shape, naming the problem', async () => {
    const { app } = await build()
    const a = await post(app, '{"resourceSpans": [', { 'content-type': 'application/json' })
    expect(a.statusCode).toBe(400)
    expect(a.json()).toEqual({ code: 3, message: expect.stringMatching(/^invalid JSON: /) })
    const b = await post(
      app,
      JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ name: 5 }] }] }] }),
      {
        'content-type': 'application/json',
      },
    )
    expect(b.statusCode).toBe(400)
    expect(b.json().message).toMatch(/spans\[0\]\.name: expected a string, got number 5/)
  })

  it('answers 400 for a body that is not valid gzip', async () => {
    const { app } = await build()
    const res = await post(app, Buffer.from('not gzip at all'), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().message).toMatch(/not valid gzip data/)
  })

  it('answers 415 for other content types and encodings', async () => {
    const { app } = await build()
    const a = await post(app, 'hello', { 'content-type': 'text/plain' })
    expect(a.statusCode).toBe(415)
    expect(a.json().message).toMatch(
      /unsupported Content-Type "text\/plain": use application\/x-protobuf or application\/json/,
    )
    const b = await post(app, toJson(good), { 'content-type': 'application/json', 'content-encoding': 'br' })
    expect(b.statusCode).toBe(415)
    expect(b.json().message).toMatch(/unsupported Content-Encoding "br"/)
    const c = await app.inject({ method: 'POST', url: '/v1/traces', payload: Buffer.from([1, 2, 3]) })
    expect(c.statusCode).toBe(415)
  })

  it('answers 413 for a body over the limit, and for one that inflates past the decompressed cap', async () => {
    const { app } = await build({ bodyLimitBytes: 1024, maxDecompressedBytes: 64 * 1024 })
    const big = Buffer.alloc(4096, 1)
    const a = await post(app, big, { 'content-type': 'application/x-protobuf' })
    expect(a.statusCode).toBe(413)
    expect(decodeTwoFields(a.rawPayload).two).toMatch(/larger than the limit of 1024 bytes/)
    const bomb = gzipSync(Buffer.alloc(128 * 1024, 0)) // a few hundred bytes, 128 KiB once inflated
    expect(bomb.length).toBeLessThan(1024)
    const b = await post(app, bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
    expect(b.statusCode).toBe(413)
    expect(b.json().message).toMatch(/larger than 65536 bytes once decompressed/)
  })

  it('requires the bearer token when one is configured: 401 when missing or wrong', async () => {
    const { app } = await build({ token: 'agent-token-1' })
    const none = await post(app, toJson(good), { 'content-type': 'application/json' })
    expect(none.statusCode).toBe(401)
    expect(none.json()).toEqual({ code: 16, message: 'missing bearer token' })
    expect(none.headers['www-authenticate']).toBe('Bearer')
    const wrong = await post(app, toJson(good), {
      'content-type': 'application/json',
      authorization: 'Bearer agent-token-2',
    })
    expect(wrong.statusCode).toBe(401)
    expect(wrong.json().message).toBe('wrong bearer token')
    const basic = await post(app, toJson(good), {
      'content-type': 'application/json',
      authorization: 'Basic YTpi',
    })
    expect(basic.statusCode).toBe(401)
    const ok = await post(app, toJson(good), {
      'content-type': 'application/json',
      authorization: 'Bearer agent-token-1',
    })
    expect(ok.statusCode).toBe(200)
  })

  it('reports each export to onExport, and survives an observer that throws', async () => {
    const seen: number[] = []
    const { app } = await build({
      onExport: (r) => {
        seen.push(r.statusCode)
        throw new Error('observer bug')
      },
    })
    expect((await post(app, toJson(good), { 'content-type': 'application/json' })).statusCode).toBe(200)
    expect((await post(app, 'x', { 'content-type': 'application/json' })).statusCode).toBe(400)
    expect(seen).toEqual([200, 400])
  })
})

// Issue #11 acceptance: property fuzz of the agent's OTLP/HTTP receiver, JSON and protobuf, FUZZ_RUNS
// (10,000) cases each, through app.inject on the real receiver and recorder. Generated: mutations of a
// valid export request (wrong types, non-finite and huge numbers, lone surrogates in labels, deep and wide
// values), and byte-level mutations of its protobuf encoding. Properties: never a 5xx, partial success
// counts what was refused, and nothing the recorder hands the shipper breaks the report format (bad input
// is refused or repaired where it enters, never forwarded).
import fc from 'fast-check'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRecorder, otlpReceiver } from '../../agent/index.js'
import type { Recorder } from '../../agent/index.js'
import { ReportSeriesSchema, strictValidator } from '../../collector/index.js'
import { attrs, request, span, toProtobuf } from '../agent/sources/otlp/payloads.js'
import type { JsonRequest } from '../agent/sources/otlp/payloads.js'
import { FUZZ_RUNS, FUZZ_SEED, hostileString, mutate, mutations } from '../helpers/hostile-arbitraries.js'

const checkSeries = strictValidator(ReportSeriesSchema)

const base: JsonRequest = request({ 'service.name': 'otlp-fuzz', 'host.name': 'gpu-1' }, [
  span({
    name: 'request',
    durationNs: 2e6,
    attributes: attrs({
      'tailguard.phase': 'total',
      'service.instance.id': 'r0',
      'tailguard.output_tokens': 12,
    }),
    events: [{ timeUnixNano: '1763700000000001000', name: 'tailguard.first_token' }],
  }),
  span({
    name: 'kernel',
    durationNs: 4e5,
    attributes: attrs({ model: 'llama' }),
    status: { code: 2, message: 'oom' },
  }),
  span({
    name: 'llm_request',
    durationNs: 3e9,
    attributes: attrs({
      'gen_ai.latency.e2e': 3,
      'gen_ai.latency.time_in_queue': 0.2,
      'gen_ai.usage.completion_tokens': 64,
    }),
  }),
])

let app: FastifyInstance
let recorder: Recorder
beforeAll(async () => {
  recorder = createRecorder()
  app = Fastify()
  await app.register(otlpReceiver, { sink: recorder, bodyLimitBytes: 1 << 20, maxDecompressedBytes: 4 << 20 })
  await app.ready()
})
afterAll(async () => app.close())

/** Posts, checks the answer, and checks that what the recorder would ship is a valid report. */
async function exportAndCheck(body: Buffer | string, contentType: string): Promise<void> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/traces',
    headers: { 'content-type': contentType },
    payload: body,
  })
  if (res.statusCode >= 500) throw new Error(`${res.statusCode}: ${res.body.slice(0, 300)}`)
  if (res.statusCode === 200 && contentType === 'application/json') {
    const ack = JSON.parse(res.body) as { partialSuccess?: { rejectedSpans?: string; errorMessage?: string } }
    if (
      ack.partialSuccess &&
      Number(ack.partialSuccess.rejectedSpans) > 0 &&
      !ack.partialSuccess.errorMessage
    )
      throw new Error('partial success without a message naming what was dropped')
  }
  for (const s of recorder.drain().series) {
    const problem = checkSeries(s)
    if (problem)
      throw new Error(`the recorder would forward a bad series: ${problem.path}: ${problem.message}`)
  }
}

/** A request with a hostile label value injected into a span or the resource. */
const hostileLabels = fc.record({
  key: fc.constantFrom(
    'service.name',
    'service.instance.id',
    'model',
    'host.name',
    'error.type',
    'tailguard.phase',
  ),
  value: hostileString,
  onResource: fc.boolean(),
})

describe(`OTLP receiver: property fuzz (${FUZZ_RUNS} cases each)`, () => {
  it('OTLP/JSON: never 5xx, never forwards a bad series', async () => {
    await fc.assert(
      fc.asyncProperty(mutations, hostileLabels, async (ms, label) => {
        const req = structuredClone(base) as unknown as {
          resourceSpans: Array<{
            resource: { attributes: unknown[] }
            scopeSpans: Array<{ spans: Array<{ attributes: unknown[] }> }>
          }>
        }
        const kv = { key: label.key, value: { stringValue: label.value } }
        if (label.onResource) req.resourceSpans[0]!.resource.attributes.push(kv)
        else req.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes.push(kv)
        await exportAndCheck(JSON.stringify(mutate(req, ms)) ?? 'null', 'application/json')
      }),
      { numRuns: FUZZ_RUNS, seed: FUZZ_SEED },
    )
  }, 600_000)

  it('OTLP/protobuf: never 5xx, never forwards a bad series', async () => {
    const valid = toProtobuf(base)
    await fc.assert(
      fc.asyncProperty(
        hostileLabels,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
        fc.option(fc.nat(), { freq: 4 }),
        async (label, flips, cut) => {
          const req = structuredClone(base)
          const first = req.resourceSpans[0]!.scopeSpans[0]!.spans[0]!
          first.attributes = [
            ...(first.attributes ?? []),
            { key: label.key, value: { stringValue: label.value } },
          ]
          let bytes = Buffer.from(toProtobuf(req))
          for (const [at, v] of flips) bytes[at % bytes.length] = v
          if (cut !== null) bytes = bytes.subarray(0, cut % (bytes.length + 1))
          await exportAndCheck(bytes, 'application/x-protobuf')
        },
      ),
      { numRuns: FUZZ_RUNS, seed: FUZZ_SEED },
    )
    // Still serving: a valid export is recorded.
    const res = await app.inject({
      method: 'POST',
      url: '/v1/traces',
      headers: { 'content-type': 'application/x-protobuf' },
      payload: valid,
    })
    expect(res.statusCode).toBe(200)
  }, 600_000)
})

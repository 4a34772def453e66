import {
  createRecorder,
  createSpanMapper,
  decodeTracesJson,
  decodeTracesProtobuf,
} from '../../agent/index.js'
import { attrs, request, span, toJson, toProtobuf } from '../agent/sources/otlp/payloads.js'
import type { JsonSpan } from '../agent/sources/otlp/payloads.js'
import type { Bench } from './table.js'

// OTLP spans decoded and recorded per second on one core (one thread), for protobuf and JSON export
// requests shaped like the OpenTelemetry SDK's (one resource with the usual attributes, 512 spans per
// request as the BatchSpanProcessor sends by default, each with ids, times, 4 attributes and a status).
//
// Baseline, measured in the same run: JSON.parse alone of the JSON form of the same request. It is the
// least any JSON-accepting receiver must spend (it builds the objects and nothing else), so
// "× JSON.parse" reads as: how many times a bare parse our whole decode + map + record path costs.

const SPANS_PER_REQUEST = 512
const PHASES = ['queue', 'preprocess', 'kernel', 'postprocess', 'total'] as const

function buildRequest() {
  const spans: JsonSpan[] = []
  for (let i = 0; i < SPANS_PER_REQUEST; i++) {
    const phase = PHASES[i % PHASES.length]!
    const hex = (n: number, len: number) => n.toString(16).padStart(len, '0')
    spans.push(
      span({
        name: phase === 'total' ? 'POST /v1/chat/completions' : phase,
        traceId: hex(i * 7919 + 1, 32),
        spanId: hex(i * 104729 + 1, 16),
        parentSpanId: hex(i * 1299709 + 1, 16),
        kind: phase === 'total' ? 2 : 1,
        startNs: i * 1_000_000,
        durationNs: 500_000 + ((i * 7_777) % 9_000_000),
        attributes: attrs({
          'tailguard.phase': phase,
          'gen_ai.request.model': 'llama-3-8b-instruct',
          'http.route': '/v1/chat/completions',
          'batch.size': 1 + (i % 16),
        }),
        status: { code: i % 97 === 0 ? 2 : 0 },
      }),
    )
  }
  return request(
    {
      'service.name': 'chat-inference',
      'service.version': '2.3.1',
      'service.instance.id': 'chat-inference-7d9f-abcde',
      'host.name': 'gpu-node-17',
      'telemetry.sdk.language': 'nodejs',
      'telemetry.sdk.name': 'opentelemetry',
    },
    spans,
  )
}

/** Spans/s of one timed run of at least `minMs`. */
function timedRun(fn: () => void, spansPerCall: number, minMs: number): number {
  let calls = 0
  const t0 = process.hrtime.bigint()
  let elapsedNs = 0
  while (elapsedNs < minMs * 1e6) {
    for (let k = 0; k < 10; k++) fn()
    calls += 10
    elapsedNs = Number(process.hrtime.bigint() - t0)
  }
  return (calls * spansPerCall) / (elapsedNs / 1e9)
}

/** Best spans/s per case over interleaved rounds (so a load change on the shared machine hits every case). */
function interleaved(
  cases: readonly (readonly [string, () => void])[],
  spansPerCall: number,
  rounds = 5,
  minMs = 300,
) {
  const best = new Map<string, number>(cases.map(([name]) => [name, 0]))
  for (let r = 0; r < rounds; r++)
    for (const [name, fn] of cases)
      best.set(name, Math.max(best.get(name)!, timedRun(fn, spansPerCall, minMs)))
  return best
}

const bench: Bench = {
  name: 'otlp',
  async run(log) {
    const req = buildRequest()
    const proto = toProtobuf(req)
    const json = toJson(req)
    const jsonText = json.toString('utf8')
    log(`request: ${SPANS_PER_REQUEST} spans, protobuf ${proto.length} B, JSON ${json.length} B`)

    const recorder = createRecorder()
    const mapper = createSpanMapper()
    const check = (r: ReturnType<typeof decodeTracesProtobuf>) => {
      if (!r.ok || r.spans.length !== SPANS_PER_REQUEST) throw new Error('bench payload did not decode')
      return r.spans
    }
    check(decodeTracesProtobuf(proto))
    check(decodeTracesJson(json))

    const best = interleaved(
      [
        ['parse', () => JSON.parse(jsonText)],
        ['protoDecode', () => check(decodeTracesProtobuf(proto))],
        ['protoAll', () => mapper.map(check(decodeTracesProtobuf(proto)), recorder)],
        ['jsonDecode', () => check(decodeTracesJson(json))],
        ['jsonAll', () => mapper.map(check(decodeTracesJson(json)), recorder)],
      ],
      SPANS_PER_REQUEST,
    )
    const jsonParse = best.get('parse')!
    const protoDecode = best.get('protoDecode')!
    const protoAll = best.get('protoAll')!
    const jsonDecode = best.get('jsonDecode')!
    const jsonAll = best.get('jsonAll')!
    const { dropped } = recorder.drain()
    if (Object.keys(dropped).length > 0)
      throw new Error(`bench spans were refused: ${JSON.stringify(dropped)}`)

    const row = (what: string, perS: number) => [
      what,
      Math.round(perS),
      (1e9 / perS).toFixed(0),
      jsonParse / perS,
    ]
    log(`JSON.parse alone: ${Math.round(jsonParse)} spans/s`)
    return {
      title: `OTLP ingestion on one core (${SPANS_PER_REQUEST} spans per export request)`,
      columns: ['path', 'spans/s', 'ns/span', 'cost × JSON.parse alone'],
      rows: [
        row('JSON.parse alone (baseline)', jsonParse),
        row('protobuf: decode', protoDecode),
        row('protobuf: decode + map + record', protoAll),
        row('JSON: decode (incl. JSON.parse)', jsonDecode),
        row('JSON: decode + map + record', jsonAll),
      ],
      notes: [
        `Payload: protobuf ${proto.length} bytes, JSON ${json.length} bytes for the same ${SPANS_PER_REQUEST} spans.`,
        'Best of 5 interleaved rounds of ≥ 0.3 s per path; single thread. HTTP and gzip are not included (see the e2e test for those).',
      ],
    }
  },
}

export default bench

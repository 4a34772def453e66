import { describe, expect, it } from 'vitest'
import {
  createRecorder,
  createSpanMapper,
  decodeTracesJson,
  decodeTracesProtobuf,
  resolveMappingConfig,
} from '../../../../agent/index.js'
import type { OtlpSpan } from '../../../../agent/index.js'
import { capturingSink } from './helpers.js'
import { attrs, ns, request, span, toJson, toProtobuf } from './payloads.js'
import type { JsonRequest, JsonSpan } from './payloads.js'

const resource = {
  'service.name': 'chat',
  'service.instance.id': 'pod-7',
  'host.name': 'node-a',
  'service.version': '1.4',
}

function decodeBoth(req: JsonRequest): OtlpSpan[][] {
  const p = decodeTracesProtobuf(toProtobuf(req))
  const j = decodeTracesJson(toJson(req))
  if (!p.ok || !j.ok) throw new Error('decode failed')
  return [p.spans, j.spans]
}

/** Runs the same spans through a fresh mapper for both encodings and returns the first (they must agree). */
function mapBoth(spans: JsonSpan[], res: Record<string, string | number | boolean> = resource, options = {}) {
  const outs = decodeBoth(request(res, spans)).map((decoded) => {
    const sink = capturingSink()
    const outcome = createSpanMapper(options).map(decoded, sink)
    return { sink, outcome }
  })
  expect(outs[1]!.sink.requests).toEqual(outs[0]!.sink.requests)
  expect(outs[1]!.sink.latencies).toEqual(outs[0]!.sink.latencies)
  expect(outs[1]!.outcome).toEqual(outs[0]!.outcome)
  return outs[0]!
}

describe('labels', () => {
  it('come from resource attributes, with span attributes winning, in key order', () => {
    const { sink } = mapBoth([
      span({ name: 'kernel', attributes: attrs({ 'gen_ai.response.model': 'resp', model: 'plain' }) }),
      span({
        name: 'kernel',
        attributes: attrs({ 'gen_ai.request.model': 'req', 'gen_ai.response.model': 'resp' }),
      }),
      span({
        name: 'kernel',
        attributes: attrs({ 'k8s.pod.name': 'other-pod', 'service.name': 'override' }),
      }),
    ])
    expect(sink.latencies.map((l) => l.labels)).toEqual([
      { service: 'chat', model: 'resp', version: '1.4', replica: 'pod-7', node: 'node-a' },
      { service: 'chat', model: 'req', version: '1.4', replica: 'pod-7', node: 'node-a' },
      { service: 'override', model: '', version: '1.4', replica: 'other-pod', node: 'node-a' },
    ])
  })

  it('fall back to the kubernetes keys, a default service, and clean up values', () => {
    const { sink } = mapBoth(
      [
        span({
          name: 'queue',
          attributes: attrs({ model: `m\u0000x${'y'.repeat(300)}`, 'model.version': 7 }),
        }),
      ],
      { 'k8s.pod.name': 'pod-1', 'k8s.node.name': 'gpu-3' },
    )
    const l = sink.latencies[0]!.labels
    expect(l.service).toBe('unknown_service')
    expect(l.replica).toBe('pod-1')
    expect(l.node).toBe('gpu-3')
    expect(l.version).toBe('7')
    expect(l.model).not.toContain('\u0000')
    expect(l.model.length).toBeLessThanOrEqual(256)
  })

  it('are configurable', () => {
    const { sink } = mapBoth(
      [span({ name: 'queue', attributes: attrs({ 'my.model': 'custom' }) })],
      resource,
      {
        labels: { model: ['my.model'] },
      },
    )
    expect(sink.latencies[0]!.labels.model).toBe('custom')
    expect(resolveMappingConfig({ labels: { model: ['my.model'] } }).labels.service).toEqual(['service.name'])
  })
})

describe('phase of a span', () => {
  it('tailguard.phase wins over the span name; the name table maps the rest', () => {
    const { sink, outcome } = mapBoth([
      span({ name: 'tokenize', durationNs: 3_000_000, attributes: attrs({ 'tailguard.phase': 'kernel' }) }),
      span({ name: 'tokenize', durationNs: 2_500 }),
      span({ name: 'detokenize', durationNs: 1_000 }),
    ])
    expect(sink.latencies.map((l) => [l.metric, l.durationUs])).toEqual([
      ['kernel', 3000],
      ['preprocess', 2.5],
      ['postprocess', 1],
    ])
    expect(outcome).toEqual({ accepted: 3, refused: 0, refusedBy: {} })
  })

  it('counts unknown phases and negative durations as refused through sink.drop', () => {
    const { sink, outcome } = mapBoth([
      span({ name: 'GET /healthz' }),
      span({ name: 'x', attributes: attrs({ 'tailguard.phase': 'warmup' }) }),
      span({ name: 'x', attributes: attrs({ 'tailguard.phase': 3 }) }),
      span({ name: 'queue', durationNs: -5 }),
      span({ name: 'queue', durationNs: 5 }),
    ])
    expect(outcome).toEqual({
      accepted: 1,
      refused: 4,
      refusedBy: { unknown_phase: 3, negative_duration: 1 },
    })
    expect(sink.dropped).toEqual({ unknown_phase: 3, negative_duration: 1 })
    expect(sink.latencies).toHaveLength(1)
  })

  it('uses a custom span-name table instead of the default one', () => {
    const { sink, outcome } = mapBoth([span({ name: 'infer' }), span({ name: 'tokenize' })], resource, {
      spanNamePhases: { infer: 'kernel' },
    })
    expect(sink.latencies.map((l) => l.metric)).toEqual(['kernel'])
    expect(outcome.refusedBy).toEqual({ unknown_phase: 1 })
  })

  it('skips ignored span names and spans the SDK already recorded, without refusing them', () => {
    const { sink, outcome } = mapBoth([
      span({ name: 'InferRequest' }),
      span({ name: 'kernel', attributes: attrs({ 'tailguard.recorded': true }) }),
    ])
    expect(outcome).toEqual({ accepted: 2, refused: 0, refusedBy: {} })
    expect(sink.latencies).toHaveLength(0)
  })
})

describe('request spans (tailguard.phase=total)', () => {
  it('record status, error class, TTFT, TPOT and output tokens', () => {
    const { sink } = mapBoth([
      span({
        name: 'POST /generate',
        durationNs: 1_100_000_000,
        attributes: attrs({ 'tailguard.phase': 'total', 'gen_ai.usage.output_tokens': 11 }),
        events: [{ timeUnixNano: ns(100_000_000), name: 'tailguard.first_token' }],
      }),
      span({
        name: 'POST /generate',
        durationNs: 2_000_000,
        attributes: attrs({ 'tailguard.phase': 'total', 'error.type': 'timeout' }),
        status: { code: 2, message: 'deadline exceeded' },
      }),
      span({
        name: 'r',
        attributes: attrs({ 'tailguard.phase': 'total' }),
        status: { code: 2, message: 'CUDA OOM' },
      }),
      span({ name: 'r', attributes: attrs({ 'tailguard.phase': 'total', 'tailguard.status': 'shed' }) }),
      span({ name: 'r', attributes: attrs({ 'tailguard.phase': 'total', 'tailguard.status': 'error' }) }),
    ])
    expect(sink.requests.map((r) => [r.status, r.errorClass])).toEqual([
      ['ok', undefined],
      ['error', 'timeout'],
      ['error', 'CUDA OOM'],
      ['shed', 'shed'],
      ['error', 'error'],
    ])
    const first = sink.requests[0]!
    expect(first.phasesUs).toEqual({ total: 1_100_000 })
    expect(first.ttftUs).toBe(100_000)
    expect(first.tpotUs).toBe(100_000) // (1.1 s − 0.1 s) / 10
    expect(first.outputTokens).toBe(11)
  })
})

describe('root SERVER spans', () => {
  it('are whole requests (HTTP server instrumentation), unless turned off; child or client spans are not', () => {
    const spans = [
      span({
        name: 'POST /v1/chat/completions',
        kind: 2,
        durationNs: 42_000_000,
        attributes: attrs({ 'error.type': '503' }),
        status: { code: 2 },
      }),
      span({ name: 'POST /v1/chat/completions', kind: 2, parentSpanId: '1111111111111111' }),
      span({ name: 'GET upstream', kind: 3 }),
    ]
    const on = mapBoth(spans)
    expect(on.sink.requests).toHaveLength(1)
    expect(on.sink.requests[0]).toMatchObject({
      status: 'error',
      errorClass: '503',
      phasesUs: { total: 42_000 },
    })
    expect(on.outcome.refusedBy).toEqual({ unknown_phase: 2 })
    const off = mapBoth(spans, resource, { serverRootSpansAreRequests: false })
    expect(off.sink.requests).toHaveLength(0)
    expect(off.outcome.refusedBy).toEqual({ unknown_phase: 3 })
  })
})

describe('vLLM request spans', () => {
  // As vLLM's output processor sets them: gen_ai.latency.* in seconds, usage counts, response model.
  const vllmSpan = (extra: Record<string, string | number | boolean> = {}) =>
    span({
      name: 'llm_request',
      kind: 2,
      durationNs: 2_500_000_000,
      attributes: attrs({
        'gen_ai.response.model': 'meta-llama/Llama-3.1-8B-Instruct',
        'gen_ai.request.id': 'cmpl-1',
        'gen_ai.usage.prompt_tokens': 512,
        'gen_ai.usage.completion_tokens': 101,
        'gen_ai.latency.time_in_queue': 0.05,
        'gen_ai.latency.time_to_first_token': 0.25,
        'gen_ai.latency.e2e': 2.25,
        'gen_ai.latency.time_in_model_prefill': 0.2,
        'gen_ai.latency.time_in_model_decode': 2.0,
        'gen_ai.latency.time_in_model_inference': 2.2,
        ...extra,
      }),
    })

  it('become one request with queue, prefill, decode, TTFT, TPOT and tokens', () => {
    const { sink, outcome } = mapBoth([vllmSpan()], { 'service.name': 'vllm' })
    expect(outcome.refused).toBe(0)
    expect(sink.requests).toHaveLength(1)
    const r = sink.requests[0]!
    expect(r.labels).toMatchObject({ service: 'vllm', model: 'meta-llama/Llama-3.1-8B-Instruct' })
    expect(r.status).toBe('ok')
    expect(r.phasesUs.total).toBeCloseTo(2_250_000, 3)
    expect(r.phasesUs.queue).toBeCloseTo(50_000, 3)
    expect(r.phasesUs.prefill).toBeCloseTo(200_000, 3)
    expect(r.phasesUs.decode).toBeCloseTo(2_000_000, 3)
    expect(r.ttftUs).toBeCloseTo(250_000, 3)
    expect(r.tpotUs).toBeCloseTo(20_000, 3) // 2 s of decode over 100 tokens after the first
    expect(r.outputTokens).toBe(101)
  })

  it('give their prompt and completion tokens as live signals (tokens/s in and out)', () => {
    const recorder = createRecorder()
    const [decoded] = decodeBoth(
      request({ 'service.name': 'vllm' }, [vllmSpan(), vllmSpan({ 'gen_ai.usage.completion_tokens': 9 })]),
    )
    createSpanMapper().map(decoded!, recorder)
    const [s] = recorder.drain().series
    expect(s!.signals).toEqual({ counters: { inputTokens: 1024, outputTokens: 110 }, sources: ['otlp'] })
    expect(s!.outputTokens).toBe(110)
  })

  it('take the forward time as kernel when vLLM collected detailed traces, and the span duration without e2e', () => {
    const s = span({
      name: 'llm_request',
      durationNs: 900_000_000,
      attributes: attrs({ 'gen_ai.latency.time_in_model_forward': 0.3 }),
    })
    const { sink } = mapBoth([s])
    expect(sink.requests[0]!.phasesUs).toEqual({ total: 900_000, kernel: 300_000 })
  })

  it('are only a root SERVER span (total = span duration) when vLLM support is off', () => {
    const { sink, outcome } = mapBoth([vllmSpan()], resource, { vllm: false })
    expect(outcome.refused).toBe(0)
    expect(sink.requests[0]!.phasesUs).toEqual({ total: 2_500_000 })
    const off = mapBoth([vllmSpan()], resource, { vllm: false, serverRootSpansAreRequests: false })
    expect(off.outcome.refusedBy).toEqual({ unknown_phase: 1 })
  })
})

describe('Triton (OpenTelemetry trace mode)', () => {
  // As src/tracer.cc emits them: a request span named after the model with triton.* attributes and
  // REQUEST_START/QUEUE_START/REQUEST_END events, and a child `compute` span with COMPUTE_* events.
  const trace = '4bf92f3577b34da6a3ce929d0e0e4736'
  const requestSpan = (spanId: string, startNs: number) =>
    span({
      name: 'resnet50',
      traceId: trace,
      spanId,
      parentSpanId: '00f067aa0ba902b7',
      startNs,
      durationNs: 10_000_000,
      attributes: attrs({ 'triton.model_name': 'resnet50', 'triton.model_version': 2, 'triton.trace_id': 1 }),
      events: [
        { timeUnixNano: ns(startNs), name: 'REQUEST_START' },
        { timeUnixNano: ns(startNs + 1_000_000), name: 'QUEUE_START' },
        { timeUnixNano: ns(startNs + 10_000_000), name: 'REQUEST_END' },
      ],
    })
  const computeSpan = (parent: string, startNs: number) =>
    span({
      name: 'compute',
      traceId: trace,
      spanId: 'c0c0c0c0c0c0c0c0',
      parentSpanId: parent,
      startNs,
      durationNs: 6_000_000,
      events: [
        { timeUnixNano: ns(startNs), name: 'COMPUTE_START' },
        { timeUnixNano: ns(startNs + 500_000), name: 'COMPUTE_INPUT_END' },
        { timeUnixNano: ns(startNs + 5_000_000), name: 'COMPUTE_OUTPUT_START' },
        { timeUnixNano: ns(startNs + 6_000_000), name: 'COMPUTE_END' },
      ],
    })
  const root = span({
    name: 'InferRequest',
    traceId: trace,
    spanId: '00f067aa0ba902b7',
    durationNs: 12_000_000,
  })
  const expected = { total: 10_000, queue: 2_000, h2d: 500, kernel: 4_500, d2h: 1_000 }

  it('join the compute span to its request span in the same batch', () => {
    const { sink, outcome } = mapBoth(
      [computeSpan('aaaaaaaaaaaaaaaa', 3_000_000), requestSpan('aaaaaaaaaaaaaaaa', 0), root],
      {
        'service.name': 'triton',
      },
    )
    expect(outcome).toEqual({ accepted: 3, refused: 0, refusedBy: {} })
    expect(sink.requests).toHaveLength(1)
    const r = sink.requests[0]!
    expect(r.labels).toMatchObject({ service: 'triton', model: 'resnet50', version: '2' })
    for (const [phase, us] of Object.entries(expected))
      expect(r.phasesUs[phase as keyof typeof expected], phase).toBeCloseTo(us, 0)
    expect(sink.latencies).toHaveLength(0)
  })

  it('keep a compute span until its request span arrives in a later batch', () => {
    const [first] = decodeBoth(
      request({ 'service.name': 'triton' }, [computeSpan('bbbbbbbbbbbbbbbb', 3_000_000)]),
    )
    const [second] = decodeBoth(request({ 'service.name': 'triton' }, [requestSpan('bbbbbbbbbbbbbbbb', 0)]))
    const sink = capturingSink()
    const mapper = createSpanMapper()
    expect(mapper.map(first!, sink).refused).toBe(0)
    expect(sink.requests).toHaveLength(0)
    mapper.map(second!, sink)
    expect(sink.requests).toHaveLength(1)
    expect(sink.requests[0]!.phasesUs.kernel).toBeCloseTo(4_500, 0)
    expect(sink.requests[0]!.phasesUs.queue).toBeCloseTo(2_000, 0)
  })

  it('record compute spans whose request never came on their own when flushed or evicted', () => {
    const sink = capturingSink()
    const mapper = createSpanMapper({ maxPendingComputeSpans: 1 })
    const [a] = decodeBoth(request({ 'service.name': 'triton' }, [computeSpan('1111111111111111', 0)]))
    const [b] = decodeBoth(request({ 'service.name': 'triton' }, [computeSpan('2222222222222222', 0)]))
    mapper.map(a!, sink)
    mapper.map(b!, sink) // evicts a
    expect(sink.latencies.map((l) => l.metric)).toEqual(['h2d', 'kernel', 'd2h'])
    mapper.flushPending(sink)
    expect(sink.latencies).toHaveLength(6)
    expect(sink.latencies[1]!.durationUs).toBeCloseTo(4_500, 0)
  })

  it('map a request span without its compute span to total only', () => {
    const { sink } = mapBoth([requestSpan('cccccccccccccccc', 0)])
    expect(sink.requests[0]!.phasesUs).toEqual({ total: 10_000 })
  })
})

import { describe, expect, it } from 'vitest'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import { SpanStatusCode } from '@opentelemetry/api'
import type { HrTime } from '@opentelemetry/api'
import {
  createInferenceSdk,
  createRecorder,
  createSpanMapper,
  SDK_FIRST_TOKEN_EVENT,
} from '../../../agent/index.js'
import type { OtlpSpan } from '../../../agent/index.js'
import { capturingSink } from '../sources/otlp/helpers.js'

const hrTimeToMilliseconds = (t: HrTime): number => t[0] * 1e3 + t[1] / 1e6

const labels = { service: 'chat', model: 'llama-3-8b', version: '3', replica: 'r0', node: 'n1' }

function fakeClock(startMs = 0) {
  let now = startMs
  return { clock: () => now, advance: (ms: number) => void (now += ms) }
}

function setup() {
  const exporter = new InMemorySpanExporter()
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const sink = capturingSink()
  const t = fakeClock(1000)
  const sdk = createInferenceSdk({
    sink,
    labels,
    tracer: provider.getTracer('test'),
    clock: t.clock,
    timeOriginMs: 1_763_700_000_000,
  })
  return { exporter, sink, t, sdk }
}

describe('createInferenceSdk', () => {
  it('records phases, TTFT, TPOT and tokens into the sink with the injected clock', () => {
    const { sink, t, sdk } = setup()
    const req = sdk.startRequest()
    req.startPhase('queue')
    t.advance(5)
    req.endPhase('queue')
    req.time('prefill', () => t.advance(20))
    req.firstToken()
    req.startPhase('decode')
    t.advance(90)
    req.end({ status: 'ok', outputTokens: 10 })

    expect(sink.requests).toHaveLength(1)
    const s = sink.requests[0]!
    expect(s.labels).toEqual(labels)
    expect(s.status).toBe('ok')
    expect(s.phasesUs).toEqual({ queue: 5000, prefill: 20000, decode: 90000, total: 115000 })
    expect(s.ttftUs).toBe(25000)
    expect(s.tpotUs).toBe(10000) // 90 ms over 9 tokens after the first
    expect(s.outputTokens).toBe(10)
  })

  it('gives token counts to the recorder as live signals (source sdk)', () => {
    const recorder = createRecorder()
    const sdk = createInferenceSdk({ sink: recorder, labels, clock: fakeClock().clock })
    sdk.startRequest().end({ outputTokens: 10, inputTokens: 200 })
    sdk.startRequest().end({ outputTokens: 5 })
    const [s] = recorder.drain().series
    expect(s!.signals).toEqual({ counters: { inputTokens: 200, outputTokens: 15 }, sources: ['sdk'] })
  })

  it('adds up repeated phases, applies label overrides, and records errors with their class', () => {
    const { sink, t, sdk } = setup()
    const req = sdk.startRequest({ model: 'mistral-7b', replica: 'r9' })
    for (let i = 0; i < 3; i++) req.time('kernel', () => t.advance(2))
    req.end({ status: 'error', errorClass: 'oom' })
    req.end({ status: 'ok' }) // ignored: already ended
    req.startPhase('queue') // ignored too
    expect(sink.requests).toHaveLength(1)
    const s = sink.requests[0]!
    expect(s.labels).toEqual({ ...labels, model: 'mistral-7b', replica: 'r9' })
    expect(s.status).toBe('error')
    expect(s.errorClass).toBe('oom')
    expect(s.phasesUs.kernel).toBe(6000)
  })

  it('times async phases until the promise settles, and ends the phase when fn throws', async () => {
    const { sink, t, sdk } = setup()
    const req = sdk.startRequest()
    const p = req.time('kernel', async () => {
      await Promise.resolve()
      t.advance(7)
      return 42
    })
    expect(await p).toBe(42)
    expect(() =>
      req.time('postprocess', () => {
        t.advance(1)
        throw new Error('boom')
      }),
    ).toThrow('boom')
    req.end()
    expect(sink.requests[0]!.phasesUs).toMatchObject({ kernel: 7000, postprocess: 1000 })
  })

  it('counts an unknown phase as dropped instead of throwing', () => {
    const { sink, sdk } = setup()
    const req = sdk.startRequest()
    req.startPhase('warmup' as never)
    req.end()
    expect(sink.dropped).toEqual({ unknown_phase: 1 })
    expect(sink.requests[0]!.phasesUs).toEqual({ total: 0 })
  })

  it('creates OpenTelemetry spans with tailguard attributes and the injected times', () => {
    const { exporter, t, sdk } = setup()
    const req = sdk.startRequest()
    req.time('queue', () => t.advance(3))
    t.advance(1)
    req.firstToken()
    t.advance(4)
    req.end({ status: 'error', errorClass: 'timeout', outputTokens: 2 })
    const spans = exporter.getFinishedSpans()
    expect(spans.map((s) => s.name).sort()).toEqual(['inference', 'queue'])
    const root = spans.find((s) => s.name === 'inference')!
    const queue = spans.find((s) => s.name === 'queue')!
    expect(queue.parentSpanContext?.spanId).toBe(root.spanContext().spanId)
    expect(root.attributes).toMatchObject({
      'tailguard.phase': 'total',
      'tailguard.recorded': true,
      'tailguard.status': 'error',
      'error.type': 'timeout',
      'gen_ai.usage.output_tokens': 2,
      'gen_ai.request.model': 'llama-3-8b',
    })
    expect(root.status).toEqual({ code: SpanStatusCode.ERROR, message: 'timeout' })
    expect(queue.attributes).toMatchObject({ 'tailguard.phase': 'queue', 'tailguard.recorded': true })
    expect(hrTimeToMilliseconds(root.startTime)).toBeCloseTo(1_763_700_001_000, 3)
    expect(hrTimeToMilliseconds(root.duration)).toBeCloseTo(8, 6)
    expect(hrTimeToMilliseconds(queue.duration)).toBeCloseTo(3, 6)
    expect(root.events.map((e) => e.name)).toEqual([SDK_FIRST_TOKEN_EVENT])
  })

  it('works with no OpenTelemetry SDK registered (the API is a no-op)', () => {
    const sink = capturingSink()
    const sdk = createInferenceSdk({ sink, labels })
    const req = sdk.startRequest()
    req.time('kernel', () => undefined)
    req.end()
    expect(sink.requests).toHaveLength(1)
    expect(req.span.isRecording()).toBe(false)
  })

  it("marks its spans so the agent's receiver does not record them a second time", () => {
    const sink = capturingSink()
    const mapper = createSpanMapper()
    const span: OtlpSpan = {
      traceId: 'a'.repeat(32),
      spanId: 'b'.repeat(16),
      parentSpanId: '',
      name: 'inference',
      kind: 1,
      startTimeUnixNano: 0,
      durationNs: 1_000_000,
      attributes: { 'tailguard.phase': 'total', 'tailguard.recorded': true },
      resource: {},
      events: [],
      statusCode: 0,
      statusMessage: '',
    }
    expect(mapper.map([span], sink)).toEqual({ accepted: 1, refused: 0, refusedBy: {} })
    expect(sink.requests).toHaveLength(0)
  })
})

import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base'
import { resourceFromAttributes } from '@opentelemetry/resources'
import type { HrTime } from '@opentelemetry/api'
import { createInferenceSdk, createRecorder, otlpReceiver } from '../../../../agent/index.js'
import type { OtlpExportResult } from '../../../../agent/index.js'
import { decodeHistogram } from '../../../../collector/index.js'
import { latencySampleUs, nearestRank, prng } from './helpers.js'

// The real OpenTelemetry SDK exporting to the receiver over HTTP on 127.0.0.1: the recorder's percentiles
// per phase must match the exact percentiles of the durations the spans were given.

const PHASES = [
  { phase: 'queue', medianUs: 2_000 },
  { phase: 'kernel', medianUs: 8_000 },
  { phase: 'total', medianUs: 25_000 },
] as const
const SPANS_PER_PHASE = 40_000
const QUANTILES = [0.5, 0.9, 0.99, 0.999]

let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  app = undefined
})

function hrTime(sec: number, ns: number): HrTime {
  return [sec + Math.floor(ns / 1e9), ns % 1e9]
}

async function exportAndCompare(kind: 'protobuf' | 'json', compression: 'gzip' | 'none', seed: number) {
  const recorder = createRecorder()
  const results: OtlpExportResult[] = []
  app = Fastify()
  await app.register(otlpReceiver, { sink: recorder, token: 's3cret', onExport: (r) => results.push(r) })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })

  const exporterOptions = {
    url: `${address}/v1/traces`,
    headers: { Authorization: 'Bearer s3cret' },
    timeoutMillis: 60_000,
    compression: compression === 'gzip' ? CompressionAlgorithm.GZIP : CompressionAlgorithm.NONE,
  }
  const exporter =
    kind === 'protobuf' ? new ProtoExporter(exporterOptions) : new JsonExporter(exporterOptions)
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'chat',
      'service.instance.id': 'replica-0',
      'host.name': 'node-a',
    }),
    spanLimits: { attributeCountLimit: 16 },
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        maxQueueSize: PHASES.length * SPANS_PER_PHASE,
        maxExportBatchSize: 10_000,
        scheduledDelayMillis: 50,
        exportTimeoutMillis: 60_000,
      }),
    ],
  })
  const tracer = provider.getTracer('tailguard-test')
  const rand = prng(seed)
  const expected = new Map<string, number[]>()
  const baseSec = 1_763_700_000
  for (const { phase, medianUs } of PHASES) {
    const values: number[] = []
    for (let i = 0; i < SPANS_PER_PHASE; i++) {
      const us = latencySampleUs(rand, medianUs)
      values.push(us)
      const startSec = baseSec + (i % 3600)
      const startNs = Math.floor(rand() * 1e9)
      const span = tracer.startSpan(phase, {
        startTime: hrTime(startSec, startNs),
        attributes: {
          'tailguard.phase': phase,
          'gen_ai.request.model': 'llama-3-8b',
          'service.version': '3',
        },
      })
      span.end(hrTime(startSec, startNs + us * 1000))
    }
    expected.set(
      phase,
      values.sort((a, b) => a - b),
    )
  }
  await provider.forceFlush()
  await provider.shutdown()

  const totalSpans = results.reduce((n, r) => n + r.spans, 0)
  expect(results.every((r) => r.statusCode === 200 && r.encoding === kind)).toBe(true)
  expect(totalSpans).toBe(PHASES.length * SPANS_PER_PHASE)

  const { series, dropped } = recorder.drain()
  expect(dropped).toEqual({})
  expect(series).toHaveLength(1)
  const s = series[0]!
  expect(s.labels).toEqual({
    service: 'chat',
    model: 'llama-3-8b',
    version: '3',
    replica: 'replica-0',
    node: 'node-a',
  })
  expect(s.requests).toEqual({ ok: SPANS_PER_PHASE, error: 0, shed: 0 })
  for (const { phase } of PHASES) {
    const h = decodeHistogram(s.histograms[phase]!)
    expect(h.totalCount).toBe(SPANS_PER_PHASE)
    const sorted = expected.get(phase)!
    for (const q of QUANTILES) {
      const exact = nearestRank(sorted, q)
      const got = h.getValueAtPercentile(q * 100)
      expect(
        Math.abs(got - exact) / exact,
        `${kind} ${phase} p${q * 100}: got ${got}, exact ${exact}`,
      ).toBeLessThanOrEqual(0.005)
    }
  }
}

describe('OpenTelemetry SDK → OTLP/HTTP → receiver → recorder', () => {
  it('protobuf (gzip): percentiles per phase within 0.5% of the exact ones over 120,000 spans', async () => {
    await exportAndCompare('protobuf', 'gzip', 1)
  })
  it('JSON: percentiles per phase within 0.5% of the exact ones over 120,000 spans', async () => {
    await exportAndCompare('json', 'none', 2)
  })

  it('spans of the in-process SDK exported to the agent are accepted but not counted a second time', async () => {
    const inProcess = createRecorder()
    const viaOtlp = createRecorder()
    const results: OtlpExportResult[] = []
    app = Fastify()
    await app.register(otlpReceiver, { sink: viaOtlp, onExport: (r) => results.push(r) })
    const address = await app.listen({ host: '127.0.0.1', port: 0 })
    const provider = new NodeTracerProvider({
      spanProcessors: [new BatchSpanProcessor(new ProtoExporter({ url: `${address}/v1/traces` }))],
    })
    const labels = { service: 'chat', model: 'm', version: '1', replica: 'r', node: 'n' }
    const sdk = createInferenceSdk({ sink: inProcess, labels, tracer: provider.getTracer('app') })
    for (let i = 0; i < 50; i++) {
      const req = sdk.startRequest()
      req.time('queue', () => undefined)
      req.time('kernel', () => undefined)
      req.end({ status: 'ok', outputTokens: 3 })
    }
    await provider.forceFlush()
    await provider.shutdown()
    expect(results.reduce((n, r) => n + r.spans, 0)).toBe(150)
    expect(results.every((r) => r.statusCode === 200 && r.refused === 0)).toBe(true)
    expect(viaOtlp.drain()).toEqual({ series: [], dropped: {} })
    expect(inProcess.drain().series[0]!.requests).toEqual({ ok: 50, error: 0, shed: 0 })
  })
})

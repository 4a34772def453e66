import { afterAll, describe, expect, it } from 'vitest'
import { Metadata } from '@grpc/grpc-js'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { emitPhaseSpans, expectPercentiles, pipelineFixture, waitForCounts } from '../helpers/otel.js'

// OTLP over gRPC end to end through real processes: the OpenTelemetry SDK's gRPC exporter
// (@opentelemetry/exporter-trace-otlp-grpc, gzip on) sends spans with known durations to a `tailguard agent`
// process that requires an OTLP token; the agent ships interval reports to a `tailguard collector` process
// on SQLite, whose percentiles are within 0.5% of the exact nearest-rank ones. The same mapping as OTLP/HTTP
// applies: a span the mapping does not know is refused and counted, not recorded.

const API = 'api-token-otel-grpc-0123456789'
const AGENT = 'agent-token-otel-grpc-0123456789'
const OTLP = 'otlp-token-otel-grpc-0123456789'
const PHASES = [
  { phase: 'queue', medianUs: 2_000 },
  { phase: 'total', medianUs: 30_000 },
] as const
const SPANS_PER_PHASE = 15_000

const e2e = pipelineFixture()
afterAll(() => e2e.close())

describe('OpenTelemetry SDK gRPC exporter → agent process (OTLP/gRPC) → collector process', () => {
  it('gives percentiles within 0.5% of the exact ones', async () => {
    const base = await e2e.collector({ api: API, agent: AGENT })
    const agent = e2e.agent(['--collector', base, '--otlp-port', '0', '--otlp-grpc-port', '0'], {
      TAILGUARD_AGENT_TOKEN: AGENT,
      TAILGUARD_OTLP_TOKEN: OTLP,
    })
    const m = await agent.waitFor(/OTLP\/gRPC on (\S+):(\d+)/)
    const url = `http://${m[1]}:${m[2]}`

    const metadata = new Metadata()
    metadata.set('authorization', `Bearer ${OTLP}`)
    const exporter = new OTLPTraceExporter({
      url,
      metadata,
      compression: 'gzip' as NonNullable<ConstructorParameters<typeof OTLPTraceExporter>[0]>['compression'],
      timeoutMillis: 60_000,
    })
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'grpc-pipeline', 'service.instance.id': 'r-1' }),
      spanProcessors: [
        new BatchSpanProcessor(exporter, {
          maxQueueSize: PHASES.length * SPANS_PER_PHASE + 10,
          maxExportBatchSize: 2_000,
          scheduledDelayMillis: 50,
        }),
      ],
    })
    const tracer = provider.getTracer('grpc-pipeline-test')
    const durations = emitPhaseSpans(tracer, PHASES, SPANS_PER_PHASE, 11)
    // A span no rule maps: refused by the same mapping as over HTTP.
    tracer.startSpan('GET /healthz', { kind: 2 }).end()
    await provider.forceFlush()
    await provider.shutdown()

    await waitForCounts(
      base,
      API,
      'grpc-pipeline',
      PHASES.map((p) => p.phase),
      SPANS_PER_PHASE,
    )

    for (const { phase } of PHASES)
      await expectPercentiles(base, API, `service=grpc-pipeline&phase=${phase}`, durations[phase]!)

    // The agent's metrics count the gRPC calls and the refused span.
    const agentHttp = (await agent.waitFor(/OTLP\/HTTP on (http:\/\/[^/]+)\/v1\/traces/))[1]!
    const metrics = await (
      await fetch(`${agentHttp}/metrics`, { headers: { authorization: `Bearer ${OTLP}` } })
    ).text()
    expect(metrics).toMatch(/tailguard_agent_otlp_grpc_requests_total\{code="OK"\} [1-9]/)
    expect(metrics).toMatch(/tailguard_agent_otlp_spans_total\{outcome="refused"\} 1\b/)
  }, 240_000)
})

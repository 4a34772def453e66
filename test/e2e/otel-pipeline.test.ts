import { afterAll, describe, expect, it } from 'vitest'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { emitPhaseSpans, expectPercentiles, pipelineFixture, waitForCounts } from '../helpers/otel.js'

// Acceptance 1 and 2 of issue #2, end to end through real processes: the OpenTelemetry SDK's OTLP exporters
// (protobuf on one agent, JSON on the other) send 120,000 spans with known durations to two `tailguard agent`
// processes, which ship interval reports to one `tailguard collector` process on SQLite. The collector's
// percentiles per phase and per replica are within 0.5% of the exact nearest-rank percentiles of the same
// durations, and the service-wide percentiles (both agents merged) match the union of the samples.

const API = 'api-token-otel-pipeline-0123456789'
const AGENT = 'agent-token-otel-pipeline-0123456789'
const OTLP = 'otlp-token-otel-pipeline-0123456789'
const PHASES = [
  { phase: 'queue', medianUs: 2_000 },
  { phase: 'kernel', medianUs: 9_000 },
  { phase: 'total', medianUs: 30_000 },
] as const
const SPANS_PER_PHASE_PER_AGENT = 20_000

const e2e = pipelineFixture()
afterAll(() => e2e.close())

async function exportSpans(kind: 'protobuf' | 'json', url: string, replica: string, seed: number) {
  const options = { url, headers: { Authorization: `Bearer ${OTLP}` }, timeoutMillis: 60_000 }
  const exporter = kind === 'protobuf' ? new ProtoExporter(options) : new JsonExporter(options)
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'pipeline',
      'service.instance.id': replica,
      'host.name': `node-${replica}`,
    }),
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        maxQueueSize: PHASES.length * SPANS_PER_PHASE_PER_AGENT,
        maxExportBatchSize: 5_000,
        scheduledDelayMillis: 50,
      }),
    ],
  })
  const tracer = provider.getTracer('pipeline-test')
  const durations = emitPhaseSpans(tracer, PHASES, SPANS_PER_PHASE_PER_AGENT, seed)
  await provider.forceFlush()
  await provider.shutdown()
  return durations
}

describe('OpenTelemetry SDK → two agent processes → collector process', () => {
  it('gives percentiles within 0.5% of the exact ones, per agent and merged', async () => {
    const base = await e2e.collector({ api: API, agent: AGENT })
    const agentUrls: string[] = []
    for (const id of ['a', 'b']) {
      const agent = e2e.agent(['--collector', base, '--otlp-port', '0', '--id', `agent-${id}`], {
        TAILGUARD_AGENT_TOKEN: AGENT,
        TAILGUARD_OTLP_TOKEN: OTLP,
      })
      const m = await agent.waitFor(/OTLP\/HTTP on (http:\/\/\S+\/v1\/traces)/)
      agentUrls.push(m[1]!)
    }

    // An exporter without the agent's token is refused.
    const refused = await fetch(agentUrls[0]!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })
    expect(refused.status).toBe(401)

    const [a, b] = await Promise.all([
      exportSpans('protobuf', agentUrls[0]!, 'replica-a', 1),
      exportSpans('json', agentUrls[1]!, 'replica-b', 2),
    ])

    await waitForCounts(
      base,
      API,
      'pipeline',
      PHASES.map((p) => p.phase),
      2 * SPANS_PER_PHASE_PER_AGENT,
    )

    const check = (query: string, samples: number[]) => expectPercentiles(base, API, query, samples)
    for (const { phase } of PHASES) {
      await check(`service=pipeline&phase=${phase}&replica=replica-a`, a[phase]!)
      await check(`service=pipeline&phase=${phase}&replica=replica-b`, b[phase]!)
      // Merged across both agents: the percentiles of the union, never an average of the two.
      await check(`service=pipeline&phase=${phase}`, [...a[phase]!, ...b[phase]!])
    }
  }, 240_000)
})

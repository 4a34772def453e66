import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import type { HrTime } from '@opentelemetry/api'
import { api, eventually, spawnCli } from '../helpers/cli.js'
import type { CliProcess } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'
import { latencySampleUs, nearestRank, prng } from '../helpers/samples.js'

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
const QUANTILES = [0.5, 0.9, 0.99, 0.999]

const procs: CliProcess[] = []
const dirs: string[] = []
afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM')
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const hr = (ms: number): HrTime => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)]

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
  const rand = prng(seed)
  const durations: Record<string, number[]> = {}
  const t0 = Date.now()
  for (const { phase, medianUs } of PHASES) {
    const list: number[] = []
    for (let i = 0; i < SPANS_PER_PHASE_PER_AGENT; i++) {
      const us = latencySampleUs(rand, medianUs)
      list.push(us)
      const start = t0 + i / 10
      const span = tracer.startSpan(phase, {
        startTime: hr(start),
        attributes: { 'tailguard.phase': phase, 'gen_ai.request.model': 'm1' },
      })
      span.end(hr(start + us / 1000))
    }
    durations[phase] = list
  }
  await provider.forceFlush()
  await provider.shutdown()
  return durations
}

describe('OpenTelemetry SDK → two agent processes → collector process', () => {
  it('gives percentiles within 0.5% of the exact ones, per agent and merged', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-otel-'))
    dirs.push(dir)
    const port = await freePort()
    const collector = spawnCli(
      ['collector', '--port', String(port), '--db', join(dir, 'tg.db'), '--log-level', 'warn'],
      {
        TAILGUARD_API_TOKEN: API,
        TAILGUARD_AGENT_TOKEN: AGENT,
      },
    )
    procs.push(collector)
    await collector.waitFor(/listening on http/)
    const base = `http://127.0.0.1:${port}`
    const agentUrls: string[] = []
    for (const id of ['a', 'b']) {
      const agent = spawnCli(
        [
          'agent',
          '--collector',
          base,
          '--otlp-port',
          '0',
          '--id',
          `agent-${id}`,
          '--interval-ms',
          '300',
          '--no-nvml',
          '--log-level',
          'warn',
        ],
        { TAILGUARD_AGENT_TOKEN: AGENT, TAILGUARD_OTLP_TOKEN: OTLP },
      )
      procs.push(agent)
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

    const expectedCount = 2 * SPANS_PER_PHASE_PER_AGENT
    await eventually(async () => {
      const r = await api<{ count: number }>(
        base,
        '/api/v1/latency?service=pipeline&phase=kernel&from=-1h',
        API,
      )
      return r.body.count === expectedCount
    }, 60_000)

    const check = async (query: string, samples: number[]) => {
      const sorted = Float64Array.from(samples).sort()
      const r = await api<{ count: number; quantiles: Record<string, number> }>(
        base,
        `/api/v1/latency?${query}&from=-1h&quantiles=${QUANTILES.join(',')}`,
        API,
      )
      expect(r.status).toBe(200)
      expect(r.body.count).toBe(samples.length)
      for (const q of QUANTILES) {
        const exactMs = nearestRank(sorted, q) / 1000
        const got = r.body.quantiles[String(q)]!
        expect(
          Math.abs(got - exactMs) / exactMs,
          `${query} p${q * 100}: ${got} ms vs exact ${exactMs} ms`,
        ).toBeLessThanOrEqual(0.005)
      }
    }
    for (const { phase } of PHASES) {
      await check(`service=pipeline&phase=${phase}&replica=replica-a`, a[phase]!)
      await check(`service=pipeline&phase=${phase}&replica=replica-b`, b[phase]!)
      // Merged across both agents: the percentiles of the union, never an average of the two.
      await check(`service=pipeline&phase=${phase}`, [...a[phase]!, ...b[phase]!])
    }
  }, 240_000)
})

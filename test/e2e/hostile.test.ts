// Issue #11 end to end through real processes (`tailguard collector` on SQLite, `tailguard agent`):
// - poison pill: bad reports waiting in the agent's spool and a span with invalid UTF-16 among good spans;
//   every good span is stored within two intervals, the bad reports go to the dead-letter folder with
//   their reason and are counted in the agent's /metrics.
// - cardinality: 50,000 distinct label sets through one agent; the stored request count equals what the
//   agent acknowledged, the neighbours' series are intact, the agent's RSS stays under 600 MB, and the
//   overflow is visible in the agent's /metrics and the collector's API.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { api, eventually, spawnCli } from '../helpers/cli.js'
import type { CliProcess } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'
import { attrs, request, span } from '../agent/sources/otlp/payloads.js'
import type { JsonSpan } from '../agent/sources/otlp/payloads.js'

const API = 'api-token-hostile-0123456789abcdef'
const AGENT = 'agent-token-hostile-0123456789abcdef'
const INTERVAL_MS = 1000

const procs: CliProcess[] = []
const dirs: string[] = []
afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM')
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function startPair(spoolSeed?: (spoolDir: string) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'tg-hostile-e2e-'))
  dirs.push(dir)
  const port = await freePort()
  const collector = spawnCli(
    ['collector', '--port', String(port), '--db', join(dir, 'tg.db'), '--log-level', 'warn'],
    { TAILGUARD_API_TOKEN: API, TAILGUARD_AGENT_TOKEN: AGENT },
  )
  procs.push(collector)
  await collector.waitFor(/listening on http/)
  const base = `http://127.0.0.1:${port}`
  const spoolDir = join(dir, 'spool')
  mkdirSync(spoolDir, { recursive: true })
  spoolSeed?.(spoolDir)
  const agent = spawnCli(
    [
      'agent',
      '--collector',
      base,
      '--otlp-port',
      '0',
      '--id',
      'hostile-agent',
      '--interval-ms',
      String(INTERVAL_MS),
      '--spool-dir',
      spoolDir,
      '--no-nvml',
      '--log-level',
      'warn',
    ],
    { TAILGUARD_AGENT_TOKEN: AGENT },
  )
  procs.push(agent)
  const m = await agent.waitFor(/OTLP\/HTTP on (http:\/\/\S+)\/v1\/traces/)
  return { base, agentBase: m[1]!, spoolDir, agent }
}

const postSpans = async (agentBase: string, body: string) => {
  const res = await fetch(`${agentBase}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  })
  return {
    status: res.status,
    body: (await res.json()) as { partialSuccess?: { rejectedSpans?: string; errorMessage?: string } },
  }
}

const metricValue = (text: string, name: string, labels = ''): number => {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels} `) || l.startsWith(`${name}${labels}{`))
  return line ? Number(line.split(' ').pop()) : 0
}

function badReport(seq: number, mutate: (text: string) => string): string {
  const now = Date.now() - 30_000
  return mutate(
    JSON.stringify({
      version: 1,
      agent: { id: 'old-agent', instance: 'old-instance', node: 'n' },
      seq,
      intervalStartMs: now,
      intervalEndMs: now + 5000,
      series: [
        {
          labels: { service: 'poisoned', model: 'm', version: '1', replica: 'REPLICA', node: 'n' },
          histograms: {},
          requests: { ok: 5, error: 0, shed: 0 },
        },
      ],
    }),
  )
}

describe('poison pill: bad input never blocks good data', () => {
  it('stores every good span within two intervals and dead-letters the bad reports with their reason', async () => {
    const { base, agentBase, spoolDir } = await startPair((spool) => {
      // Reports a previous agent version left in the spool: a lone surrogate in a label, a count "Infinity".
      writeFileSync(
        join(spool, '000000000000001-old-instance-000000000001.json'),
        badReport(1, (t) => t.replace('REPLICA', '\\ud800')),
      )
      writeFileSync(
        join(spool, '000000000000001-old-instance-000000000002.json'),
        badReport(2, (t) => t.replace('"ok":5', '"ok":"Infinity"')),
      )
    })
    const spans = (service: string, n: number, replica = 'r0'): JsonSpan[] =>
      Array.from({ length: n }, (_, i) =>
        span({
          name: 'request',
          durationNs: 1_000_000 + i * 1000,
          attributes: attrs({
            'tailguard.phase': 'total',
            'service.name': service,
            'service.instance.id': replica,
          }),
        }),
      )
    const good = JSON.stringify(
      request({ 'host.name': 'gpu-1' }, [...spans('alpha', 40), ...spans('beta', 25)]),
    )
    // The hostile span: its replica holds a lone surrogate (a JSON escape), among good spans.
    const hostile = JSON.stringify(
      request({ 'host.name': 'gpu-1' }, [...spans('gamma', 10), ...spans('gamma', 1, 'pod-REPL')]),
    ).replace('pod-REPL', 'pod-\\ud800')
    const t0 = Date.now()
    const r1 = await postSpans(agentBase, good)
    const r2 = await postSpans(agentBase, hostile)
    expect(r1.status).toBe(200)
    expect(r2.status).toBe(200)
    expect(r2.body.partialSuccess?.errorMessage).toMatch(/1 label value\(s\) repaired/)

    const count = async (q: string) =>
      (await api<{ requests: { ok: number } }>(base, `/api/v1/breakdown?${q}&from=-1h`, API)).body.requests.ok
    await eventually(
      async () =>
        (await count('service=alpha')) === 40 &&
        (await count('service=beta')) === 25 &&
        (await count('service=gamma')) === 11,
      10_000,
      50,
    )
    const storedMs = Date.now() - t0
    expect(storedMs, `good spans stored after ${storedMs} ms`).toBeLessThanOrEqual(2 * INTERVAL_MS + 1000)

    // The repaired label is stored with U+FFFD, never forwarded as invalid UTF-16.
    const services = await api<{ services: Array<{ service: string; replica: string }> }>(
      base,
      '/api/v1/services',
      API,
    )
    expect(
      services.body.services
        .filter((s) => s.service === 'gamma')
        .map((s) => s.replica)
        .sort(),
    ).toEqual(['pod-\ufffd', 'r0'])
    expect(services.body.services.some((s) => s.service === 'poisoned')).toBe(false)

    // Both bad reports are in the dead-letter folder with the collector's reason, and counted.
    const dlDir = join(spoolDir, 'dead-letter')
    await eventually(async () => readdirSync(dlDir).filter((f) => f.endsWith('.json')).length === 2, 10_000)
    const letters = readdirSync(dlDir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => JSON.parse(readFileSync(join(dlDir, f), 'utf8')) as { status: number; reason: string })
    expect(letters.map((l) => l.status)).toEqual([400, 400])
    expect(letters.map((l) => l.reason).join('\n')).toMatch(/labels\/replica.*Unicode/)
    expect(letters.map((l) => l.reason).join('\n')).toMatch(/requests\/ok/)
    expect(readdirSync(spoolDir).filter((f) => f.endsWith('.json'))).toEqual([])
    const metrics = await (await fetch(`${agentBase}/metrics`)).text()
    expect(metricValue(metrics, 'tailguard_agent_reports_total', '{outcome="dead_lettered"}')).toBe(2)
    expect(metricValue(metrics, 'tailguard_agent_labels_repaired_total')).toBe(1)
    // And the agent says so where a probe looks: degraded, with the folder to list.
    const health = (await (await fetch(`${agentBase}/healthz`)).json()) as {
      status: string
      deadLetters: { count: number; dir: string; problem: string }
    }
    expect(health.status).toBe('degraded')
    expect(health.deadLetters).toEqual({
      count: 2,
      dir: dlDir,
      problem: `2 report(s) or series refused as bad: see tailguard dead-letter list --dir ${dlDir}`,
    })
  }, 90_000)
})

describe('cardinality: 50,000 label sets through one agent', () => {
  it('keeps every request, the neighbours intact, RSS under 600 MB, and shows the overflow', async () => {
    const { base, agentBase } = await startPair()
    const LABEL_SETS = 50_000
    const BATCH = 2_500
    let acknowledged = 0
    const neighbours = new Map<string, number>()
    for (let b = 0; b < LABEL_SETS / BATCH; b++) {
      const list: JsonSpan[] = []
      for (let i = 0; i < BATCH; i++) {
        const id = b * BATCH + i
        list.push(
          span({
            name: 'request',
            durationNs: 2_000_000 + (id % 1000) * 1000,
            attributes: attrs({
              'tailguard.phase': 'total',
              'service.name': 'exploding',
              'service.instance.id': `req-${id}`,
            }),
          }),
        )
      }
      // Neighbours: a well-behaved service on the same agent, 4 replicas.
      for (let r = 0; r < 4; r++) {
        const replica = `n${r}`
        list.push(
          span({
            name: 'request',
            durationNs: 5_000_000,
            attributes: attrs({
              'tailguard.phase': 'total',
              'service.name': 'neighbour',
              'service.instance.id': replica,
            }),
          }),
        )
        neighbours.set(replica, (neighbours.get(replica) ?? 0) + 1)
      }
      const res = await postSpans(agentBase, JSON.stringify(request({ 'host.name': 'gpu-1' }, list)))
      expect(res.status).toBe(200)
      expect(res.body.partialSuccess?.rejectedSpans ?? '0').toBe('0')
      acknowledged += BATCH
    }
    const latencyCount = async (q: string) =>
      (await api<{ count: number }>(base, `/api/v1/latency?${q}&from=-1h`, API)).body.count
    await eventually(async () => (await latencyCount('service=exploding')) === acknowledged, 60_000, 500)
    for (const [replica, n] of neighbours)
      expect(await latencyCount(`service=neighbour&replica=${replica}`)).toBe(n)

    const metrics = await (await fetch(`${agentBase}/metrics`)).text()
    const rss = metricValue(metrics, 'tailguard_agent_process_resident_memory_bytes')
    expect(rss).toBeGreaterThan(0)
    expect(rss / 2 ** 20, 'agent RSS, MiB').toBeLessThan(600)

    // The API shows the overflow series and its share of the requests.
    const services = await api<{ services: Array<{ service: string; replica: string; overflow?: boolean }> }>(
      base,
      '/api/v1/services',
      API,
    )
    const overflowSeries = services.body.services.filter(
      (s) => s.service === 'exploding' && s.replica === '__overflow__',
    )
    expect(overflowSeries.length).toBe(1)
    expect(overflowSeries[0]!.overflow).toBe(true)
    // Each label set was used once: those without a series of their own (at most 2,000 per service at a
    // time; idle ones are forgotten after 3 intervals, making room) all overflowed, and were counted.
    const ordinary = services.body.services.filter((s) => s.service === 'exploding' && !s.overflow).length
    expect(ordinary).toBeGreaterThanOrEqual(2000)
    expect(await latencyCount('service=exploding&replica=__overflow__')).toBe(acknowledged - ordinary)
    expect(metricValue(metrics, 'tailguard_agent_series_overflow_label_sets_total')).toBe(
      LABEL_SETS - ordinary,
    )
  }, 240_000)
})

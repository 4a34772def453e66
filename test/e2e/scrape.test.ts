// Issue #14's acceptance, end to end through real processes: a fake vLLM server serves a real capture
// (test/fixtures/scrape/vllm-0.11-new-names.txt) whose counters and buckets advance on every scrape; a
// `tailguard agent` process scrapes it (target from its config file, with labels) and reports to a
// `tailguard collector` process on SQLite; GET /api/v1/signals shows running, waiting and KV use, and the TTFT
// and inter-token latency histograms flagged `precision: "buckets"`.
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { api, eventually, spawnCli } from '../helpers/cli.js'
import type { CliProcess } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'

const API = 'api-token-scrape-e2e-0123456789'
const AGENT = 'agent-token-scrape-e2e-0123456789'
const CAPTURE = readFileSync(join(import.meta.dirname, '../fixtures/scrape/vllm-0.11-new-names.txt'), 'utf8')

/** The capture with every sample of `name` (exact labels prefix) raised by `by`. */
function advance(text: string, prefix: string, by: number): string {
  return text
    .split('\n')
    .map((l) => {
      if (!l.startsWith(prefix)) return l
      const i = l.lastIndexOf(' ')
      return `${l.slice(0, i)} ${Number(l.slice(i + 1)) + by}`
    })
    .join('\n')
}

/**
 * A vLLM stand-in: each scrape sees 2 more requests (TTFT 0.25–0.5 s), 200 more tokens (inter-token ≤ 10 ms),
 * 7 running, 3 waiting and 42% KV-cache use.
 */
function fakeVllm(): { server: Server; scrapes: () => number } {
  let n = 0
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end()
      return
    }
    n++
    let t = CAPTURE.replace(
      'vllm:num_requests_running{model_name="facebook/opt-125m"} 0.0',
      'vllm:num_requests_running{model_name="facebook/opt-125m"} 7',
    )
      .replace(
        'vllm:num_requests_waiting{model_name="facebook/opt-125m"} 0.0',
        'vllm:num_requests_waiting{model_name="facebook/opt-125m"} 3',
      )
      .replace(
        'vllm:kv_cache_usage_perc{model_name="facebook/opt-125m"} 0.0',
        'vllm:kv_cache_usage_perc{model_name="facebook/opt-125m"} 0.42',
      )
    t = advance(t, 'vllm:generation_tokens_total{', 200 * n)
    t = advance(t, 'vllm:prompt_tokens_total{', 50 * n)
    t = advance(t, 'vllm:request_success_total{', 2 * n)
    for (const le of ['0.5', '0.75', '1.0', '2.5', '5.0', '7.5', '10.0', '+Inf'])
      t = advance(t, `vllm:time_to_first_token_seconds_bucket{le="${le}"`, 2 * n)
    t = advance(t, 'vllm:time_to_first_token_seconds_count{', 2 * n)
    t = advance(t, 'vllm:time_to_first_token_seconds_sum{', 0.8 * n)
    for (const le of ['0.01', '0.1', '+Inf'])
      t = advance(t, `vllm:inter_token_latency_seconds_bucket{le="${le}"`, 200 * n)
    t = advance(t, 'vllm:inter_token_latency_seconds_count{', 200 * n)
    t = advance(t, 'vllm:inter_token_latency_seconds_sum{', 1.0 * n)
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(t)
  })
  return { server, scrapes: () => n }
}

const procs: CliProcess[] = []
const dirs: string[] = []
let vllm: Server | undefined
afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM')
  await new Promise<void>((r) => (vllm ? vllm.close(() => r()) : r()))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

interface SignalsBody {
  series: Array<{
    service: string
    model: string
    replica: string
    sources: string[]
    points: Array<{
      gauges: Record<string, { min: number; mean: number; max: number; last: number }>
      counters: Record<string, number>
    }>
    histograms: Record<
      string,
      { precision: string; boundsMs: number[]; counts: number[]; count: number; p50Ms: number | null }
    >
  }>
}

describe('fake vLLM → tailguard agent (scrape) → tailguard collector → /api/v1/signals', () => {
  it('shows running, waiting and KV use, and TTFT/ITL histograms with precision "buckets"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-scrape-e2e-'))
    dirs.push(dir)
    const fake = fakeVllm()
    vllm = fake.server
    await new Promise<void>((r) => fake.server.listen(0, '127.0.0.1', r))
    const vllmPort = (fake.server.address() as { port: number }).port

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

    const config = join(dir, 'tailguard.yaml')
    writeFileSync(
      config,
      [
        'agent:',
        '  scrape:',
        `    - url: http://127.0.0.1:${vllmPort}/metrics`,
        '      kind: vllm',
        '      service: chat',
        '      replica: vllm-0',
        '      periodMs: 200',
      ].join('\n'),
    )
    const agent = spawnCli(
      [
        'agent',
        '--config',
        config,
        '--collector',
        base,
        '--otlp-port',
        '0',
        '--interval-ms',
        '300',
        '--no-nvml',
        '--log-level',
        'warn',
      ],
      { TAILGUARD_AGENT_TOKEN: AGENT },
    )
    procs.push(agent)
    await agent.waitFor(/OTLP\/HTTP on/)

    const body = await eventually(async () => {
      const r = await api<SignalsBody>(base, '/api/v1/signals?service=chat&from=-5m&step=10s', API)
      expect(r.status).toBe(200)
      const s = r.body.series[0]
      const tokens = s?.points.reduce((a, p) => a + (p.counters['outputTokens'] ?? 0), 0) ?? 0
      return s &&
        (s.histograms['ttft']?.count ?? 0) >= 4 &&
        (s.histograms['tpot']?.count ?? 0) >= 400 &&
        tokens >= 400
        ? r.body
        : undefined
    }, 30_000)
    expect(fake.scrapes()).toBeGreaterThanOrEqual(3)
    expect(body.series).toHaveLength(1)
    const s = body.series[0]!
    expect(s).toMatchObject({
      service: 'chat',
      model: 'facebook/opt-125m',
      replica: 'vllm-0',
      sources: ['scrape:vllm'],
    })
    const last = s.points[s.points.length - 1]!
    expect(last.gauges['running']!.last).toBe(7)
    expect(last.gauges['waiting']!.last).toBe(3)
    expect(last.gauges['kvCacheUsage']!.last).toBeCloseTo(0.42, 9)

    const ttft = s.histograms['ttft']!
    expect(ttft.precision).toBe('buckets')
    expect(ttft.boundsMs).toEqual([
      1, 5, 10, 20, 40, 60, 80, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000,
    ])
    // Every increment landed in (250, 500] ms: the first scrape is the baseline, the rest count 2 each.
    expect(ttft.counts.reduce((a, b) => a + b, 0)).toBe(ttft.count)
    expect(ttft.counts[9]).toBe(ttft.count)
    expect(ttft.count % 2).toBe(0)
    expect(ttft.p50Ms).toBeGreaterThan(250)
    expect(ttft.p50Ms).toBeLessThanOrEqual(500)
    const itl = s.histograms['tpot']!
    expect(itl.precision).toBe('buckets')
    expect(itl.boundsMs).toEqual([10, 100])
    expect(itl.counts[0]).toBe(itl.count)

    // The collector's own answer says nothing HDR-exact about these: no HDR latency was recorded.
    const lat = await api<{ count: number }>(base, '/api/v1/latency?service=chat&phase=ttft&from=-5m', API)
    expect(lat.body.count).toBe(0)
  }, 60_000)
})

describe('tailguard scrape URL|FILE', () => {
  it('prints what tailguard reads from a live server, as JSON and as text, and names unknown names', async () => {
    const fake = fakeVllm()
    await new Promise<void>((r) => fake.server.listen(0, '127.0.0.1', r))
    try {
      const url = `http://127.0.0.1:${(fake.server.address() as { port: number }).port}/metrics`
      const json = spawnCli(['scrape', url, '--json'])
      expect(await json.exited).toBe(0)
      const d = JSON.parse(json.output()) as {
        kind: string
        series: Array<{
          gauges: Record<string, { value: number; from: string }>
          histograms: Record<string, { precision: string }>
        }>
      }
      expect(d.kind).toBe('vllm')
      expect(d.series[0]!.gauges['kvCacheUsage']).toEqual({ value: 0.42, from: 'vllm:kv_cache_usage_perc' })
      expect(d.series[0]!.histograms['ttft']!.precision).toBe('buckets')

      const file = join(mkdtempSync(join(tmpdir(), 'tg-scrape-cli-')), 'metrics.txt')
      dirs.push(join(file, '..'))
      writeFileSync(file, `${CAPTURE}\n# TYPE vllm:shiny_new_thing gauge\nvllm:shiny_new_thing 1\n`)
      const text = spawnCli(['scrape', file, '--kind', 'vllm'])
      expect(await text.exited).toBe(0)
      expect(text.output()).toMatch(/ttft\s+buckets\s+count=1/)
      expect(text.output()).toMatch(
        /warning: 1 unknown vllm name\(s\), not mapped:\n {2}vllm:shiny_new_thing/,
      )

      const bad = spawnCli(['scrape', file, '--kind', 'nope'])
      expect(await bad.exited).not.toBe(0)
      expect(bad.output()).toMatch(/--kind/)
    } finally {
      await new Promise<void>((r) => fake.server.close(() => r()))
    }
  }, 30_000)
})

import { createServer } from 'node:http'
import type { Server } from 'node:http'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createRecorder,
  createScrapeSource,
  diffSnapshots,
  parseScrapeArg,
  readExposition,
} from '../../../../agent/index.js'

const DIR = join(import.meta.dirname, '../../../fixtures/scrape')
const fixture = (name: string) => readFileSync(join(DIR, name), 'utf8')
const TRITON = fixture('triton-2.38.0-summaries.txt')
const VLLM = fixture('vllm-0.11-new-names.txt')

/** Replaces the value of the one sample line starting with `prefix`. */
const set = (text: string, prefix: string, value: number) =>
  text
    .split('\n')
    .map((l) => (l.startsWith(prefix) ? `${l.slice(0, l.lastIndexOf(' '))} ${value}` : l))
    .join('\n')

describe('diffSnapshots', () => {
  it('the first scrape gives gauges only; the next gives counter and bucket increases', () => {
    const a = readExposition(VLLM, 'vllm')
    const first = diffSnapshots(null, a)
    expect(first.observations[0]!.observation).toEqual({
      source: 'scrape:vllm',
      gauges: { running: 0, waiting: 0, kvCacheUsage: 0 },
    })
    let next = set(VLLM, 'vllm:generation_tokens_total{', 107)
    next = set(next, 'vllm:num_requests_running{', 9)
    next = set(next, 'vllm:request_success_total{', 4)
    next = set(next, 'vllm:inter_token_latency_seconds_bucket{le="0.01"', 151)
    next = set(next, 'vllm:inter_token_latency_seconds_bucket{le="0.1"', 156)
    next = set(next, 'vllm:inter_token_latency_seconds_bucket{le="+Inf"', 157)
    next = set(next, 'vllm:inter_token_latency_seconds_count{', 157)
    next = set(next, 'vllm:inter_token_latency_seconds_sum{', 0.8237391703762114)
    const d = diffSnapshots(a, readExposition(next, 'vllm'))
    expect(d.events).toEqual([])
    const o = d.observations[0]!.observation
    expect(o.gauges).toEqual({ running: 9, waiting: 0, kvCacheUsage: 0 })
    expect(o.counters).toEqual({
      preemptions: 0,
      inputTokens: 0,
      outputTokens: 100,
      prefixCacheQueries: 0,
      prefixCacheHits: 0,
    })
    expect(o.requests).toEqual({ ok: 3, error: 0 })
    expect(o.buckets?.tpot).toMatchObject({ boundsMs: [10, 100], counts: [10, 2, 1], source: 'scrape:vllm' })
    expect(o.buckets!.tpot!.sumMs).toBeCloseTo(200, 6)
    expect(o.buckets?.ttft).toBeUndefined() // nothing new
  })

  it('a counter reset (server restart) counts from zero and is reported', () => {
    const a = readExposition(set(VLLM, 'vllm:generation_tokens_total{', 5000), 'vllm')
    const b = readExposition(set(VLLM, 'vllm:generation_tokens_total{', 40), 'vllm')
    const d = diffSnapshots(a, b)
    expect(d.observations[0]!.observation.counters?.outputTokens).toBe(40)
    expect(d.events).toEqual([
      'scrape:vllm facebook/opt-125m vllm:generation_tokens_total: counter reset (5000 → 40); counting from zero',
    ])
  })

  it('a changed bucket layout is reported and that interval skipped; a histogram that vanishes is reported', () => {
    const a = readExposition(VLLM, 'vllm')
    const relaid = VLLM.replace(
      'vllm:request_queue_time_seconds_bucket{le="0.3",model_name="facebook/opt-125m"} 6.0',
      'vllm:request_queue_time_seconds_bucket{le="0.1",model_name="facebook/opt-125m"} 6.0\nvllm:request_queue_time_seconds_bucket{le="0.5",model_name="facebook/opt-125m"} 6.0',
    )
    const d = diffSnapshots(
      a,
      readExposition(set(relaid, 'vllm:request_queue_time_seconds_count', 6), 'vllm'),
    )
    expect(d.events).toEqual([
      'scrape:vllm facebook/opt-125m vllm:request_queue_time_seconds: bucket layout changed (1 → 2 bounds); this interval skipped, next one uses the new layout',
    ])
    const gone = VLLM.split('\n')
      .filter((l) => !l.includes('vllm:request_decode_time_seconds'))
      .join('\n')
    const d2 = diffSnapshots(a, readExposition(gone, 'vllm'))
    expect(d2.events).toEqual([
      'scrape:vllm facebook/opt-125m vllm:request_decode_time_seconds: no longer exported',
    ])
    expect(diffSnapshots(a, readExposition('', 'vllm')).events).toEqual([
      'scrape:vllm facebook/opt-125m: no longer exported',
    ])
  })

  it('Triton: phase means per interval from cumulative µs, mean batch size, requests, summary quantiles kept', () => {
    const a = readExposition(TRITON, 'triton')
    let t = set(TRITON, 'nv_inference_request_success{model="densenet_onnx"', 5)
    t = set(t, 'nv_inference_count{model="densenet_onnx"', 11)
    t = set(t, 'nv_inference_exec_count{model="densenet_onnx"', 5)
    t = set(t, 'nv_inference_request_duration_us{model="densenet_onnx"', 1327965 + 400_000)
    t = set(t, 'nv_inference_queue_duration_us{model="densenet_onnx"', 145 + 3000)
    t = set(t, 'nv_inference_request_failure{model="densenet_onnx"', 1)
    t = set(t, 'nv_inference_pending_request_count{model="densenet_onnx"', 7)
    const d = diffSnapshots(a, readExposition(t, 'triton'))
    const dense = d.observations.find((o) => o.model === 'densenet_onnx')!.observation
    expect(dense.gauges).toEqual({ queued: 7, batchSize: 4 })
    expect(dense.counters).toEqual({ batches: 2 })
    expect(dense.requests).toEqual({ ok: 2, error: 1 })
    // 400 ms over 3 requests (2 ok + 1 failed): a mean of 133 ms; 3 ms of queue.
    expect(dense.buckets?.total).toMatchObject({ boundsMs: [], counts: [3] })
    expect(dense.buckets!.total!.sumMs).toBeCloseTo(400, 6)
    expect(dense.buckets!.total!.quantilesMs).toHaveLength(5)
    expect(dense.buckets!.queue!.sumMs).toBeCloseTo(3, 6)
    const simple = d.observations.find((o) => o.model === 'simple')!.observation
    expect(simple.buckets).toBeUndefined()
  })
})

describe('parseScrapeArg', () => {
  it.each([
    ['http://127.0.0.1:8000/metrics', { kind: 'auto', url: 'http://127.0.0.1:8000/metrics' }],
    ['triton=http://t:8002/metrics', { kind: 'triton', url: 'http://t:8002/metrics' }],
    ['dcgm=https://d:9400/metrics', { kind: 'dcgm', url: 'https://d:9400/metrics' }],
  ])('%s', (arg, want) => expect(parseScrapeArg(arg)).toEqual(want))
  it('names the problem', () => {
    expect(parseScrapeArg('foo=http://x/metrics')).toMatch(/unknown kind 'foo'/)
    expect(parseScrapeArg('vllm=localhost:8000')).toMatch(/not an http\(s\) URL/)
  })
})

describe('createScrapeSource against a real HTTP server', () => {
  let server: Server | undefined
  afterEach(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()))
    server = undefined
  })

  it('records per-model signals, goes unavailable when the server stops answering, and recovers', async () => {
    let body = VLLM
    let answering = true
    server = createServer((req, res) => {
      if (!answering) {
        res.writeHead(503).end('down')
        return
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end(body)
    })
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
    const { port } = server.address() as { port: number }
    const logs: string[] = []
    const recorder = createRecorder()
    const source = createScrapeSource(
      { url: `http://127.0.0.1:${port}/metrics`, kind: 'auto', service: 'chat', periodMs: 60_000 },
      { node: 'n1', log: (_l, line) => logs.push(line) },
    )
    const tick = async () => {
      // The source scrapes on start and then every period; restart it to scrape now.
      await source.stop()
      void source.start(recorder)
      await source.stop()
    }
    void source.start(recorder)
    await source.stop()
    expect(source.status()).toEqual({ state: 'ok' })
    expect(logs).toContain(`scrape http://127.0.0.1:${port}/metrics: detected vllm`)
    body = set(set(VLLM, 'vllm:generation_tokens_total{', 57), 'vllm:num_requests_waiting{', 4)
    await tick()
    answering = false
    await tick()
    expect(source.status()).toEqual({ state: 'unavailable', reason: 'not answering: HTTP 503' })
    answering = true
    await tick()
    expect(source.status()).toEqual({ state: 'ok' })
    const { series } = recorder.drain()
    expect(series).toHaveLength(1)
    const s = series[0]!
    expect(s.labels).toEqual({
      service: 'chat',
      model: 'facebook/opt-125m',
      version: '',
      replica: `127.0.0.1:${port}`,
      node: 'n1',
    })
    expect(s.signals?.sources).toEqual(['scrape:vllm'])
    expect(s.signals?.gauges?.waiting).toEqual({ min: 0, mean: 8 / 3, max: 4, last: 4 })
    expect(s.signals?.counters?.outputTokens).toBe(50)
    expect(logs.some((l) => l.includes('not answering: HTTP 503'))).toBe(true)
  })
})

describe('a scraped server behind the agent’s own proxy', () => {
  it('keeps its gauges and tokens but not its request counts, which the proxy counts already', async () => {
    const drained = async (countRequests: boolean | undefined) => {
      let body = VLLM
      const recorder = createRecorder()
      const source = createScrapeSource(
        {
          url: 'http://127.0.0.1:8000/metrics',
          kind: 'vllm',
          service: 'chat',
          periodMs: 60_000,
          ...(countRequests !== undefined ? { countRequests } : {}),
        },
        { node: 'n1', fetch: async () => new Response(body) },
      )
      for (let i = 1; i <= 2; i++) {
        body = set(set(VLLM, 'vllm:request_success_total{', 4 * i), 'vllm:generation_tokens_total{', 64 * i)
        void source.start(recorder)
        await source.stop()
      }
      return recorder.drain().series[0]!
    }
    const counted = await drained(undefined)
    const proxied = await drained(false)
    expect(counted.requests?.ok).toBeGreaterThan(0)
    expect(proxied.requests?.ok ?? 0).toBe(0)
    expect(proxied.signals?.counters?.outputTokens).toBe(counted.signals?.counters?.outputTokens)
  })
})

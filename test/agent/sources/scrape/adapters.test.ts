import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { describeScrape, detectKind, readExposition } from '../../../../agent/index.js'
import { parsePromText } from '../../../../agent/gpu/prom-text.js'

const DIR = join(import.meta.dirname, '../../../fixtures/scrape')
const fixture = (name: string) => readFileSync(join(DIR, name), 'utf8')
const FIXTURES = readdirSync(DIR).filter((f) => f.endsWith('.txt'))

describe('fixtures: real captures, each naming its server version and source', () => {
  it.each(FIXTURES)('%s says where it comes from and which version', (name) => {
    const head = fixture(name).split('\n').slice(0, 3).join(' ')
    expect(head).toMatch(/^# Real \/metrics (capture|excerpt)/)
    expect(head).toMatch(/\d+\.\d+|\d{2}\.\d{2}|version not stated/)
  })

  it('has at least two captures per adapter', () => {
    for (const kind of ['vllm', 'triton', 'tgi', 'sglang', 'dcgm'])
      expect(FIXTURES.filter((f) => f.startsWith(kind)).length, kind).toBeGreaterThanOrEqual(2)
  })
})

// The reference parser is not used at run time: it throws on real DCGM exporter output (a `# HELP` line with no
// text), keeps one summary per family (labels lost) and drops histograms' _sum and _count. Where it parses, every
// value must agree with ours.
const sameLe = (a: string | undefined, b: string) => (a === '+Inf' ? b === '+Inf' : Number(a) === Number(b))

describe('our Prometheus text parser against parse-prometheus-text-format (the reference)', () => {
  it.each(FIXTURES)('%s: gauges, counters, histogram buckets and summary quantiles read the same', (name) => {
    const text = fixture(name)
    const ours = parsePromText(text)
    expect(ours.malformed).toBe(0)
    const sum = (pred: (s: (typeof ours.samples)[number]) => boolean) =>
      ours.samples.filter(pred).reduce((a, s) => a + s.value, 0)
    let families: Array<{
      name: string
      type: string
      metrics: Array<{ value?: string; buckets?: Record<string, string>; quantiles?: Record<string, string> }>
    }>
    try {
      families = parsePrometheusTextFormat(text)
    } catch (err) {
      // Only the empty HELP texts DCGM exporter 3.x writes make the reference give up; ours reads them.
      expect((err as Error).message).toMatch(/# HELP DCGM_FI_\w+$/)
      expect(ours.samples.length).toBeGreaterThan(0)
      return
    }
    let compared = 0
    for (const f of families) {
      if (f.type === 'GAUGE' || f.type === 'COUNTER' || f.type === 'UNTYPED') {
        const theirs = f.metrics.reduce((a, m) => a + Number(m.value), 0)
        expect(
          sum((s) => s.name === f.name),
          f.name,
        ).toBeCloseTo(theirs, 6)
        compared++
      } else if (f.type === 'HISTOGRAM') {
        const les = new Set(f.metrics.flatMap((m) => Object.keys(m.buckets ?? {})))
        for (const le of les) {
          const theirs = f.metrics.reduce((a, m) => a + Number(m.buckets?.[le] ?? 0), 0)
          expect(
            sum((s) => s.name === `${f.name}_bucket` && sameLe(s.labels['le'], le)),
            `${f.name} le=${le}`,
          ).toBeCloseTo(theirs, 6)
          compared++
        }
      } else if (f.type === 'SUMMARY' && f.metrics.length === 1) {
        for (const [q, v] of Object.entries(f.metrics[0]!.quantiles ?? {})) {
          const mine = ours.samples.filter((s) => s.name === f.name && s.labels['quantile'] === q)
          expect(
            mine.map((s) => s.value),
            `${f.name} q=${q}`,
          ).toContain(Number(v))
          compared++
        }
      }
    }
    expect(compared).toBeGreaterThan(0)
  })
})

describe('kind detection', () => {
  it.each([
    ['vllm-0.4.3-old-names.txt', 'vllm'],
    ['vllm-0.11-new-names.txt', 'vllm'],
    ['triton-2.38.0-summaries.txt', 'triton'],
    ['tgi-3.3.5.txt', 'tgi'],
    ['sglang-0.5.10.txt', 'sglang'],
    ['dcgm-exporter-t4-driver460.txt', 'dcgm'],
  ])('%s is %s', (name, kind) => {
    expect(detectKind(parsePromText(fixture(name)).samples)).toBe(kind)
  })
  it('finds nothing in text from no known server', () => {
    expect(detectKind(parsePromText('process_open_fds 3\n').samples)).toBeNull()
  })
})

const OPT = 'facebook/opt-125m\u0000'

describe('vLLM', () => {
  it('0.4.3 names: gpu_cache_usage_perc is KV use, time_per_output_token is TPOT, buckets in ms', () => {
    const snap = readExposition(fixture('vllm-0.4.3-old-names.txt'), 'vllm')
    expect(snap.unknown).toEqual([])
    expect(snap.otherFamilies).toBe(2)
    const m = snap.models.get(OPT)!
    expect(m.gauges).toEqual({ running: 0, waiting: 0, kvCacheUsage: 0 })
    expect(m.from['kvCacheUsage']).toBe('vllm:gpu_cache_usage_perc')
    expect(m.counters).toEqual({ preemptions: 0, inputTokens: 5, outputTokens: 7, ok: 1 })
    expect(m.histograms.tpot).toMatchObject({
      family: 'vllm:time_per_output_token_seconds',
      count: 6,
      precision: 'buckets',
    })
    expect(m.histograms.tpot!.sumMs).toBeCloseTo(190.16313552856445, 9)
    expect(m.histograms.ttft!.boundsMs).toEqual([
      1, 5, 10, 20, 40, 60, 80, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000,
    ])
    expect(m.histograms.ttft!.counts).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0])
    expect(m.histograms.total!.count).toBe(1)
  })

  it('0.11 names: kv_cache_usage_perc, inter_token_latency, queue/prefill/decode phases, prefix cache', () => {
    const snap = readExposition(fixture('vllm-0.11-new-names.txt'), 'vllm')
    expect(snap.unknown).toEqual([])
    const m = snap.models.get(OPT)!
    expect(m.from['kvCacheUsage']).toBe('vllm:kv_cache_usage_perc')
    expect(m.histograms.tpot).toMatchObject({
      family: 'vllm:inter_token_latency_seconds',
      count: 144,
      boundsMs: [10, 100],
    })
    expect(m.histograms.queue).toMatchObject({ count: 6, boundsMs: [300] })
    expect(m.histograms.prefill!.sumMs).toBeCloseTo(214.0041133388877, 9)
    expect(m.histograms.decode!.count).toBe(6)
    expect(m.counters).toMatchObject({ prefixCacheQueries: 117, prefixCacheHits: 64 })
  })

  it('prefers the new names when a server exports both, and says so', () => {
    const both =
      fixture('vllm-0.4.3-old-names.txt') +
      fixture('vllm-0.11-new-names.txt')
        .split('\n')
        .filter((l) => /kv_cache_usage_perc|inter_token_latency/.test(l))
        .join('\n')
    const snap = readExposition(both, 'vllm')
    const m = snap.models.get(OPT)!
    expect(m.from['kvCacheUsage']).toBe('vllm:kv_cache_usage_perc')
    expect(m.histograms.tpot!.family).toBe('vllm:inter_token_latency_seconds')
    expect(snap.warnings).toContain(
      'vllm:time_per_output_token_seconds and vllm:inter_token_latency_seconds both present; using vllm:inter_token_latency_seconds',
    )
  })

  it('0.7 excerpt (production-stack #318): gauges of another model; a family with no samples is no series', () => {
    const snap = readExposition(fixture('vllm-0.7-production-stack-318.txt'), 'vllm')
    expect([...snap.models.keys()]).toEqual(['Qwen/Qwen2.5-Coder-32B-Instruct\u0000'])
    expect(snap.models.get('Qwen/Qwen2.5-Coder-32B-Instruct\u0000')!.gauges).toEqual({
      running: 0,
      waiting: 0,
      kvCacheUsage: 0,
    })
  })

  it('sums engines, averages KV use across them, and warns about unknown vllm: names', () => {
    const text = [
      '# TYPE vllm:num_requests_running gauge',
      'vllm:num_requests_running{engine="0",model_name="m"} 3.0',
      'vllm:num_requests_running{engine="1",model_name="m"} 5.0',
      '# TYPE vllm:kv_cache_usage_perc gauge',
      'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.9',
      'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5',
      '# TYPE vllm:e2e_request_latency_seconds histogram',
      'vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="m"} 2.0',
      'vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 3.0',
      'vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 4.0',
      'vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 3.0',
      'vllm:e2e_request_latency_seconds_bucket{engine="1",le="1.0",model_name="m"} 1.0',
      'vllm:e2e_request_latency_seconds_bucket{engine="1",le="+Inf",model_name="m"} 1.0',
      'vllm:e2e_request_latency_seconds_sum{engine="1",model_name="m"} 0.5',
      'vllm:e2e_request_latency_seconds_count{engine="1",model_name="m"} 1.0',
      '# TYPE vllm:brand_new_gauge gauge',
      'vllm:brand_new_gauge{model_name="m"} 1',
    ].join('\n')
    const snap = readExposition(text, 'vllm')
    const m = snap.models.get('m\u0000')!
    expect(m.gauges.running).toBe(8)
    expect(m.gauges.kvCacheUsage).toBeCloseTo(0.7, 9)
    expect(m.histograms.total).toMatchObject({ boundsMs: [1000], counts: [3, 1], count: 4, sumMs: 4500 })
    expect(snap.unknown).toEqual(['vllm:brand_new_gauge'])
    expect(describeScrape(text, 'auto')!.unknown).toEqual(['vllm:brand_new_gauge'])
  })
})

describe('Triton', () => {
  it('2.38.0 with summaries: cumulative µs counters are means, summaries give quantiles, pending is queued', () => {
    const snap = readExposition(fixture('triton-2.38.0-summaries.txt'), 'triton')
    expect(snap.unknown).toEqual([])
    expect([...snap.models.keys()].sort()).toEqual(['densenet_onnx\u00001', 'simple\u00001'])
    const d = snap.models.get('densenet_onnx\u00001')!
    expect(d.gauges).toEqual({ queued: 0 })
    expect(d.counters).toEqual({ ok: 3, error: 0, inferences: 3, executions: 3 })
    expect(d.histograms.total).toMatchObject({ precision: 'summary', boundsMs: [], counts: [3], count: 3 })
    expect(d.histograms.total!.sumMs).toBeCloseTo(1327.965, 9)
    expect(d.histograms.total!.quantilesMs).toEqual(
      [0.5, 0.9, 0.95, 0.99, 0.999].map((q) => ({ q, ms: 0.003 })),
    )
    expect(d.histograms.queue).toMatchObject({ precision: 'mean', count: 3 })
    expect(d.histograms.queue!.sumMs).toBeCloseTo(0.145, 9)
    expect(d.histograms.h2d!.sumMs).toBeCloseTo(0.626, 9)
    expect(d.histograms.kernel).toMatchObject({ precision: 'summary' })
    expect(d.histograms.kernel!.sumMs).toBeCloseTo(1326.831, 9)
    expect(d.histograms.d2h!.sumMs).toBeCloseTo(0.061, 9)
  })

  it('23.05 summary excerpt (issue #6011): quantiles in ms, count and sum', () => {
    const m = readExposition(fixture('triton-23.05-summary-issue6011.txt'), 'triton').models.get(
      'model_1\u00001',
    )!
    expect(m.histograms.total).toMatchObject({ precision: 'summary', count: 581 })
    expect(m.histograms.total!.sumMs).toBeCloseTo(695645.759, 6)
    const q = m.histograms.total!.quantilesMs!
    expect(q.map((x) => x.q)).toEqual([0.5, 0.9, 0.95, 0.99])
    ;[22.228, 22.754, 23.077, 23.339].forEach((ms, i) => expect(q[i]!.ms).toBeCloseTo(ms, 9))
  })

  it('recent excerpt (issue #8561): failures with a reason label are summed', () => {
    const m = readExposition(fixture('triton-2025-issue8561.txt'), 'triton').models.get('resnet_50\u00001')!
    expect(m.counters).toEqual({ ok: 2, error: 0, inferences: 2, executions: 2 })
  })
})

describe('TGI', () => {
  it('3.3.5: queue, preprocess and total as buckets; success, failure, tokens from histogram sums', () => {
    const snap = readExposition(fixture('tgi-3.3.5.txt'), 'tgi')
    expect(snap.unknown).toEqual([])
    const m = snap.models.get('\u0000')!
    expect(m.gauges).toEqual({ waiting: 0, running: 0 })
    expect(m.counters).toEqual({ ok: 109, error: 2, batches: 1525, outputTokens: 3423 })
    expect(m.histograms.total).toMatchObject({ count: 109, precision: 'buckets' })
    expect(m.histograms.total!.boundsMs).toHaveLength(35)
    expect(m.histograms.total!.sumMs).toBeCloseTo(541214.0316159999, 6)
    expect(m.histograms.queue!.counts.reduce((a, b) => a + b, 0)).toBe(109)
    expect(m.histograms.preprocess!.count).toBe(109)
  })

  it('TGIS adapter excerpt (IBM/vllm #18): gauges read, per-batch histogram known and left out', () => {
    const snap = readExposition(fixture('tgi-tgis-ibm-vllm-pr18.txt'), 'tgi')
    expect(snap.unknown).toEqual([])
    expect(snap.models.get('\u0000')!.gauges).toEqual({ waiting: 0, running: 0 })
    expect(snap.models.get('\u0000')!.histograms).toEqual({})
  })
})

describe('SGLang', () => {
  it('0.5.10: running, waiting, token usage as KV use, tokens, TTFT/ITL/e2e/queue buckets', () => {
    const snap = readExposition(fixture('sglang-0.5.10.txt'), 'sglang')
    expect(snap.unknown).toEqual([])
    const m = snap.models.get('facebook/opt-125m\u0000')!
    expect(m.gauges).toEqual({ running: 0, waiting: 0, kvCacheUsage: 0.25 })
    expect(m.counters).toEqual({ inputTokens: 5, outputTokens: 32, prefixCacheHits: 1, ok: 1 })
    expect(m.histograms.tpot).toMatchObject({
      family: 'sglang:inter_token_latency_seconds',
      count: 31,
      boundsMs: [10],
    })
    expect(m.histograms.ttft!.sumMs).toBeCloseTo(20, 9)
  })

  it('0.4.4 excerpt without TYPE lines or +Inf: read from the last bucket, with a warning', () => {
    const snap = readExposition(fixture('sglang-0.4.4-pr4444.txt'), 'sglang')
    const m = snap.models.get('/shared/public/models/Meta-Llama-3-8B-Instruct\u0000')!
    expect(m.histograms.total).toMatchObject({ count: 1, counts: [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] })
    expect(snap.warnings.some((w) => w.includes('no +Inf bucket'))).toBe(true)
  })
})

describe('DCGM exporter (through the agent’s DCGM reader)', () => {
  it('T4, driver 460: power, energy, memory, utilization; other DCGM_FI names are warnings', () => {
    const d = describeScrape(fixture('dcgm-exporter-t4-driver460.txt'), 'auto')!
    expect(d.kind).toBe('dcgm')
    expect(d.gpus).toEqual([
      expect.objectContaining({
        uuid: 'GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e',
        index: 0,
        name: 'Tesla T4',
      }),
    ])
    expect(d.gpus[0]!.fields).toMatchObject({
      powerW: 8.969,
      energyMj: 128996013,
      gpuUtilPct: 0,
      memFreeBytes: 15109 * 1024 * 1024,
    })
    expect(d.unknown).toEqual([
      'DCGM_FI_DEV_COUNT',
      'DCGM_FI_DEV_DEC_UTIL',
      'DCGM_FI_DEV_ENC_UTIL',
      'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL',
      'DCGM_FI_DEV_PCIE_REPLAY_COUNTER',
      'DCGM_FI_DEV_VGPU_LICENSE_STATUS',
    ])
  })

  it('T4, driver 470: framebuffer total and throttle reasons read; the rest warned', () => {
    const d = describeScrape(fixture('dcgm-exporter-t4-driver470.txt'), 'dcgm')!
    expect(d.gpus[0]!.fields).toEqual({ memTotalBytes: 15109 * 1024 * 1024, clockEventReasons: 1 })
    expect(d.unknown).toHaveLength(4)
  })
})

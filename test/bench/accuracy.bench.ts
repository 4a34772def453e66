import { Histogram, Registry } from 'prom-client'
import { createRecorder } from '../../agent/index.js'
import { decodeHistogram } from '../../collector/index.js'
import type { Bench } from './table.js'

// Percentile error of tailguard's HDR histograms against Prometheus-style fixed buckets on the same data:
// prom-client's default buckets, and the OpenTelemetry GenAI semantic conventions' advisory buckets for
// gen_ai.server.request.duration. Bucket percentiles are estimated as PromQL's histogram_quantile does
// (linear interpolation inside the bucket that holds the rank; the highest finite bound for the +Inf
// bucket). The reference is the exact nearest-rank percentile of the raw values.

const PROM_DEFAULT_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
// gen_ai.server.request.duration, ExplicitBucketBoundaries advisory (OTel GenAI semantic conventions).
const GENAI_BUCKETS_S = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
]
const QUANTILES = [0.5, 0.99, 0.999]
const N = 200_000

function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), a | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Integer µs: lognormal body (median, sigma) with a 1% Pareto tail from 10× the median. */
function dataset(seed: number, medianUs: number, sigma: number): number[] {
  const rand = prng(seed)
  const out: number[] = []
  for (let i = 0; i < N; i++) {
    if (rand() < 0.01) out.push(Math.round(medianUs * 10 * Math.pow(1 - rand(), -1 / 1.5)))
    else {
      const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand())
      out.push(Math.max(1, Math.round(medianUs * Math.exp(sigma * z))))
    }
  }
  return out
}

/** Fractional µs, lognormal (median, sigma), no rounding: sub-µs detail and values past 1 h as they come. */
function lognormal(seed: number, medianUs: number, sigma: number): number[] {
  const rand = prng(seed)
  return Array.from({ length: N }, () => {
    const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand())
    return medianUs * Math.exp(sigma * z)
  })
}

/** Two modes (cache hits at 2 ms, misses at 40 ms, 70/30), integer µs. */
function bimodal(seed: number): number[] {
  const hits = dataset(seed, 2_000, 0.3)
  const misses = dataset(seed + 1, 40_000, 0.3)
  return hits.map((v, i) => (i % 10 < 7 ? v : misses[i]!))
}

function nearestRank(sorted: readonly number[], q: number): number {
  return sorted[Math.max(1, Math.ceil(q * sorted.length - 1e-9)) - 1]!
}

/** PromQL histogram_quantile over cumulative buckets (upper bound, cumulative count), +Inf last. */
function histogramQuantile(q: number, buckets: readonly { le: number; count: number }[]): number {
  const total = buckets[buckets.length - 1]!.count
  let rank = q * total
  let b = buckets.findIndex((x) => x.count >= rank)
  if (b < 0) b = buckets.length - 1
  if (b === buckets.length - 1) return buckets[buckets.length - 2]!.le
  if (b === 0 && buckets[0]!.le <= 0) return buckets[0]!.le
  const start = b === 0 ? 0 : buckets[b - 1]!.le
  const below = b === 0 ? 0 : buckets[b - 1]!.count
  const count = buckets[b]!.count - below
  rank -= below
  return start + (buckets[b]!.le - start) * (rank / count)
}

async function promBuckets(valuesUs: readonly number[], boundsS: readonly number[]) {
  const registry = new Registry()
  const h = new Histogram({
    name: 'bench_seconds',
    help: 'bench',
    buckets: [...boundsS],
    registers: [registry],
  })
  for (const v of valuesUs) h.observe(v / 1e6)
  const data = await h.get()
  return data.values
    .filter((v) => v.metricName === 'bench_seconds_bucket')
    .map((v) => ({ le: v.labels.le === '+Inf' ? Infinity : Number(v.labels.le), count: v.value }))
    .sort((a, b) => a.le - b.le)
}

const pct = (x: number) => `${(x * 100).toFixed(x < 0.001 ? 3 : 1)}%`

const bench: Bench = {
  name: 'accuracy',
  async run(log) {
    const sets = [
      { name: 'LLM request (median 800 ms)', values: dataset(11, 800_000, 0.8) },
      { name: 'GPU kernel (median 4 ms)', values: dataset(12, 4_000, 0.5) },
      { name: 'queue wait (median 150 µs)', values: dataset(13, 150, 1.2) },
      { name: 'bimodal (2 ms / 40 ms, 70/30)', values: bimodal(14) },
      { name: 'sub-100 µs kernels (median 25 µs, fractional)', values: lognormal(15, 25, 0.4) },
      { name: 'saturated (median 1.5 h, fractional)', values: lognormal(16, 5.4e9, 0.3) },
    ]
    const rows: (string | number)[][] = []
    let worstOurs = 0
    for (const set of sets) {
      const sorted = [...set.values].sort((a, b) => a - b)
      // The acceptance bound covers values ≥ 10 µs; count the quantiles below that apart.
      const recorder = createRecorder()
      const labels = { service: 's', model: 'm', version: '1', replica: 'r', node: 'n' }
      for (const v of set.values) recorder.recordLatency(labels, 'total', v)
      const hdr = decodeHistogram(recorder.drain().series[0]!.histograms.total!)
      const promDefault = await promBuckets(set.values, PROM_DEFAULT_BUCKETS_S)
      const genai = await promBuckets(set.values, GENAI_BUCKETS_S)
      for (const q of QUANTILES) {
        const exactUs = nearestRank(sorted, q)
        const oursErr = Math.abs(hdr.getValueAtPercentile(q * 100) - exactUs) / exactUs
        const promErr = Math.abs(histogramQuantile(q, promDefault) * 1e6 - exactUs) / exactUs
        const genaiErr = Math.abs(histogramQuantile(q, genai) * 1e6 - exactUs) / exactUs
        if (exactUs >= 10) worstOurs = Math.max(worstOurs, oursErr)
        rows.push([
          set.name,
          `p${q * 100}`,
          (exactUs / 1000).toFixed(3),
          pct(oursErr),
          pct(promErr),
          pct(genaiErr),
        ])
      }
      log(`${set.name}: done`)
    }
    return {
      title: `Percentile error vs the exact value (${N.toLocaleString('en-US')} values per data set)`,
      columns: [
        'data',
        'quantile',
        'exact ms',
        'tailguard (sparse)',
        'prom-client default buckets',
        'GenAI advisory buckets',
      ],
      rows,
      notes: [
        `Worst tailguard error for values ≥ 10 µs: ${pct(worstOurs)} (target ≤ 0.1%). Bucket estimates use histogram_quantile's interpolation.`,
        'Data: lognormal body with a 1% Pareto tail (alpha 1.5) from 10× the median, integer µs; bimodal, integer µs; two fractional lognormals (sub-100 µs, past 1 h).',
      ],
    }
  },
}

export default bench

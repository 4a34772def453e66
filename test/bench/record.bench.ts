import { Histogram, Registry } from 'prom-client'
import { createRecorder } from '../../agent/index.js'
import type { SeriesLabels } from '../../collector/index.js'
import { nsPerOp } from './table.js'
import type { Bench } from './table.js'

// Cost of recording one phase observation: tailguard's recorder (per-call labels, and a bound series
// handle) against prom-client's Histogram.observe with the same labels (per-call labels, and a bound
// `.labels(...)` child). Same values, same label sets, same process, interleaved rounds.

const SERIES = 8
const VALUES = 1 << 14
const ITERATIONS = 1_000_000

function lognormalUs(n: number, seed: number): Float64Array {
  let a = seed
  const rand = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), a | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const out = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand())
    out[i] = Math.round(8000 * Math.exp(0.6 * z))
  }
  return out
}

const bench: Bench = {
  name: 'record',
  async run(log) {
    const values = lognormalUs(VALUES, 7)
    const seconds = values.map((v) => v / 1e6)
    const labelSets: SeriesLabels[] = Array.from({ length: SERIES }, (_, i) => ({
      service: 'chat',
      model: `llama-3-8b-${i % 4}`,
      version: String(1 + (i >> 2)),
      replica: `replica-${i}`,
      node: 'gpu-node-a',
    }))
    const promLabelSets = labelSets.map((l) => ({ ...l, phase: 'kernel' }))

    const recorder = createRecorder()
    const handles = labelSets.map((l) => recorder.series(l))
    const registry = new Registry()
    const hist = new Histogram({
      name: 'tailguard_bench_phase_seconds',
      help: 'bench',
      labelNames: ['service', 'model', 'version', 'replica', 'node', 'phase'],
      registers: [registry],
    })
    const children = promLabelSets.map((l) => hist.labels(l))

    const mask = VALUES - 1
    const cases: [string, (i: number) => void][] = [
      [
        'tailguard recordLatency(labels, …)',
        (i) => recorder.recordLatency(labelSets[i & 7]!, 'kernel', values[i & mask]!),
      ],
      ['tailguard series(labels).record(…)', (i) => handles[i & 7]!.record('kernel', values[i & mask]!)],
      ['prom-client observe(labels, …)', (i) => hist.observe(promLabelSets[i & 7]!, seconds[i & mask]!)],
      ['prom-client labels(…).observe(…)', (i) => children[i & 7]!.observe(seconds[i & mask]!)],
      [
        'tailguard recordLatency(new labels object, …)',
        (i) => {
          const l = labelSets[i & 7]!
          const fresh = {
            service: l.service,
            model: l.model,
            version: l.version,
            replica: l.replica,
            node: l.node,
          }
          recorder.recordLatency(fresh, 'kernel', values[i & mask]!)
        },
      ],
      [
        'prom-client observe(new labels object, …)',
        (i) => {
          const l = promLabelSets[i & 7]!
          const fresh = {
            service: l.service,
            model: l.model,
            version: l.version,
            replica: l.replica,
            node: l.node,
            phase: l.phase,
          }
          hist.observe(fresh, seconds[i & mask]!)
        },
      ],
    ]
    // Interleave: each case's best of several rounds, alternating, so load changes hit all of them.
    const best = new Map<string, number>(cases.map(([n]) => [n, Infinity]))
    for (let round = 0; round < 5; round++)
      for (const [name, fn] of cases) best.set(name, Math.min(best.get(name)!, nsPerOp(fn, ITERATIONS, 1)))
    for (const [name, ns] of best) log(`${name}: ${ns.toFixed(1)} ns`)
    recorder.drain()

    const ours = best.get(cases[0]![0])!
    const oursBound = best.get(cases[1]![0])!
    const prom = best.get(cases[2]![0])!
    const promBound = best.get(cases[3]![0])!
    const oursFresh = best.get(cases[4]![0])!
    const promFresh = best.get(cases[5]![0])!
    return {
      title: 'Recording one phase observation (ns per call, best of 5 interleaved rounds of 1M calls)',
      columns: [
        'way',
        'ns/op',
        'prom-client per-call ÷ this (same kind of labels)',
        'prom-client bound ÷ this',
      ],
      rows: [
        [cases[0]![0], ours, prom / ours, promBound / ours],
        [cases[1]![0], oursBound, prom / oursBound, promBound / oursBound],
        [cases[2]![0], prom, 1, promBound / prom],
        [cases[3]![0], promBound, prom / promBound, 1],
        [cases[4]![0], oursFresh, promFresh / oursFresh, promBound / oursFresh],
        [cases[5]![0], promFresh, prom / promFresh, promBound / promFresh],
      ],
      notes: [
        `${SERIES} label sets of 5 labels (+ phase for prom-client) used in turn, lognormal values; prom-client default buckets.`,
        'The "new labels object" rows build the labels object inside each call, as a caller without a cached object would; their ratio is against prom-client given a new object too.',
        'Target: tailguard ≥ 5× cheaper than prom-client for the same labels, per-call and bound.',
      ],
    }
  },
}

export default bench

import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createRecorder } from '../../agent/index.js'
import type { Metric } from '../../collector/index.js'
import { latenciesUs, rng } from '../helpers/reports.js'
import type { Bench, BenchResult } from './table.js'

const SIZES = [10, 1_000, 10_000]
const PHASES: readonly Metric[] = ['queue', 'prefill', 'decode', 'total']
const SAMPLES = 200
/** The recorder before #12 started each (series, phase) at 8,192 32-bit counts (values below 131 ms). */
const OLD_INITIAL_COUNTS = 8 * 1024

/**
 * Agent memory and drain (issue #12): bytes per (series, phase) and the event-loop block of one drain at
 * 10, 1,000 and 10,000 series (4 phases, 200 log-normal samples per series and phase per interval), each
 * size in a fresh process with `--expose-gc` so the heap is measured after a full collection. Baseline in
 * the same process: the pre-#12 layout (8,192 32-bit counts per (series, phase), grown for larger values),
 * filled with the same samples.
 */
const bench: Bench = {
  name: 'agent-memory',
  async run(log) {
    const rows: Array<Array<string | number>> = []
    for (const n of SIZES) {
      const out = execFileSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), String(n)], {
        encoding: 'utf8',
      })
      const r = JSON.parse(out) as {
        bytes: number
        rssBytes: number
        drainMs: number
        drainTotalMs: number
        syncDrainMs: number
        floorMs: number
        oldBytes: number
        reportBytes: number
      }
      const cells = n * PHASES.length
      log(
        `${n} series: ${(r.bytes / cells).toFixed(0)} B per (series, phase), drain block ${r.drainMs.toFixed(1)} ms (busy 8 ms slices: ${r.floorMs.toFixed(1)} ms; sync drain ${r.syncDrainMs.toFixed(1)} ms)`,
      )
      rows.push([
        n,
        r.rssBytes / 2 ** 20,
        r.bytes / cells,
        r.oldBytes / cells,
        r.oldBytes / r.bytes,
        r.drainMs,
        r.floorMs,
        r.drainTotalMs,
        r.syncDrainMs,
        r.syncDrainMs / r.drainMs,
        r.reportBytes / 2 ** 20,
        r.bytes / cells <= 4096 && r.drainMs <= 20 ? 'yes' : 'no',
      ])
    }
    const result: BenchResult = {
      title: `agent-memory: recorder memory and drain (${PHASES.length} phases, ${SAMPLES} samples per series and phase)`,
      columns: [
        'series',
        'RSS MB (process)',
        'bytes per (series, phase)',
        'pre-#12 layout bytes',
        'ratio (old ÷ new)',
        'drain block ms',
        'busy 8 ms slices block ms',
        'sliced drain total ms',
        'sync drain() block ms',
        'ratio (sync ÷ sliced block)',
        'report MB',
        'goal (≤ 4 KB, ≤ 20 ms)',
      ],
      rows,
      notes: [
        'bytes: heap + array buffers after a full GC, with the interval recorded, minus the same before the recorders were made (10 series: 100 recorders of 10, averaged).',
        'drain block: the longest time the event loop was blocked during drainSliced() (what the agent runs), seen by a setImmediate ticker; sliced drain total: start to end of it.',
        'busy 8 ms slices block: the same ticker while the process only spins in 8 ms slices for as long as the drain took (at least 200 ms): the floor this machine sets on the drain block at the time of the run.',
        'sync drain() block: the same interval drained by one synchronous drain() in a second recorder with the same samples (the pre-slicing path), as the baseline.',
      ],
    }
    return result
  },
}
export default bench

/** The child: one size, JSON on stdout. */
async function child(n: number): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc!
  const next = rng(n)
  const samples = Array.from({ length: 64 }, (_, i) => latenciesUs(next, SAMPLES, 2_000 * (1 + (i % 16))))
  const used = () => {
    gc()
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
  const labels = Array.from({ length: n }, (_, i) => ({
    service: `svc-${i % 10}`,
    model: 'm',
    version: '1',
    replica: `r${i}`,
    node: `n${i % 50}`,
  }))
  const filled = () => {
    const rec = createRecorder({ maxSeries: 2 * n + 10, maxSeriesPerService: 2 * n + 10 })
    labels.forEach((l, i) => {
      const h = rec.series(l)
      PHASES.forEach((p, k) => {
        for (const v of samples[(i + k) % samples.length]!) h.record(p, v)
      })
    })
    return rec
  }
  // A few series weigh less than the heap's noise: measure enough recorders to hold 1,000 series.
  const copies = Math.max(1, Math.ceil(1_000 / n))
  const before = used()
  const recs = Array.from({ length: copies }, filled)
  const bytes = (used() - before) / copies
  const rssBytes = process.memoryUsage().rss
  const rec = recs[0]!

  // The agent's drain: sliced, with a ticker measuring the longest stretch the event loop was blocked.
  const blockOf = async (work: () => Promise<unknown>): Promise<number> => {
    let last = performance.now()
    let maxGap = 0
    let running = true
    const tick = () => {
      const t = performance.now()
      maxGap = Math.max(maxGap, t - last)
      last = t
      if (running) setImmediate(tick)
    }
    setImmediate(tick)
    last = performance.now()
    await work()
    running = false
    await new Promise((r) => setImmediate(r))
    return maxGap
  }
  let drained: Awaited<ReturnType<typeof rec.drainSliced>> | undefined
  const t0 = performance.now()
  const drainMs = await blockOf(async () => {
    drained = await rec.drainSliced()
  })
  const drainTotalMs = performance.now() - t0
  const reportBytes = JSON.stringify(drained!.series).length

  // Baseline: the floor the machine sets on that block now: nothing but 8 ms slices of spinning, as long.
  const floorMs = await blockOf(async () => {
    const end = performance.now() + Math.max(200, drainTotalMs)
    while (performance.now() < end) {
      const s = performance.now()
      while (performance.now() - s < 8);
      await new Promise((r) => setImmediate(r))
    }
  })

  // Baseline: one synchronous drain() of the same samples (a second recorder).
  const other = recs[1] ?? filled()
  const t1 = performance.now()
  other.drain()
  const syncDrainMs = performance.now() - t1

  // Baseline: the pre-#12 dense layout with the same samples.
  const before2 = used()
  const old: Uint32Array[] = []
  labels.forEach((_, i) =>
    PHASES.forEach((__, k) => {
      let counts = new Uint32Array(OLD_INITIAL_COUNTS)
      for (const v of samples[(i + k) % samples.length]!) {
        const u = Math.round(v)
        const b = Math.max(0, 31 - Math.clz32(u) - 10)
        const idx = b * 1024 + (u >>> b)
        if (idx >= counts.length) {
          let size = counts.length
          while (size <= idx) size *= 2
          const grown = new Uint32Array(size)
          grown.set(counts)
          counts = grown
        }
        counts[idx]!++
      }
      old.push(counts)
    }),
  )
  const oldBytes = used() - before2
  process.stdout.write(
    JSON.stringify({
      bytes,
      rssBytes,
      drainMs,
      drainTotalMs,
      syncDrainMs,
      floorMs,
      oldBytes,
      reportBytes,
      kept: old.length + drained!.series.length + recs.length,
    }),
  )
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] !== undefined)
  void child(Number(process.argv[2]))

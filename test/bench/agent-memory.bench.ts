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
        oldBytes: number
        reportBytes: number
      }
      const cells = n * PHASES.length
      log(
        `${n} series: ${(r.bytes / cells).toFixed(0)} B per (series, phase), drain ${r.drainMs.toFixed(1)} ms`,
      )
      rows.push([
        n,
        r.rssBytes / 2 ** 20,
        r.bytes / cells,
        r.oldBytes / cells,
        r.oldBytes / r.bytes,
        r.drainMs,
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
        'report MB',
        'goal (≤ 4 KB, ≤ 20 ms)',
      ],
      rows,
      notes: [
        'bytes: heap + array buffers after a full GC, with the interval recorded, minus the same before the recorder was made.',
        'drain block: one synchronous drain() (sort and encode every series), the time the event loop is blocked.',
      ],
    }
    return result
  },
}
export default bench

/** The child: one size, JSON on stdout. */
function child(n: number): void {
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
  const before = used()
  const rec = createRecorder({ maxSeries: 2 * n + 10, maxSeriesPerService: 2 * n + 10 })
  labels.forEach((l, i) => {
    const h = rec.series(l)
    PHASES.forEach((p, k) => {
      for (const v of samples[(i + k) % samples.length]!) h.record(p, v)
    })
  })
  const bytes = used() - before
  const rssBytes = process.memoryUsage().rss
  const t0 = performance.now()
  const drained = rec.drain()
  const drainMs = performance.now() - t0
  const reportBytes = JSON.stringify(drained.series).length
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
      oldBytes,
      reportBytes,
      kept: old.length + drained.series.length,
    }),
  )
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] !== undefined)
  child(Number(process.argv[2]))

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { GPU_FIELDS, createStore } from '../../collector/index.js'
import type { GpuReportItem, IntervalReport } from '../../collector/index.js'
import { makeReport } from '../helpers/reports.js'
import type { Bench, BenchResult } from './table.js'

const GPUS = 8
const REPORTS = 360 // one hour of 10 s reports
const T0 = Date.UTC(2026, 10, 1, 0, 0, 0)

/** A node's report: one request series (total + queue), and 8 GPUs with every field and 2 processes each. */
function report(seq: number, withGpus: boolean): IntervalReport {
  const base = makeReport({
    seq,
    startMs: T0 + (seq - 1) * 10_000,
    series: [{ samples: { total: [1000, 2000, 3000, 40_000], queue: [100, 200] }, ok: 4 }],
  })
  if (!withGpus) return base
  const stat = (v: number) => ({ min: v * 0.9, mean: v, max: v * 1.1, last: v })
  const gpus: GpuReportItem[] = Array.from({ length: GPUS }, (_, i) => ({
    source: 'nvml',
    uuid: `GPU-bench-${i}`,
    index: i,
    name: 'NVIDIA H100 80GB HBM3',
    samples: 10,
    fields: Object.fromEntries(GPU_FIELDS.map((f, k) => [f, stat(((seq + i + k) % 90) + 5)])),
    processes: [
      {
        pid: 1000 + i,
        usedMemoryBytes: stat(20e9),
        smUtilPct: stat(50),
        replica: { service: 'chat', model: 'llama', version: '3', replica: `r${i}` },
      },
      { pid: 2000 + i, usedMemoryBytes: stat(1e9), smUtilPct: stat(2) },
    ],
  }))
  return { ...base, gpus }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/**
 * Cost of storing GPU telemetry: SQLite ingest of reports with 8 GPUs (every field, 2 processes each) against the
 * same reports without GPUs (baseline, same run), and one hour of a GPU series before and after compaction.
 */
const bench: Bench = {
  name: 'ingest-gpu',
  async run(log) {
    const dir = mkdtempSync(join(tmpdir(), 'tg-bench-gpu-'))
    try {
      const plain = await createStore({ url: join(dir, 'plain.db') })
      const gpu = await createStore({ url: join(dir, 'gpu.db') })
      const msPlain: number[] = []
      const msGpu: number[] = []
      // Interleaved, so both see the same machine load.
      for (let seq = 1; seq <= REPORTS; seq++) {
        let t = performance.now()
        await plain.ingest(report(seq, false), T0 + seq * 10_000)
        msPlain.push(performance.now() - t)
        t = performance.now()
        await gpu.ingest(report(seq, true), T0 + seq * 10_000)
        msGpu.push(performance.now() - t)
      }
      log(`ingested ${REPORTS} reports per store`)
      const range = { fromMs: T0, toMs: T0 + REPORTS * 10_000 }
      const query = async () => {
        const times: number[] = []
        for (let i = 0; i < 7; i++) {
          const t = performance.now()
          const s = await gpu.gpuSeries({}, range, 'gpuUtilPct', 60_000)
          times.push(performance.now() - t)
          if (s.length !== GPUS) throw new Error(`expected ${GPUS} series, got ${s.length}`)
        }
        return { best: Math.min(...times), median: median(times) }
      }
      const before = await query()
      await gpu.compact(T0 + REPORTS * 10_000 + 3600_000)
      const after = await query()
      await plain.close()
      await gpu.close()
      const ingest: BenchResult = {
        title: `SQLite ingest, ${REPORTS} reports, ${GPUS} GPUs × ${GPU_FIELDS.length} fields + 2 processes each`,
        columns: ['reports', 'median ms/report', 'reports/s (from median)', 'ratio vs no GPUs'],
        rows: [
          ['no GPUs (baseline)', median(msPlain), 1000 / median(msPlain), 1],
          [`${GPUS} GPUs`, median(msGpu), 1000 / median(msGpu), median(msGpu) / median(msPlain)],
        ],
      }
      const q: BenchResult = {
        title: `GPU series, 1 hour of 10 s data, ${GPUS} GPUs, step 1 min (best / median of 7)`,
        columns: ['rows read from', 'best ms', 'median ms', 'ratio (median vs 10 s rows)'],
        rows: [
          ['10 s rows (before compaction)', before.best, before.median, 1],
          ['1 min rollups (after compaction)', after.best, after.median, after.median / before.median],
        ],
      }
      return [ingest, q]
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
}
export default bench

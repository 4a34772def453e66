import { spawnSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Bench, BenchResult } from './table.js'

// `tailguard sim` on trace files far larger than memory would hold as one string (issue #12): a generated
// 20M-row trace (never committed: it lives in a temp dir for the run) replays with peak RSS ≤ 500 MB. The
// baseline, measured in the same run on a 2M-row file: the former in-memory path (read the whole file as one
// string, parse into arrays).

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..', '..')
const cli = join(root, 'bin', 'tailguard.js')
const controller = join(root, 'controller', 'index.js')

/** Writes `rows` Azure-format rows at `rps` (seeded, jittered), in 4 MiB writes. */
function generate(path: string, rows: number, rps: number): void {
  const fd = openSync(path, 'w')
  let buf = 'TIMESTAMP,ContextTokens,GeneratedTokens\n'
  const t0 = Date.UTC(2023, 10, 16, 18)
  let x = 12345
  for (let i = 0; i < rows; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    const ms = t0 + (i * 1000) / rps + (x % 100) / 1000
    const d = new Date(ms)
    const iso = d.toISOString()
    buf += `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${String(Math.floor((ms % 1000) * 10000)).padStart(7, '0')},${200 + (x % 2000)},${1 + (x % 400)}\n`
    if (buf.length > 4 << 20) {
      writeSync(fd, buf)
      buf = ''
    }
  }
  writeSync(fd, buf)
  closeSync(fd)
}

/** Runs a node command line and returns wall ms and peak RSS (MB, from GNU time). */
function measure(args: string[]): { ms: number; rssMb: number; out: string } {
  const t0 = performance.now()
  const r = spawnSync('/usr/bin/time', ['-f', 'RSS_KB=%M', process.execPath, ...args], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  })
  const ms = performance.now() - t0
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed: ${r.stderr.slice(-2000)}`)
  const kb = Number(/RSS_KB=(\d+)/.exec(r.stderr)?.[1] ?? NaN)
  return { ms, rssMb: kb / 1024, out: r.stdout }
}

const bench: Bench = {
  name: 'trace-stream',
  async run(log) {
    const dir = mkdtempSync(join(tmpdir(), 'tg-trace-bench-'))
    try {
      const small = join(dir, 'trace-2m.csv')
      const big = join(dir, 'trace-20m.csv')
      log('generating 2M- and 20M-row traces (5,000 req/s) in a temp dir …')
      generate(small, 2_000_000, 5000)
      generate(big, 20_000_000, 5000)
      const inMemory = `const { readFileSync } = await import('node:fs'); const { parseAzureTrace } = await import(${JSON.stringify(controller)}); const r = parseAzureTrace(readFileSync(${JSON.stringify(small)}, 'utf8')); if (!r.ok) process.exit(1)`
      const streamed = `const { scanTraceFile, createArrivals } = await import(${JSON.stringify(controller)}); const s = scanTraceFile(${JSON.stringify(small)}); if (!s.ok) process.exit(1); const a = createArrivals({ kind: 'trace-file', path: ${JSON.stringify(small)}, stats: s.stats }, 1); const d = { timeMs: 0, inputTokens: 0, outputTokens: 0 }; while (a.next(d));`
      log('2M rows: in-memory parse (the former path) …')
      const base = measure(['--input-type=module', '-e', inMemory])
      log('2M rows: streamed scan + replay …')
      const stream = measure(['--input-type=module', '-e', streamed])
      const sim = ['sim', '--model', 'batch', '--policy', 'static', '--no-progress', '--seed', '1']
      log('2M rows: tailguard sim …')
      const sim2 = measure([cli, ...sim, '--trace', small])
      log('20M rows: tailguard sim …')
      const sim20 = measure([cli, ...sim, '--trace', big])
      const rows: Array<Array<string | number>> = [
        ['2M rows: read + parse in memory (former path)', 2e6, base.ms, base.rssMb, 1, '—'],
        ['2M rows: streamed scan + replay', 2e6, stream.ms, stream.rssMb, stream.rssMb / base.rssMb, '—'],
        [
          '2M rows: tailguard sim (batch, static)',
          2e6,
          sim2.ms,
          sim2.rssMb,
          sim2.rssMb / base.rssMb,
          sim2.rssMb <= 500 ? 'yes' : 'NO',
        ],
        [
          '20M rows: tailguard sim (batch, static)',
          2e7,
          sim20.ms,
          sim20.rssMb,
          sim20.rssMb / base.rssMb,
          sim20.rssMb <= 500 ? 'yes' : 'NO',
        ],
      ]
      const result: BenchResult = {
        title: 'Trace files: streamed replay (peak RSS by GNU time)',
        columns: ['run', 'rows', 'wall ms', 'peak RSS MB', 'RSS / in-memory 2M', 'RSS ≤ 500 MB'],
        rows,
        notes: [
          'Baseline: the former path (whole file as one string, parsed into arrays) on the 2M-row file, same run.',
          'Goal (issue #12): a 20M-row trace completes with peak RSS ≤ 500 MB; memory does not grow with the trace.',
          `Traces generated at 5,000 req/s into ${tmpdir()} and deleted after the run.`,
        ],
      }
      return result
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
}

export default bench

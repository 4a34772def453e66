/**
 * Benchmarks (`npm run bench`): each `test/bench/<name>.bench.ts` exports `default` as a {@link Bench}.
 * The runner prints each result as a table. Every bench compares against a baseline measured in the same
 * run and reports a ratio, because the machine is shared and noisy.
 */
export interface BenchResult {
  readonly title: string
  readonly columns: readonly string[]
  readonly rows: ReadonlyArray<ReadonlyArray<string | number>>
  /** Targets and how to read the ratios. */
  readonly notes?: readonly string[]
}

export interface Bench {
  readonly name: string
  run(log: (line: string) => void): Promise<BenchResult | BenchResult[]>
}

/** Formats a result as an aligned text table (also valid Markdown). */
export function formatTable(r: BenchResult): string {
  const cells = [
    r.columns.map(String),
    ...r.rows.map((row) => row.map((c) => (typeof c === 'number' ? fmt(c) : c))),
  ]
  const widths = r.columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)))
  const line = (row: readonly string[]) =>
    '| ' + row.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ') + ' |'
  const out = [
    `### ${r.title}`,
    '',
    line(cells[0]!),
    '| ' + widths.map((w) => '-'.repeat(w)).join(' | ') + ' |',
  ]
  for (const row of cells.slice(1)) out.push(line(row))
  for (const n of r.notes ?? []) out.push('', n)
  return out.join('\n')
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n)
  if (Number.isInteger(n)) return n.toLocaleString('en-US')
  const abs = Math.abs(n)
  return abs >= 100 ? n.toFixed(0) : abs >= 1 ? n.toFixed(2) : n.toPrecision(3)
}

/** Times `fn` over `iterations` calls, best of `rounds`, in ns per call. */
export function nsPerOp(fn: (i: number) => void, iterations: number, rounds = 5): number {
  let best = Infinity
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) fn(i)
    const ns = Number(process.hrtime.bigint() - t0) / iterations
    if (ns < best) best = ns
  }
  return best
}

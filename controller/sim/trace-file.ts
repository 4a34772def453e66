import { closeSync, openSync, readSync } from 'node:fs'
import { parseTraceRow, spanProblem, traceColumns } from './trace.js'
import type { TraceColumns, TraceError, TraceRow } from './trace.js'

/**
 * Streaming reader for Azure LLM trace CSV files: constant memory in the trace's length (a 1 MiB read buffer
 * and a bounded reorder window), so traces of any size replay. A first pass ({@link scanTraceFile}) validates
 * every line and gathers what the simulator needs up front (count, duration, busiest minute, mean tokens); each
 * run then streams the file again ({@link TraceFileArrivals}).
 */

/** Rows may be out of order by at most this many rows (a bounded min-heap puts them back in order). */
export const TRACE_REORDER_ROWS = 10_000
const CHUNK_BYTES = 1 << 20

/** What the first pass learns about a trace file. */
export interface TraceFileStats {
  readonly requests: number
  /** Absolute time of the first request, ms since the epoch. */
  readonly startEpochMs: number
  /** Time from the first to the last request, ms. */
  readonly durationMs: number
  /** Requests in the busiest minute (from the first request, unscaled). */
  readonly peakPerMinute: number
  readonly meanInputTokens: number
  readonly meanOutputTokens: number
}

/** Thrown by a reader that meets a bad line (the first pass reports it as a value instead). */
export class TraceFileError extends Error {
  constructor(readonly error: TraceError) {
    super(`line ${error.line}: ${error.message}`)
  }
}

/** Reads lines from a file descriptor, a chunk at a time. */
class LineReader {
  private readonly buf = Buffer.allocUnsafe(CHUNK_BYTES)
  private carry = ''
  private lines: string[] = []
  private at = 0
  private eof = false
  line = 0
  constructor(private readonly fd: number) {}
  /** The next line without its line break, or undefined at the end of the file. */
  next(): string | undefined {
    for (;;) {
      if (this.at < this.lines.length) {
        this.line++
        return this.lines[this.at++]
      }
      if (this.eof) {
        if (this.carry === '') return undefined
        const last = this.carry
        this.carry = ''
        this.line++
        return last
      }
      const n = readSync(this.fd, this.buf, 0, CHUNK_BYTES, null)
      if (n === 0) {
        this.eof = true
        continue
      }
      // Cut at the last newline so that no multi-byte character or line is split.
      const end = this.buf.lastIndexOf(10, n - 1)
      if (end < 0) {
        this.carry += this.buf.toString('utf8', 0, n)
        continue
      }
      const text = this.carry + this.buf.toString('utf8', 0, end)
      this.carry = this.buf.toString('utf8', end + 1, n)
      this.lines = text.split('\n')
      this.at = 0
    }
  }
}

/** A min-heap of rows by time (ties by line number), of bounded size. */
class RowHeap {
  private t = new Float64Array(1024)
  private i = new Int32Array(1024)
  private o = new Int32Array(1024)
  private l = new Float64Array(1024)
  size = 0
  push(time: number, input: number, output: number, line: number): void {
    if (this.size === this.t.length) this.grow()
    let k = this.size++
    while (k > 0) {
      const parent = (k - 1) >> 1
      if (!this.less(time, line, this.t[parent]!, this.l[parent]!)) break
      this.set(k, this.t[parent]!, this.i[parent]!, this.o[parent]!, this.l[parent]!)
      k = parent
    }
    this.set(k, time, input, output, line)
  }
  /** Removes the earliest row into `row`; returns its line number. */
  pop(row: TraceRow): number {
    row.timeMs = this.t[0]!
    row.inputTokens = this.i[0]!
    row.outputTokens = this.o[0]!
    const line = this.l[0]!
    const n = --this.size
    const time = this.t[n]!
    const input = this.i[n]!
    const output = this.o[n]!
    const last = this.l[n]!
    let k = 0
    for (;;) {
      let c = 2 * k + 1
      if (c >= n) break
      if (c + 1 < n && this.less(this.t[c + 1]!, this.l[c + 1]!, this.t[c]!, this.l[c]!)) c++
      if (!this.less(this.t[c]!, this.l[c]!, time, last)) break
      this.set(k, this.t[c]!, this.i[c]!, this.o[c]!, this.l[c]!)
      k = c
    }
    if (n > 0) this.set(k, time, input, output, last)
    return line
  }
  private less(t1: number, l1: number, t2: number, l2: number): boolean {
    return t1 < t2 || (t1 === t2 && l1 < l2)
  }
  private set(k: number, t: number, i: number, o: number, l: number): void {
    this.t[k] = t
    this.i[k] = i
    this.o[k] = o
    this.l[k] = l
  }
  private grow(): void {
    const n = this.t.length * 2
    const t = new Float64Array(n)
    t.set(this.t)
    const i = new Int32Array(n)
    i.set(this.i)
    const o = new Int32Array(n)
    o.set(this.o)
    const l = new Float64Array(n)
    l.set(this.l)
    this.t = t
    this.i = i
    this.o = o
    this.l = l
  }
}

/**
 * Rows of a trace file in time order. Rows out of order by up to {@link TRACE_REORDER_ROWS} rows are put back in
 * order; further disorder, and any malformed line, throws a {@link TraceFileError} naming the line.
 *
 * @example const r = new TraceFileReader('trace.csv'); const row = { timeMs: 0, inputTokens: 0, outputTokens: 0 }; while (r.next(row)) …; r.close()
 */
export class TraceFileReader {
  private readonly fd: number
  private readonly lines: LineReader
  private readonly cols: TraceColumns
  private readonly heap = new RowHeap()
  private readonly row: TraceRow = { timeMs: 0, inputTokens: 0, outputTokens: 0 }
  private lastOut = -Infinity
  private firstOut = NaN
  private firstLine = 0
  private closed = false

  constructor(path: string) {
    this.fd = openSync(path, 'r')
    this.lines = new LineReader(this.fd)
    const cols = traceColumns(this.lines.next() ?? '')
    if ('line' in cols) {
      this.close()
      throw new TraceFileError(cols)
    }
    this.cols = cols
  }

  /** Fills `out` with the next row in time order; false at the end (the file is then closed). */
  next(out: TraceRow): boolean {
    while (this.heap.size <= TRACE_REORDER_ROWS) {
      const raw = this.lines.next()
      if (raw === undefined) break
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
      if (line.trim() === '') continue
      const error = parseTraceRow(line, this.cols, this.row)
      if (error !== undefined) {
        this.close()
        throw new TraceFileError({ line: this.lines.line, message: error })
      }
      this.heap.push(this.row.timeMs, this.row.inputTokens, this.row.outputTokens, this.lines.line)
    }
    if (this.heap.size === 0) {
      this.close()
      return false
    }
    const line = this.heap.pop(out)
    if (out.timeMs < this.lastOut) {
      this.close()
      throw new TraceFileError({
        line,
        message: `out of time order by more than the ${TRACE_REORDER_ROWS.toLocaleString('en-US')}-row reorder window: sort the file by TIMESTAMP`,
      })
    }
    if (Number.isNaN(this.firstOut)) {
      this.firstOut = out.timeMs
      this.firstLine = line
    }
    const tooLong = spanProblem(out.timeMs - this.firstOut, this.firstOut, this.firstLine)
    if (tooLong !== undefined) {
      this.close()
      throw new TraceFileError({ line, message: tooLong })
    }
    this.lastOut = out.timeMs
    return true
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    closeSync(this.fd)
  }
}

/**
 * First pass over a trace file: validates every line (reporting the first bad one as a value, never throwing)
 * and gathers the numbers a run needs before it starts. Constant memory in the file's length.
 *
 * @example const r = scanTraceFile('trace.csv'); if (r.ok) r.stats.requests
 */
export function scanTraceFile(
  path: string,
): { ok: true; stats: TraceFileStats } | { ok: false; error: TraceError } {
  let reader: TraceFileReader
  try {
    reader = new TraceFileReader(path)
  } catch (err) {
    if (err instanceof TraceFileError) return { ok: false, error: err.error }
    throw err
  }
  const row: TraceRow = { timeMs: 0, inputTokens: 0, outputTokens: 0 }
  let n = 0
  let start = 0
  let last = 0
  let minute = -1
  let inMinute = 0
  let peak = 0
  let sumIn = 0
  let sumOut = 0
  try {
    while (reader.next(row)) {
      if (n === 0) start = row.timeMs
      n++
      last = row.timeMs
      sumIn += row.inputTokens
      sumOut += row.outputTokens
      const m = Math.floor((row.timeMs - start) / 60_000)
      if (m !== minute) {
        minute = m
        inMinute = 0
      }
      if (++inMinute > peak) peak = inMinute
    }
  } catch (err) {
    if (err instanceof TraceFileError) return { ok: false, error: err.error }
    throw err
  } finally {
    reader.close()
  }
  if (n === 0) return { ok: false, error: { line: 2, message: 'the trace holds no requests' } }
  return {
    ok: true,
    stats: {
      requests: n,
      startEpochMs: start,
      durationMs: last - start,
      peakPerMinute: peak,
      meanInputTokens: sumIn / n,
      meanOutputTokens: sumOut / n,
    },
  }
}

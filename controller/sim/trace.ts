import { join } from 'node:path'
import { packageRoot } from '../../collector/index.js'
/**
 * Reader for the Azure LLM inference trace CSV format (Azure Public Dataset, "Azure LLM inference trace
 * 2023", CC-BY 4.0; Patel et al., "Splitwise", ISCA 2024): a header `TIMESTAMP,ContextTokens,GeneratedTokens`
 * and one request per line, e.g. `2023-11-16 18:15:46.6805900,374,44`.
 */

/** A parsed trace: arrival offsets from the first request (ms) and token counts, in arrival order. */
export interface Trace {
  readonly arrivalMs: Float64Array
  readonly inputTokens: Int32Array
  readonly outputTokens: Int32Array
  /** Absolute time of the first request, ms since the epoch. */
  readonly startEpochMs: number
  readonly durationMs: number
}

/** Where parsing failed: the 1-based line number and what was wrong with it. */
export interface TraceError {
  readonly line: number
  readonly message: string
}

const TIME_RE = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?Z?$/

/**
 * Parses an Azure LLM trace CSV. Columns are found by header name (case-insensitive); lines may end in CRLF;
 * blank lines are skipped. Unsorted input is sorted by arrival. Never throws: returns the first bad line.
 *
 * @example
 * ```ts
 * const r = parseAzureTrace('TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n')
 * if (r.ok) r.trace.arrivalMs.length // 1
 * ```
 */
export function parseAzureTrace(text: string): { ok: true; trace: Trace } | { ok: false; error: TraceError } {
  const lines = text.split('\n')
  const cols = traceColumns(lines[0] ?? '')
  if ('line' in cols) return { ok: false, error: cols }
  const times: number[] = []
  const ins: number[] = []
  const outs: number[] = []
  const lineOf: number[] = []
  const row: TraceRow = { timeMs: 0, inputTokens: 0, outputTokens: 0 }
  for (let i = 1; i < lines.length; i++) {
    const raw = lines[i]!.replace(/\r$/, '')
    if (raw.trim() === '') continue
    const error = parseTraceRow(raw, cols, row)
    if (error !== undefined) return { ok: false, error: { line: i + 1, message: error } }
    times.push(row.timeMs)
    ins.push(row.inputTokens)
    outs.push(row.outputTokens)
    lineOf.push(i + 1)
  }
  if (times.length === 0) return { ok: false, error: { line: 2, message: 'the trace holds no requests' } }
  const order = times.map((_, i) => i)
  let sorted = true
  for (let i = 1; i < times.length; i++) if (times[i]! < times[i - 1]!) sorted = false
  if (!sorted) order.sort((a, b) => times[a]! - times[b]! || a - b)
  const start = times[order[0]!]!
  const n = times.length
  const lastRow = order[n - 1]!
  const tooLong = spanProblem(times[lastRow]! - start, start, lineOf[order[0]!]!)
  if (tooLong !== undefined) return { ok: false, error: { line: lineOf[lastRow]!, message: tooLong } }
  const arrivalMs = new Float64Array(n)
  const inputTokens = new Int32Array(n)
  const outputTokens = new Int32Array(n)
  for (let k = 0; k < n; k++) {
    const i = order[k]!
    arrivalMs[k] = times[i]! - start
    inputTokens[k] = ins[i]!
    outputTokens[k] = outs[i]!
  }
  return {
    ok: true,
    trace: { arrivalMs, inputTokens, outputTokens, startEpochMs: start, durationMs: arrivalMs[n - 1]! },
  }
}

/** Where the three columns are in a trace's header (0-based), and how many fields a row has. */
export interface TraceColumns {
  readonly time: number
  readonly input: number
  readonly output: number
  readonly count: number
}

/** One parsed row: absolute time (ms since the epoch) and token counts. */
export interface TraceRow {
  timeMs: number
  inputTokens: number
  outputTokens: number
}

/**
 * Finds the TIMESTAMP, ContextTokens and GeneratedTokens columns in a header line (case-insensitive, BOM and
 * CR tolerated), or the error for line 1.
 *
 * @example traceColumns('TIMESTAMP,ContextTokens,GeneratedTokens') // { time: 0, input: 1, output: 2, count: 3 }
 */
export function traceColumns(headerLine: string): TraceColumns | TraceError {
  const header = headerLine.replace(/\r$/, '').replace(/^\uFEFF/, '')
  const cols = header.split(',').map((c) => c.trim().toLowerCase())
  const time = cols.indexOf('timestamp')
  const input = cols.indexOf('contexttokens')
  const output = cols.indexOf('generatedtokens')
  if (time < 0 || input < 0 || output < 0)
    return {
      line: 1,
      message: `expected header TIMESTAMP,ContextTokens,GeneratedTokens, got "${header.slice(0, 80)}"`,
    }
  return { time, input, output, count: cols.length }
}

/**
 * Parses one data line (no line break) into `row`; returns what is wrong with it, or undefined.
 *
 * @example parseTraceRow('2023-11-16 18:15:46.68,374,44', cols, row) // undefined, row.inputTokens === 374
 */
export function parseTraceRow(raw: string, cols: TraceColumns, row: TraceRow): string | undefined {
  const f = raw.split(',')
  if (f.length !== cols.count) return `expected ${cols.count} fields, got ${f.length}: "${raw.slice(0, 80)}"`
  const t = parseTimestamp(f[cols.time]!.trim())
  if (t === undefined) return `TIMESTAMP: not a time like 2023-11-16 18:15:46.68: "${f[cols.time]}"`
  const ctx = Number(f[cols.input]!.trim())
  const gen = Number(f[cols.output]!.trim())
  if (!Number.isInteger(ctx) || ctx < 0)
    return `ContextTokens: not a non-negative integer: "${f[cols.input]}"`
  if (!Number.isInteger(gen) || gen < 0)
    return `GeneratedTokens: not a non-negative integer: "${f[cols.output]}"`
  row.timeMs = t
  row.inputTokens = ctx
  row.outputTokens = gen
  return undefined
}

/**
 * The longest a simulated run may span (90 days): a trace row whose year is mistyped would otherwise have the
 * simulator step through decades.
 */
export const MAX_TRACE_SPAN_MS = 90 * 86_400_000

/** What is wrong with a row `spanMs` after the first one of a trace, or undefined. */
export function spanProblem(spanMs: number, firstMs: number, firstLine: number): string | undefined {
  if (spanMs <= MAX_TRACE_SPAN_MS) return undefined
  return `TIMESTAMP: ${(spanMs / 86_400_000).toFixed(0)} days after the first row (${new Date(firstMs).toISOString()}, line ${firstLine}); a trace may span at most ${MAX_TRACE_SPAN_MS / 86_400_000} days: is a year or month mistyped?`
}

const SECONDS_RE = /^\d{2}(?:\.\d+)?Z?$/
let cachedPrefix = ''
let cachedBaseMs = 0

function parseTimestamp(s: string): number | undefined {
  // Fast path for rows in the same minute as the last one: only the seconds change.
  if (cachedPrefix !== '' && s.startsWith(cachedPrefix) && s.charCodeAt(16) === 58) {
    const rest = s.slice(17)
    if (SECONDS_RE.test(rest)) {
      const sec = Number(rest.replace(/Z$/, ''))
      if (sec < 60) return cachedBaseMs + sec * 1000
    }
  }
  const m = TIME_RE.exec(s)
  if (!m) return undefined
  const frac = m[7] ? Number('0.' + m[7]) * 1000 : 0
  const [month, day, hour, minute, second] = [+m[2]!, +m[3]!, +m[4]!, +m[5]!, +m[6]!]
  // Date.UTC rolls an impossible date over (month 13, 31 April, 25:00): such a row is refused instead.
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined
  const base = Date.UTC(+m[1]!, month - 1, day, hour, minute, 0)
  if (new Date(base).getUTCDate() !== day) return undefined
  const ms = base + second * 1000 + frac
  if (!Number.isFinite(ms)) return undefined
  cachedPrefix = s.slice(0, 16)
  cachedBaseMs = base
  return ms
}

/**
 * The attribution that must travel with anything derived from the Azure trace.
 *
 * @example io.out(`data: ${AZURE_TRACE_ATTRIBUTION}`)
 */
export const AZURE_TRACE_ATTRIBUTION =
  'Azure LLM inference trace 2023 (Azure Public Dataset, CC-BY 4.0); Patel et al., "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024.'

/** The trace the demo and the examples use by default. */
export const DEFAULT_TRACE_FILE = 'azure-llm-2023-conv.csv'

/**
 * Where the package keeps the traces it ships (`controller/sim/traces/`, with their attribution in the
 * README.md beside them), resolved from the package root so it works from a clone and from the compiled
 * `dist/`. The default trace is the Azure conversation trace that `tailguard sim` and the demo replay.
 *
 * @example shippedTracePath() // '<package root>/controller/sim/traces/azure-llm-2023-conv.csv'
 */
export function shippedTracePath(file: string = DEFAULT_TRACE_FILE): string {
  return join(packageRoot(), 'controller', 'sim', 'traces', file)
}

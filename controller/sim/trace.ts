import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
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
  const header = (lines[0] ?? '').replace(/\r$/, '').replace(/^\uFEFF/, '')
  const cols = header.split(',').map((c) => c.trim().toLowerCase())
  const ti = cols.indexOf('timestamp')
  const ci = cols.indexOf('contexttokens')
  const gi = cols.indexOf('generatedtokens')
  if (ti < 0 || ci < 0 || gi < 0)
    return {
      ok: false,
      error: {
        line: 1,
        message: `expected header TIMESTAMP,ContextTokens,GeneratedTokens, got "${header.slice(0, 80)}"`,
      },
    }
  const times: number[] = []
  const ins: number[] = []
  const outs: number[] = []
  for (let i = 1; i < lines.length; i++) {
    const raw = lines[i]!.replace(/\r$/, '')
    if (raw.trim() === '') continue
    const f = raw.split(',')
    if (f.length !== cols.length)
      return {
        ok: false,
        error: {
          line: i + 1,
          message: `expected ${cols.length} fields, got ${f.length}: "${raw.slice(0, 80)}"`,
        },
      }
    const t = parseTimestamp(f[ti]!.trim())
    if (t === undefined)
      return {
        ok: false,
        error: { line: i + 1, message: `TIMESTAMP: not a time like 2023-11-16 18:15:46.68: "${f[ti]}"` },
      }
    const ctx = Number(f[ci]!.trim())
    const gen = Number(f[gi]!.trim())
    if (!Number.isInteger(ctx) || ctx < 0)
      return {
        ok: false,
        error: { line: i + 1, message: `ContextTokens: not a non-negative integer: "${f[ci]}"` },
      }
    if (!Number.isInteger(gen) || gen < 0)
      return {
        ok: false,
        error: { line: i + 1, message: `GeneratedTokens: not a non-negative integer: "${f[gi]}"` },
      }
    times.push(t)
    ins.push(ctx)
    outs.push(gen)
  }
  if (times.length === 0) return { ok: false, error: { line: 2, message: 'the trace holds no requests' } }
  const order = times.map((_, i) => i)
  let sorted = true
  for (let i = 1; i < times.length; i++) if (times[i]! < times[i - 1]!) sorted = false
  if (!sorted) order.sort((a, b) => times[a]! - times[b]! || a - b)
  const start = times[order[0]!]!
  const n = times.length
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

function parseTimestamp(s: string): number | undefined {
  const m = TIME_RE.exec(s)
  if (!m) return undefined
  const frac = m[7] ? Number('0.' + m[7]) * 1000 : 0
  const ms = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) + frac
  return Number.isFinite(ms) ? ms : undefined
}

/**
 * The attribution that must travel with anything derived from the Azure trace.
 *
 * @example io.out(`data: ${AZURE_TRACE_ATTRIBUTION}`)
 */
export const AZURE_TRACE_ATTRIBUTION =
  'Azure LLM inference trace 2023 (Azure Public Dataset, CC-BY 4.0); Patel et al., "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024.'

/**
 * Finds `shared/traces/<file>` in a folder above this package (a clean clone has `shared/` beside the repo),
 * from the sources or from the compiled dist/. Returns undefined when there is none.
 *
 * @example findSharedTrace('azure-llm-2023-conv.csv') // '/work/shared/traces/azure-llm-2023-conv.csv'
 */
export function findSharedTrace(file: string): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 6; i++) {
    const p = join(dir, 'shared', 'traces', file)
    if (existsSync(p)) return p
    const up = dirname(dir)
    if (up === dir) break
    dir = up
  }
  return undefined
}

/** The trace the demo and the examples use by default. */
export const DEFAULT_TRACE_FILE = 'azure-llm-2023-conv.csv'

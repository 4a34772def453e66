/**
 * Log lines for people: pino writes one JSON object per line; on a terminal this turns each into a sentence,
 * `12:03:07.412 WARN  GPU source nvml unavailable: … reason=…`, with the remaining fields as key=value.
 */

/** Where a formatted line goes (process.stderr, or a test's buffer). */
export interface LineSink {
  write(text: string): unknown
}

const LEVELS: Record<number, { name: string; color: string }> = {
  10: { name: 'TRACE', color: '\x1b[90m' },
  20: { name: 'DEBUG', color: '\x1b[36m' },
  30: { name: 'INFO', color: '\x1b[32m' },
  40: { name: 'WARN', color: '\x1b[33m' },
  50: { name: 'ERROR', color: '\x1b[31m' },
  60: { name: 'FATAL', color: '\x1b[35m' },
}
const RESET = '\x1b[0m'
/** Fields every pino line has that a person does not need to read. */
const OMIT = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v'])

const pad2 = (n: number) => String(n).padStart(2, '0')

function formatValue(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v)
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v)
  return JSON.stringify(v)
}

/**
 * Formats one pino JSON line as a sentence: local time, level, message, then every other field as key=value
 * (an error's message inline, its stack on the lines below). A line that is not JSON passes through.
 *
 * @example formatLogLine('{"level":40,"time":0,"msg":"disk almost full","pct":93}', { color: false })
 * // '00:00:00.000 WARN  disk almost full pct=93' (in UTC)
 */
export function formatLogLine(line: string, opts: { color: boolean }): string {
  let o: Record<string, unknown>
  try {
    o = JSON.parse(line) as Record<string, unknown>
  } catch {
    return line.replace(/\n$/, '')
  }
  if (o === null || typeof o !== 'object') return line.replace(/\n$/, '')
  const t = new Date(typeof o.time === 'number' ? o.time : Date.now())
  const time = `${pad2(t.getHours())}:${pad2(t.getMinutes())}:${pad2(t.getSeconds())}.${String(t.getMilliseconds()).padStart(3, '0')}`
  const level = LEVELS[o.level as number] ?? { name: String(o.level ?? 'LOG').toUpperCase(), color: '' }
  const name = level.name.padEnd(5)
  const parts = [time, opts.color && level.color ? `${level.color}${name}${RESET}` : name]
  if (typeof o.msg === 'string' && o.msg !== '') parts.push(o.msg)
  let stack: string | undefined
  for (const [k, v] of Object.entries(o)) {
    if (OMIT.has(k) || v === undefined) continue
    if ((k === 'err' || k === 'error') && v && typeof v === 'object') {
      const e = v as { message?: unknown; stack?: unknown }
      parts.push(`${k}=${formatValue(e.message ?? v)}`)
      if (typeof e.stack === 'string') stack = e.stack.split('\n').slice(1).join('\n')
      continue
    }
    parts.push(`${k}=${formatValue(v)}`)
  }
  return parts.join(' ') + (stack ? `\n${stack}` : '')
}

/**
 * A stream for pino that writes each line as {@link formatLogLine}'s sentence to `out`.
 *
 * @example pino({ level: 'info' }, prettyLogStream(process.stderr, { color: true }))
 */
export function prettyLogStream(out: LineSink, opts: { color: boolean }): { write(line: string): void } {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line !== '') out.write(formatLogLine(line, opts) + '\n')
    },
  }
}

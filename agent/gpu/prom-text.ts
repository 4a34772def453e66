/** One sample line of the Prometheus text exposition format. */
export interface PromSample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/**
 * Parses Prometheus text exposition (version 0.0.4): comments and blank lines are skipped (`# TYPE` lines are
 * kept in `types`, family name → `counter` | `gauge` | `histogram` | `summary` | `untyped`), label values are
 * unescaped (`\\`, `\"`, `\n`), an optional timestamp is ignored. A malformed line is skipped and counted.
 *
 * @example
 * ```ts
 * parsePromText('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1"} 93\n').samples
 * // [{ name: 'DCGM_FI_DEV_GPU_UTIL', labels: { gpu: '0', UUID: 'GPU-1' }, value: 93 }]
 * ```
 */
export function parsePromText(text: string): {
  samples: PromSample[]
  malformed: number
  types: Map<string, string>
} {
  const samples: PromSample[] = []
  const types = new Map<string, string>()
  let malformed = 0
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '') continue
    if (line.startsWith('#')) {
      const m = TYPE_LINE.exec(line)
      if (m !== null) types.set(m[1]!, m[2]!)
      continue
    }
    const s = parseLine(line)
    if (s === undefined) malformed++
    else samples.push(s)
  }
  return { samples, malformed, types }
}

const TYPE_LINE = /^#\s*TYPE\s+([a-zA-Z_:][a-zA-Z0-9_:]*)\s+(\w+)/

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/

function parseLine(line: string): PromSample | undefined {
  const m = NAME.exec(line)
  if (m === null) return undefined
  const name = m[0]
  let i = name.length
  const labels: Record<string, string> = {}
  if (line[i] === '{') {
    i++
    for (;;) {
      while (line[i] === ' ' || line[i] === ',') i++
      if (line[i] === '}') {
        i++
        break
      }
      const lm = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(i))
      if (lm === null) return undefined
      i += lm[0].length
      while (line[i] === ' ') i++
      if (line[i] !== '=' || line[i + 1] !== '"') return undefined
      i += 2
      let value = ''
      for (;;) {
        const c = line[i]
        if (c === undefined) return undefined
        if (c === '"') break
        if (c === '\\') {
          const n = line[i + 1]
          value += n === 'n' ? '\n' : (n ?? '')
          i += 2
        } else {
          value += c
          i++
        }
      }
      i++
      labels[lm[0]] = value
    }
  }
  const rest = line.slice(i).trim().split(/\s+/)
  const v = parseValue(rest[0] ?? '')
  if (v === undefined) return undefined
  return { name, labels, value: v }
}

function parseValue(s: string): number | undefined {
  if (s === 'NaN') return NaN
  if (s === '+Inf' || s === 'Inf') return Infinity
  if (s === '-Inf') return -Infinity
  if (s === '') return undefined
  const v = Number(s)
  return Number.isNaN(v) ? undefined : v
}

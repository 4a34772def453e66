import { CliError, parseDurationMs } from '../../collector/index.js'
import type { RegisterCommand } from '../../collector/index.js'
import { httpJson } from '../live/http.js'

interface DecisionsFlags {
  collector: string
  target?: string
  since: string
  token?: string
  json?: boolean
}

/** One decision as GET /api/v1/decisions answers it (the fields the timeline prints). */
interface DecisionJson {
  id: number
  target: string
  time: string
  policy: string
  mode: string
  outcome: string
  outcomeDetail: string | null
  reason: string
  setpointsBefore: SetpointsJson | null
  setpointsAfter: SetpointsJson | null
  effect: { before?: EffectJson; after?: EffectJson } | null
}
interface SetpointsJson {
  desiredReplicas: number
  batchWindowMs: number
  maxBatch: number
  admission: Array<{ maxQueue: number; maxConcurrency: number }>
}
interface EffectJson {
  p99Ms: number | null
  burnRate: number
  arrivalRps: number
  replicasReady: number
}

/** An admission cap in words: the policy writes "no limit" as the largest safe integer. @example cap(Number.MAX_SAFE_INTEGER) // '∞' */
function cap(n: number): string {
  return n >= Number.MAX_SAFE_INTEGER ? '∞' : String(n)
}

/**
 * What changed between two setpoints, in words.
 *
 * @example describeChange(a, b) // 'replicas 2→3, window 5→8 ms'
 */
export function describeChange(a: SetpointsJson | null, b: SetpointsJson | null): string {
  if (!a || !b) return 'no change'
  const parts: string[] = []
  if (a.desiredReplicas !== b.desiredReplicas)
    parts.push(`replicas ${a.desiredReplicas}→${b.desiredReplicas}`)
  if (a.batchWindowMs !== b.batchWindowMs) parts.push(`window ${a.batchWindowMs}→${b.batchWindowMs} ms`)
  if (a.maxBatch !== b.maxBatch) parts.push(`max batch ${a.maxBatch}→${b.maxBatch}`)
  b.admission.forEach((x, i) => {
    const y = a.admission[i]
    if (!y || y.maxQueue !== x.maxQueue || y.maxConcurrency !== x.maxConcurrency)
      parts.push(
        `class ${i} queue/concurrency ${y ? `${cap(y.maxQueue)}/${cap(y.maxConcurrency)}` : '-'}→${cap(x.maxQueue)}/${cap(x.maxConcurrency)}`,
      )
  })
  return parts.length > 0 ? parts.join(', ') : 'no change'
}

/**
 * The timeline `tailguard decisions` prints: one block per decision (time, target, mode, outcome, change),
 * then why, then the measured effect when there is one.
 *
 * @example formatTimeline(decisions).join('\n')
 */
export function formatTimeline(ds: readonly DecisionJson[]): string[] {
  const out: string[] = []
  for (const d of ds) {
    const t = d.time.replace('T', ' ').replace(/\.\d+Z$/, 'Z')
    out.push(
      `${t}  ${d.target}  #${d.id} ${d.policy}/${d.mode}  ${d.outcome.toUpperCase()}  ${describeChange(d.setpointsBefore, d.setpointsAfter)}`,
    )
    out.push(`    why: ${d.reason}`)
    if (d.outcomeDetail) out.push(`    ${d.outcome === 'failed' ? 'error' : 'note'}: ${d.outcomeDetail}`)
    const b = d.effect?.before
    const a = d.effect?.after
    if (a && b)
      out.push(
        `    effect: p99 ${b.p99Ms ?? '-'}→${a.p99Ms ?? '-'} ms, burn rate ${b.burnRate}→${a.burnRate}, ${b.arrivalRps}→${a.arrivalRps} req/s, ready replicas ${b.replicasReady}→${a.replicasReady}`,
      )
  }
  return out
}

/**
 * `tailguard decisions`: the controller's stored decisions as a readable timeline (or JSON).
 *
 * @example tailguard decisions --target chat --since 1h
 */
export const registerDecisions: RegisterCommand = (program, io) => {
  program
    .command('decisions')
    .description(
      "Print the controller's decisions as a timeline: what changed, why, the outcome and the measured effect",
    )
    .option('--collector <url>', 'collector URL', 'http://127.0.0.1:7070')
    .option('--target <name>', 'only this target')
    .option('--since <duration>', 'how far back, e.g. 30m, 6h, 2d', '1h')
    .option('--token <token>', 'read token (default TAILGUARD_READ_TOKEN or TAILGUARD_API_TOKEN)')
    .option('--json', 'print the API answer as JSON')
    .action(async (flags: DecisionsFlags) => {
      const since = parseDurationMs(flags.since)
      if (since === undefined)
        throw new CliError(`--since: expected a duration like 1h, got '${flags.since}'`)
      const token = flags.token ?? process.env['TAILGUARD_READ_TOKEN'] ?? process.env['TAILGUARD_API_TOKEN']
      const q = new URLSearchParams({ from: `-${Math.max(1, Math.round(since / 1000))}s`, limit: '10000' })
      if (flags.target) q.set('target', flags.target)
      const url = `${flags.collector.replace(/\/$/, '')}/api/v1/decisions?${q.toString()}`
      const r = await httpJson(url, { ...(token ? { token } : {}), maxBytes: 64 << 20 })
      if (!r.ok) throw new CliError(`cannot reach the collector: ${r.error}`)
      if (r.status !== 200) {
        const m = (r.json as { message?: string } | null)?.message ?? r.text.slice(0, 200)
        throw new CliError(`GET /api/v1/decisions: HTTP ${r.status}: ${m}`)
      }
      const ds = (r.json as { decisions: DecisionJson[] }).decisions
      if (flags.json) {
        io.out(JSON.stringify(ds, null, 2))
        return
      }
      if (ds.length === 0) {
        io.out(`no decisions in the last ${flags.since}${flags.target ? ` for ${flags.target}` : ''}`)
        return
      }
      for (const line of formatTimeline(ds)) io.out(line)
    })
}

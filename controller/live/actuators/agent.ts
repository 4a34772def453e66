import { describeFailure, httpJson } from '../http.js'
import type { Actuator, AdmissionCaps } from './types.js'

/** Options of {@link createAgentActuator}. */
export interface AgentActuatorOptions {
  /** The agent's HTTP (OTLP/HTTP) port, e.g. http://127.0.0.1:4318. */
  readonly url: string
  /** Admin token (agent.adminToken / TAILGUARD_AGENT_ADMIN_TOKEN). */
  readonly token?: string
  /** queueTimeoutMs for classes the agent does not report yet; default 30 s. */
  readonly queueTimeoutMs?: number
  readonly timeoutMs?: number
}

/** The largest cap the agent's setpoints API takes; the policies' "unbounded" becomes this. */
const MAX_CAP = 1_000_000

interface AgentSetpoint {
  readonly priorityClass: number
  readonly maxConcurrency: number
  readonly maxQueue: number
  readonly queueTimeoutMs: number
}

/**
 * Admission caps through the agent's setpoints API (contract 2): `GET`/`PUT /v1/setpoints` with the
 * controller's fencing token, so a deposed leader's late write is refused (409 TG_ERR_SETPOINTS_FENCED).
 * A class's queue timeout is the policy's when it sets one (deadline-aware dropping), else what the agent has.
 *
 * @example createAgentActuator({ url: 'http://127.0.0.1:4318', token: process.env.TAILGUARD_AGENT_ADMIN_TOKEN })
 */
export function createAgentActuator(o: AgentActuatorOptions): Actuator {
  const base = o.url.replace(/\/$/, '')
  const timeouts = new Map<number, number>()
  const parse = (json: unknown): AgentSetpoint[] | null => {
    const a = (json as { admission?: unknown } | null)?.admission
    if (!Array.isArray(a)) return null
    const out: AgentSetpoint[] = []
    for (const x of a as Array<Record<string, unknown>>) {
      const pc = x['priorityClass']
      const mc = x['maxConcurrency']
      const mq = x['maxQueue']
      const qt = x['queueTimeoutMs']
      if (typeof pc !== 'number' || typeof mc !== 'number' || typeof mq !== 'number') return null
      out.push({
        priorityClass: pc,
        maxConcurrency: mc,
        maxQueue: mq,
        queueTimeoutMs: typeof qt === 'number' ? qt : 0,
      })
    }
    return out.sort((a, b) => a.priorityClass - b.priorityClass)
  }
  return {
    name: `agent ${base}`,
    knobs: ['admission'],
    async read() {
      const r = await httpJson(`${base}/v1/setpoints`, {
        ...(o.token ? { token: o.token } : {}),
        timeoutMs: o.timeoutMs ?? 5000,
      })
      if (!r.ok || r.status !== 200) return { ok: false, error: describeFailure('GET /v1/setpoints', r) }
      const sp = parse(r.json)
      if (!sp) return { ok: false, error: 'GET /v1/setpoints: answer has no admission array' }
      for (const s of sp) timeouts.set(s.priorityClass, s.queueTimeoutMs)
      const admission: AdmissionCaps[] = []
      for (const s of sp)
        admission[s.priorityClass] = {
          maxQueue: s.maxQueue,
          maxConcurrency: s.maxConcurrency,
          ...(s.queueTimeoutMs > 0 ? { queueTimeoutMs: s.queueTimeoutMs } : {}),
        }
      return { ok: true, reading: { admission } }
    },
    async apply(change, ctx) {
      if (!change.admission) return { ok: true, detail: 'nothing to change' }
      const admission: AgentSetpoint[] = change.admission.map((c, priorityClass) => ({
        priorityClass,
        maxConcurrency: Math.min(MAX_CAP, Math.max(0, Math.round(c.maxConcurrency))),
        maxQueue: Math.min(MAX_CAP, Math.max(0, Math.round(c.maxQueue))),
        queueTimeoutMs:
          c.queueTimeoutMs !== undefined && c.queueTimeoutMs > 0
            ? Math.min(3_600_000, Math.round(c.queueTimeoutMs))
            : timeouts.get(priorityClass) || o.queueTimeoutMs || 30_000,
      }))
      const r = await httpJson(`${base}/v1/setpoints`, {
        method: 'PUT',
        ...(o.token ? { token: o.token } : {}),
        timeoutMs: o.timeoutMs ?? 5000,
        body: { admission, fencingToken: ctx.fencingToken, source: `tailguard-controller/${ctx.target}` },
      })
      if (!r.ok || r.status !== 200) return { ok: false, error: describeFailure('PUT /v1/setpoints', r) }
      return { ok: true }
    },
  }
}

import type { FleetObservation } from '../../policy.js'

/** Verdict on one observation: act on it, or hold with the reason. */
export type ObservationCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string }

/** Long window (s) used to tell a real drop in traffic from missing data. */
const LONG_WINDOW_S = 60

/**
 * Checks an observation before the policy acts on it. Holds (and says why) when it is stale (older than three
 * intervals), carries a NaN, infinite or negative number, or is empty while the fleet had traffic a moment ago
 * (missing data looks like a sudden drop to zero in every window at once, which real traffic cannot do: the
 * 60-second window still remembers the last minute).
 *
 * @example checkObservation(obs, 5.2).ok // false when obs.ageMs is 20 s at a 5 s interval
 */
export function checkObservation(obs: FleetObservation, lastLongRps: number): ObservationCheck {
  const interval = obs.intervalMs
  if (!(interval > 0) || !Number.isFinite(interval))
    return { ok: false, reason: `invalid observation: intervalMs = ${String(interval)}` }
  const age = obs.ageMs ?? 0
  if (!(age >= 0) || !Number.isFinite(age))
    return { ok: false, reason: `invalid observation: ageMs = ${String(age)}` }
  if (age > 3 * interval)
    return {
      ok: false,
      reason: `stale: observation ${(age / 1000).toFixed(1)} s old (> 3 intervals of ${(interval / 1000).toFixed(1)} s)`,
    }
  const bad = firstBadNumber(obs)
  if (bad !== undefined) return { ok: false, reason: `invalid observation: ${bad}` }
  const rates = Object.values(obs.arrivalRps)
  const empty =
    rates.every((r) => r === 0) &&
    obs.completed === 0 &&
    obs.queueDepth === 0 &&
    obs.inFlight === 0 &&
    obs.latencyMs.e2e.count === 0
  if (empty && lastLongRps > 0)
    return {
      ok: false,
      reason: `no data: every window reads 0 req/s, ${lastLongRps.toFixed(1)} req/s a moment ago over ${LONG_WINDOW_S} s`,
    }
  return { ok: true }
}

/** The first field that is not a finite number ≥ 0, described as `field = value`, or undefined. */
function firstBadNumber(obs: FleetObservation): string | undefined {
  const check = (name: string, v: number | null | undefined, allowNull = false): string | undefined => {
    if (v === null || v === undefined)
      return allowNull || v === undefined ? undefined : `${name} = ${String(v)}`
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? undefined : `${name} = ${String(v)}`
  }
  for (const [w, v] of Object.entries(obs.arrivalRps)) {
    const b = check(`arrivalRps[${w}]`, v)
    if (b) return b
  }
  for (const [w, v] of Object.entries(obs.concurrency)) {
    const b = check(`concurrency[${w}]`, v)
    if (b) return b
  }
  for (const [phase, p] of Object.entries(obs.latencyMs)) {
    const b =
      check(`latencyMs.${phase}.p50`, p.p50, true) ??
      check(`latencyMs.${phase}.p99`, p.p99, true) ??
      check(`latencyMs.${phase}.count`, p.count)
    if (b) return b
  }
  const scalars: Array<[string, number | undefined]> = [
    ['queueDepth', obs.queueDepth],
    ['inFlight', obs.inFlight],
    ['gpuUtilization', obs.gpuUtilization],
    ['replicas.ready', obs.replicas.ready],
    ['replicas.starting', obs.replicas.starting],
    ['completed', obs.completed],
    ['shed', obs.shed],
    ['errors', obs.errors],
    ['batchSize.mean', obs.batchSize.mean],
    ['batchSize.max', obs.batchSize.max],
    ['serviceMeanMs', obs.serviceMeanMs],
    ['inFlightMean', obs.inFlightMean],
    ['busyReplicasMean', obs.busyReplicasMean],
    ['llm.running', obs.llm?.running],
    ['llm.inputTokens', obs.llm?.inputTokens],
    ['llm.outputTokens', obs.llm?.outputTokens],
    ['llm.kvUsage', obs.llm?.kvUsage],
  ]
  for (const [name, v] of scalars) {
    const b = check(name, v)
    if (b) return b
  }
  for (let i = 0; i < obs.queueDepthByClass.length; i++) {
    const b = check(`queueDepthByClass[${i}]`, obs.queueDepthByClass[i])
    if (b) return b
  }
  if (!Number.isFinite(obs.errorBudget.burnRate) || obs.errorBudget.burnRate < 0)
    return `errorBudget.burnRate = ${String(obs.errorBudget.burnRate)}`
  if (!Number.isFinite(obs.errorBudget.remaining))
    return `errorBudget.remaining = ${String(obs.errorBudget.remaining)}`
  return undefined
}

/** The short-window arrival rate (10 s, else 6 s, else the smallest window), req/s. */
export function shortRate(obs: FleetObservation): number {
  return obs.arrivalRps[10] ?? obs.arrivalRps[6] ?? smallestWindow(obs.arrivalRps) ?? 0
}

/** The long-window arrival rate (60 s, else the largest window), req/s. */
export function longRate(obs: FleetObservation): number {
  return obs.arrivalRps[LONG_WINDOW_S] ?? largestWindow(obs.arrivalRps) ?? shortRate(obs)
}

/** The value of the smallest window key (e.g. the 6 s of `{ 6: …, 60: … }`), or undefined when there is none. */
export function smallestWindow(r: Readonly<Record<number, number>>): number | undefined {
  const keys = Object.keys(r)
    .map(Number)
    .sort((a, b) => a - b)
  return keys.length > 0 ? r[keys[0]!] : undefined
}

function largestWindow(r: Readonly<Record<number, number>>): number | undefined {
  const keys = Object.keys(r)
    .map(Number)
    .sort((a, b) => b - a)
  return keys.length > 0 ? r[keys[0]!] : undefined
}

/**
 * Types of the live controller's API (`GET /api/v1/controllers`, `/decisions`; collector/routes/controllers.ts)
 * as the controller pages read them, and the pure transforms from them to what the pages draw. No DOM, no
 * React (unit-tested in test/dashboard/controller.test.ts).
 *
 * @example
 * ```ts
 * const steps = replicaSteps(decisions, controller, fromMs, toMs) // [{ tMs, desired }, …]
 * ```
 */
import type { ServiceSeries } from './api-types.js'
import type { SloStatus } from './slo-types.js'

/** A Kubernetes-style condition of a controlled target. */
export interface ControllerCondition {
  readonly type: string
  readonly status: string
  readonly reason: string
  readonly message: string
  readonly lastTransitionTime: string
}

/** The setpoints a controller sets (controller/policy.ts `Setpoints`). */
export interface Setpoints {
  readonly batchWindowMs: number
  readonly maxBatch: number
  readonly admission: ReadonlyArray<{
    readonly maxQueue: number
    readonly maxConcurrency: number
    readonly queueTimeoutMs?: number
  }>
  readonly desiredReplicas: number
}

/** One action of a decision (controller/policy.ts `Action`). */
export interface ControllerAction {
  readonly kind: string
  readonly reason?: string
  readonly desiredReplicas?: number
  readonly windowMs?: number
  readonly maxBatch?: number
  readonly priorityClass?: number
  readonly maxQueue?: number
  readonly maxConcurrency?: number
  readonly queueTimeoutMs?: number
}

/** The parts of a decision's observation the page reads (controller/policy.ts `FleetObservation`). */
export interface DecisionObservation {
  readonly arrivalRps?: Readonly<Record<string, number>>
  readonly latencyMs?: Readonly<Record<string, { readonly p50: number | null; readonly p99: number | null }>>
  readonly replicas?: { readonly ready: number; readonly starting: number }
}

/** One stored decision (`GET /api/v1/decisions`). */
export interface Decision {
  readonly id: number
  readonly target: string
  readonly time: string
  readonly policy: string
  readonly mode: string
  readonly holder: string
  readonly fencingToken: number
  readonly observation: DecisionObservation | null
  readonly prediction: { readonly expectedP99Ms?: number | null; readonly utilization?: number | null } | null
  readonly actions: readonly ControllerAction[]
  readonly setpointsBefore: Setpoints | null
  readonly setpointsAfter: Setpoints | null
  readonly reason: string
  /** `pending`, `applied`, `failed`, `skipped` or `unknown` (its leader stopped before recording it). */
  readonly outcome: string
  readonly outcomeDetail: string | null
  readonly effect: unknown
  readonly effectAt: string | null
}

/** One controlled target (`GET /api/v1/controllers`, and the answer of the mode and rollback routes). */
export interface Controller {
  readonly target: string
  readonly mode: string
  readonly modeSource: string
  readonly policy: string
  readonly leader: string | null
  readonly leaseExpiresAt: string | null
  readonly fencingToken: number
  readonly setpoints: Setpoints | null
  readonly conditions: readonly ControllerCondition[]
  readonly lastDecision: Decision | null
  readonly rollbackRequestedAt: string | null
  readonly updatedAt: string
}

/** `GET /api/v1/controllers`. */
export interface ControllersResponse {
  readonly controllers: readonly Controller[]
}

/** `GET /api/v1/decisions`. */
export interface DecisionsResponse {
  readonly decisions: readonly Decision[]
}

/**
 * An admission cap for people: the policy writes "no limit" as the largest safe integer, shown as ∞.
 *
 * @example formatCap(Number.MAX_SAFE_INTEGER) // '∞'
 */
export function formatCap(n: number | undefined): string {
  if (n === undefined) return '?'
  return n >= Number.MAX_SAFE_INTEGER ? '∞' : String(n)
}

/**
 * One action in words: `scale to 4 replicas`, `batching 12 ms × 16`, `admission class 0: queue 64, concurrency 32`.
 *
 * @example describeAction({ kind: 'scale', desiredReplicas: 4 }) // 'scale to 4 replicas'
 */
export function describeAction(a: ControllerAction): string {
  if (a.kind === 'scale') return `scale to ${a.desiredReplicas ?? '?'} replicas`
  if (a.kind === 'batching') return `batching window ${a.windowMs ?? '?'} ms, max batch ${a.maxBatch ?? '?'}`
  if (a.kind === 'admission')
    return `admission class ${a.priorityClass ?? '?'}: queue ${formatCap(a.maxQueue)}, concurrency ${formatCap(a.maxConcurrency)}${
      a.queueTimeoutMs !== undefined ? `, timeout ${a.queueTimeoutMs} ms` : ''
    }`
  return a.kind
}

/** A point of the desired-replicas step line. */
export interface ReplicaStep {
  readonly tMs: number
  readonly desired: number
}

/**
 * The desired replica count over `[fromMs, toMs]` as a step line: the count before the first decision in the
 * range, then the setpoints after each decision that was not a failure (an observe-mode recommendation counts:
 * the controller shows it as the setpoints), held until `toMs`. Without decisions in the range, the current
 * setpoints across the whole range. Empty when nothing says a count.
 *
 * @example replicaSteps([{ time: '…', setpointsBefore: { desiredReplicas: 2 }, setpointsAfter: { desiredReplicas: 3 }, outcome: 'applied' }], null, 0, 60_000)
 * // [{ tMs: 0, desired: 2 }, { tMs: t, desired: 3 }, { tMs: 60000, desired: 3 }]
 */
export function replicaSteps(
  decisions: readonly Pick<Decision, 'time' | 'setpointsBefore' | 'setpointsAfter' | 'outcome'>[],
  current: Pick<Controller, 'setpoints'> | null,
  fromMs: number,
  toMs: number,
): ReplicaStep[] {
  const inRange = decisions.filter((d) => {
    const tMs = Date.parse(d.time)
    return tMs >= fromMs && tMs <= toMs
  })
  const out: ReplicaStep[] = []
  const first = inRange.find((d) => d.setpointsBefore)
  if (first?.setpointsBefore) out.push({ tMs: fromMs, desired: first.setpointsBefore.desiredReplicas })
  for (const d of inRange)
    if (d.setpointsAfter && d.outcome !== 'failed')
      out.push({ tMs: Date.parse(d.time), desired: d.setpointsAfter.desiredReplicas })
  const last = out[out.length - 1]?.desired ?? current?.setpoints?.desiredReplicas
  if (last === undefined) return out
  if (out.length === 0) out.push({ tMs: fromMs, desired: last })
  out.push({ tMs: toMs, desired: last })
  return out
}

/**
 * The value of a step line at `tMs`: the last step at or before it (null before the first).
 *
 * @example stepAt([{ tMs: 0, desired: 2 }, { tMs: 10, desired: 3 }], 12) // 3
 */
export function stepAt(steps: readonly ReplicaStep[], tMs: number): number | null {
  let v: number | null = null
  for (const s of steps) {
    if (s.tMs > tMs) break
    v = s.desired
  }
  return v
}

/** Where a decision sits on the timeline: its time, outcome, reason, and the p99 it saw (ms, null when unknown). */
export interface TimelineMark {
  readonly id: number
  readonly tMs: number
  readonly outcome: string
  readonly reason: string
  readonly p99Ms: number | null
}

/**
 * The decision marks of the timeline chart, in time order: the end-to-end p99 the decision's observation saw.
 *
 * @example timelineMarks([{ id: 1, time: '2026-01-01T00:00:00Z', outcome: 'applied', reason: 'scale', observation: { latencyMs: { e2e: { p50: 1, p99: 9 } } } }])
 * // [{ id: 1, tMs: 1767225600000, outcome: 'applied', reason: 'scale', p99Ms: 9 }]
 */
export function timelineMarks(
  decisions: readonly Pick<Decision, 'id' | 'time' | 'outcome' | 'reason' | 'observation'>[],
): TimelineMark[] {
  return decisions
    .map((d) => ({
      id: d.id,
      tMs: Date.parse(d.time),
      outcome: d.outcome,
      reason: d.reason,
      p99Ms: d.observation?.latencyMs?.['e2e']?.p99 ?? null,
    }))
    .filter((m) => Number.isFinite(m.tMs))
    .sort((a, b) => a.tMs - b.tMs || a.id - b.id)
}

/** The service (and model, version) a target's charts read. */
export interface TargetSelector {
  readonly service: string
  readonly model: string
  readonly version: string
}

/**
 * The service a target controls, from its name: the live controller names a target `service/model/version`
 * unless the config gives it a name. Returns the longest prefix of the name that names a reporting series,
 * or null when none does (a custom name: the page then asks which service to chart).
 *
 * @example targetSelector('chat/llama', [{ service: 'chat', model: 'llama', … }]) // { service: 'chat', model: 'llama', version: '' }
 */
export function targetSelector(
  target: string,
  services: readonly Pick<ServiceSeries, 'service' | 'model' | 'version'>[],
): TargetSelector | null {
  const [service = '', model = '', version = ''] = target.split('/')
  const mine = services.filter((s) => s.service === service)
  if (mine.length === 0) return null
  if (model && mine.some((s) => s.model === model)) {
    if (version && mine.some((s) => s.model === model && s.version === version))
      return { service, model, version }
    return { service, model, version: '' }
  }
  return { service, model: '', version: '' }
}

/**
 * The latency SLO of a service for one phase (`total` matches an SLO without a phase): its threshold is the
 * line drawn over the latency charts. The first match by name when several apply.
 *
 * @example latencySlo(slos, 'chat', 'total')?.thresholdMs // 450
 */
export function latencySlo(
  slos: readonly SloStatus[],
  service: string,
  phase: string,
): (SloStatus & { readonly thresholdMs: number }) | null {
  const match = slos
    .filter(
      (s): s is SloStatus & { thresholdMs: number } =>
        s.thresholdMs !== null &&
        s.selector['service'] === service &&
        (s.phase ?? 'total') === (phase === 'e2e' ? 'total' : phase),
    )
    .sort((a, b) => a.name.localeCompare(b.name))
  return match[0] ?? null
}

/**
 * The availability SLO of a service: its allowed error ratio (1 − objective) is drawn over the error-rate chart.
 *
 * @example availabilitySlo(slos, 'chat')?.objective // 0.999
 */
export function availabilitySlo(slos: readonly SloStatus[], service: string): SloStatus | null {
  return (
    slos
      .filter((s) => s.kind === 'availability' && s.selector['service'] === service)
      .sort((a, b) => a.name.localeCompare(b.name))[0] ?? null
  )
}

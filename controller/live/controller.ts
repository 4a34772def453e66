/**
 * The live controller: every interval, for each target whose lease it holds, it builds the observation,
 * steps the policy (the same step function the simulator runs), passes the actions through the safety rails,
 * stores the decision (only while it still holds the lease with its fencing token), applies it through the
 * actuators in enforce mode, records the outcome, and later the measured effect.
 */
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import { createControllerStore, DEFAULT_ROLLUPS } from '../../collector/index.js'
import type {
  ConditionType,
  ControllerCondition,
  ControllerMode,
  ControllerRecord,
  ControllerTargetConfig,
  Histogram,
  Metric,
  Selector,
  ServiceInfo,
  Store,
} from '../../collector/index.js'
import { mmcWaitPercentile } from '../queueing/multi-server.js'
import { applyActions } from '../policy.js'
import type { Action, FleetObservation, Policy, Setpoints } from '../policy.js'
import type { Actuator, ActuatorChange, ActuatorReading } from './actuators/types.js'
import { buildObservation } from './observe.js'
import type { ObservationReader, ObservedTarget } from './observe.js'
import { applyRails, INITIAL_RAIL_STATE, RAIL_DEFAULTS } from './rails.js'
import type { RailState, Rails } from './rails.js'

/** A target as the controller runs it: its config, policy and actuators. */
export interface LiveTarget {
  readonly name: string
  readonly config: ControllerTargetConfig
  readonly policy: Policy<unknown>
  readonly actuators: readonly Actuator[]
}

/** A logger (pino-compatible subset). */
export interface ControllerLogger {
  info(msg: string): void
  warn(msg: string): void
  error(msg: string): void
}

/** Options of {@link createLiveController}. */
export interface LiveControllerOptions {
  /** The store: leases and decisions live in it, and observations are read from it. */
  readonly store: Store
  /** Where observations come from; default the store (histograms, counts) without signals or budgets. */
  readonly reader?: ObservationReader
  readonly targets: readonly LiveTarget[]
  readonly intervalMs: number
  readonly staleAfterIntervals?: number
  /** Default 1.5 intervals. */
  readonly leaseTtlMs?: number | null
  readonly effectAfterIntervals?: number
  /** This process's name in leases and decisions; default `<host>:<pid>:<random>`. */
  readonly holder?: string
  readonly clock?: () => number
  readonly logger?: ControllerLogger
  /** The store's finest rollup step (default 10 s). */
  readonly stepMs?: number
  /** How long after a bucket closes its reports count as arrived (default 2 s). */
  readonly settleMs?: number
  /**
   * Called after every round with each target's current view (led here or by another controller, read from
   * the store), so autoscaler front ends (the KEDA scaler, the external metrics API) answer from memory.
   */
  readonly onView?: (view: TargetView) => void
}

/** What a target looks like now: its setpoints, conditions and newest decision (see `onView`). */
export interface TargetView {
  readonly name: string
  readonly config: ControllerTargetConfig
  readonly mode: ControllerMode
  readonly setpoints: Setpoints
  readonly conditions: readonly ControllerCondition[]
  /** True when this process leads the target. */
  readonly leading: boolean
  readonly minReplicas: number
  readonly intervalMs: number
  readonly staleAfterMs: number
  /** The newest decision, with the observation it saw (null before the first one). */
  readonly decision: {
    readonly id: number
    readonly timeMs: number
    readonly reason: string
    readonly observation: FleetObservation | null
  } | null
  readonly nowMs: number
}

/** One target's state in this process. */
interface TargetState {
  readonly t: LiveTarget
  readonly name: string
  readonly rails: Rails
  readonly observed: ObservedTarget
  token: number | null
  policyState: unknown
  setpoints: Setpoints
  ticks: number
  lastStepMs: number
  lastSetReplicas: number | null
  conflict: { sinceMs: number; message: string } | null
  stale: boolean
  rail: RailState
  lastMode: ControllerMode | null
  histCache: { key: string; value: Map<Metric, Histogram> } | null
  lastStatus: string
  conditions: Map<ConditionType, ControllerCondition>
  effects: Array<{ id: number; dueMs: number; before: EffectSnapshot }>
  lastDecision: TargetView['decision']
}

/** The numbers a decision's effect compares, before and some intervals after. */
interface EffectSnapshot {
  readonly atMs: number
  readonly arrivalRps: number
  readonly p99Ms: number | null
  readonly burnRate: number
  readonly replicasReady: number
  readonly shed: number
}

/** What one control round did, for tests and the CLI. */
export interface RoundResult {
  readonly leading: readonly string[]
  readonly decisions: ReadonlyArray<{
    readonly target: string
    readonly id: number
    readonly outcome: string
  }>
}

const quiet: ControllerLogger = { info() {}, warn() {}, error() {} }

/** The name of a target: its `name`, else service/model/version. @example targetName({ service: 'chat', model: 'llama' }) // 'chat/llama' */
export function targetName(
  t: Pick<ControllerTargetConfig, 'name' | 'service' | 'model' | 'version'>,
): string {
  return t.name ?? [t.service, t.model, t.version].filter((x) => x).join('/')
}

const selectorOf = (c: ControllerTargetConfig): Selector => ({
  service: c.service,
  ...(c.model !== undefined ? { model: c.model } : {}),
  ...(c.version !== undefined ? { version: c.version } : {}),
})

const matches = (s: Selector, i: ServiceInfo) =>
  i.service === s.service &&
  (s.model === undefined || i.model === s.model) &&
  (s.version === undefined || i.version === s.version)

/** The setpoints a target starts with. @example initialSetpoints(cfg).desiredReplicas // cfg.initial.replicas */
export function initialSetpoints(c: ControllerTargetConfig): Setpoints {
  return {
    batchWindowMs: c.initial.windowMs,
    maxBatch: c.initial.maxBatch,
    admission: c.initial.admission.map((a) => ({ maxQueue: a.maxQueue, maxConcurrency: a.maxConcurrency })),
    desiredReplicas: c.initial.replicas,
  }
}

/** The rails of a target from its config. @example railsOf(cfg).maxScaleUpStep // 2 unless configured */
export function railsOf(c: ControllerTargetConfig): Rails {
  const b = c.bounds
  return {
    knobs: c.knobs,
    minReplicas: b.minReplicas,
    maxReplicas: b.maxReplicas,
    maxWindowMs: b.maxWindowMs ?? RAIL_DEFAULTS.maxWindowMs,
    maxBatch: b.maxBatch ?? RAIL_DEFAULTS.maxBatch,
    maxScaleUpStep: b.maxScaleUpStep ?? RAIL_DEFAULTS.maxScaleUpStep,
    maxScaleDownStep: b.maxScaleDownStep ?? RAIL_DEFAULTS.maxScaleDownStep,
    maxWindowStepMs: b.maxWindowStepMs ?? RAIL_DEFAULTS.maxWindowStepMs,
    scaleDownStabilizationIntervals:
      b.scaleDownStabilizationIntervals ?? RAIL_DEFAULTS.scaleDownStabilizationIntervals,
    classes: c.initial.admission.length,
  }
}

/**
 * A prediction for a decision: capacity per replica as observed (completions over busy replica time),
 * utilization at the new replica count, and the p99 an M/M/c queue in front of it would give.
 *
 * @example predict(obs, setpoints).utilization // 0.62
 */
export function predict(
  obs: FleetObservation,
  next: Setpoints,
): {
  arrivalRps: number
  capacityRpsPerReplica: number | null
  utilization: number | null
  expectedP99Ms: number | null
} {
  const arrival = obs.arrivalRps[10] ?? Object.values(obs.arrivalRps)[0] ?? 0
  const completedRps = obs.completed / (obs.intervalMs / 1000)
  const ready = Math.max(1, obs.replicas.ready)
  const busy = obs.gpuUtilization > 0.05 ? obs.gpuUtilization : null
  const serviceMs = obs.latencyMs.service.p50 ?? obs.latencyMs.e2e.p50
  let perReplica: number | null = null
  if (busy !== null && completedRps > 0) perReplica = completedRps / (busy * ready)
  else if (serviceMs && serviceMs > 0) perReplica = (1000 / serviceMs) * Math.max(1, next.maxBatch)
  if (perReplica === null)
    return { arrivalRps: arrival, capacityRpsPerReplica: null, utilization: null, expectedP99Ms: null }
  const c = Math.max(1, next.desiredReplicas)
  const utilization = arrival / (perReplica * c)
  const sMs = 1000 / perReplica
  const wait = mmcWaitPercentile(c, arrival / perReplica, sMs, 0.99)
  const p99Service = obs.latencyMs.service.p99 ?? obs.latencyMs.e2e.p99 ?? sMs
  return {
    arrivalRps: round(arrival),
    capacityRpsPerReplica: round(perReplica),
    utilization: round(utilization),
    expectedP99Ms: Number.isFinite(wait) ? round(wait + p99Service) : null,
  }
}

const round = (x: number) => Math.round(x * 1000) / 1000

function snapshot(obs: FleetObservation, atMs: number): EffectSnapshot {
  return {
    atMs,
    arrivalRps: round(obs.arrivalRps[10] ?? 0),
    p99Ms: obs.latencyMs.e2e.p99,
    burnRate: round(obs.errorBudget.burnRate),
    replicasReady: obs.replicas.ready,
    shed: obs.shed,
  }
}

function mergeReadings(readings: ReadonlyArray<ActuatorReading>): ActuatorReading {
  let out: ActuatorReading = {}
  for (const r of readings) out = { ...r, ...out }
  return out
}

/**
 * Creates the live controller. `start()` runs it on timers (lease upkeep every quarter interval, a control
 * step per target every interval); `round(nowMs)` runs one pass by hand (tests and benchmarks).
 *
 * @example
 * ```ts
 * const c = createLiveController({ store, targets, intervalMs: 5000, logger })
 * c.start()
 * // …
 * await c.stop()
 * ```
 */
export function createLiveController(o: LiveControllerOptions) {
  const cs = createControllerStore(o.store)
  const clock = o.clock ?? Date.now
  const log = o.logger ?? quiet
  const interval = o.intervalMs
  const ttl = o.leaseTtlMs ?? Math.round(interval * 1.5)
  const staleLimitMs = (o.staleAfterIntervals ?? 3) * interval
  const effectAfter = (o.effectAfterIntervals ?? 3) * interval
  const stepMs = o.stepMs ?? DEFAULT_ROLLUPS[0]!.stepMs
  const settleMs = o.settleMs ?? 2000
  const holder = o.holder ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
  // The store's own `signals` (per-series time series) is not the reader's summary: only its histograms and counts.
  const reader: ObservationReader = o.reader ?? {
    histograms: (s, r, m) => o.store.histograms(s, r, m),
    counts: (s, r) => o.store.counts(s, r),
  }
  const states: TargetState[] = o.targets.map((t) => {
    const c = t.config
    const sp = initialSetpoints(c)
    return {
      t,
      name: t.name,
      rails: railsOf(c),
      observed: {
        selector: selectorOf(c),
        slos: c.slos,
        objective: {
          thresholdMs: c.objective.thresholdMs,
          phase: c.objective.phase ?? 'e2e',
          target: c.objective.target ?? 0.99,
        },
      },
      token: null,
      policyState: t.policy.init(sp),
      setpoints: sp,
      ticks: 0,
      lastStepMs: 0,
      lastSetReplicas: null,
      conflict: null,
      stale: false,
      rail: INITIAL_RAIL_STATE,
      lastMode: null,
      histCache: null,
      lastStatus: '',
      conditions: new Map(),
      effects: [],
      lastDecision: null,
    }
  })
  let registered = false
  let timer: NodeJS.Timeout | null = null
  let running: Promise<unknown> = Promise.resolve()
  let stopped = false

  const setCondition = (
    s: TargetState,
    type: ConditionType,
    status: ControllerCondition['status'],
    reason: string,
    message: string,
    nowMs: number,
  ) => {
    const prev = s.conditions.get(type)
    s.conditions.set(type, {
      type,
      status,
      reason,
      message,
      lastTransitionMs: prev && prev.status === status ? prev.lastTransitionMs : nowMs,
    })
  }

  async function register(nowMs: number) {
    if (registered) return
    for (const s of states)
      await cs.ensureTarget(s.name, { mode: s.t.config.mode ?? 'observe', policy: s.t.policy.name }, nowMs)
    registered = true
  }

  /** Takes over a target: continue from the setpoints its last leader stored. */
  /**
   * Takes over a target: continue from the setpoints its last leader left. When that leader stored a decision
   * and died before recording its outcome (or its status), the decision may have reached the actuators: its
   * setpoints are taken as the ones in force (so it is not applied a second time), and the decision is marked.
   */
  async function becomeLeader(
    s: TargetState,
    rec: ControllerRecord | undefined,
    token: number,
    nowMs: number,
  ) {
    s.token = token
    const valid = (x: unknown): x is Setpoints =>
      !!x && typeof x === 'object' && Array.isArray((x as Setpoints).admission)
    const stored = rec?.setpoints
    if (valid(stored)) s.setpoints = stored
    const last = rec?.lastDecisionId != null ? await cs.decision(rec.lastDecisionId) : null
    if (
      last &&
      (last.outcome === 'applied' || last.outcome === 'pending' || last.outcome === 'unknown') &&
      valid(last.setpointsAfter)
    )
      s.setpoints = last.setpointsAfter
    if (last && last.outcome === 'pending' && last.fencingToken < token)
      await cs.setOutcome(
        last.id,
        'unknown',
        `the leader ${last.holder} stopped before recording the outcome (taken over by ${holder} at ${new Date(nowMs).toISOString()}); its setpoints are assumed in force`,
      )
    s.policyState = s.t.policy.init(s.setpoints)
    s.ticks = 0
    s.lastSetReplicas = null
    s.rail = INITIAL_RAIL_STATE
    s.lastMode = null
    s.effects = []
    s.lastStatus = ''
    log.info(`controller ${holder}: leading ${s.name} (fencing token ${token})`)
  }

  async function record(
    s: TargetState,
    nowMs: number,
    mode: ControllerMode,
    fields: {
      observation: unknown
      prediction: unknown
      actions: readonly Action[]
      before: Setpoints
      after: Setpoints
      reason: string
      outcome: 'pending' | 'skipped'
      detail: string | null
    },
  ): Promise<number | null> {
    const r = await cs.recordDecision(
      {
        target: s.name,
        timeMs: nowMs,
        policy: s.t.policy.name,
        mode,
        observation: fields.observation,
        prediction: fields.prediction,
        actions: fields.actions,
        setpointsBefore: fields.before,
        setpointsAfter: fields.after,
        reason: fields.reason,
        outcome: fields.outcome,
        outcomeDetail: fields.detail,
      },
      holder,
      s.token!,
      nowMs,
    )
    if (r.kind === 'fenced') {
      log.warn(`controller ${holder}: lost the lease of ${s.name} (fenced); not acting`)
      s.token = null
      return null
    }
    s.lastDecision = {
      id: r.id,
      timeMs: nowMs,
      reason: fields.reason,
      observation: (fields.observation as FleetObservation | null) ?? s.lastDecision?.observation ?? null,
    }
    return r.id
  }

  /** Applies a decision's changes through the actuators; returns the outcome and the setpoints now in force. */
  async function actuate(
    s: TargetState,
    id: number,
    before: Setpoints,
    after: Setpoints,
    actions: readonly Action[],
    reason: string,
  ): Promise<{ ok: boolean; detail: string | null; inForce: Setpoints }> {
    const change: {
      replicas?: number
      batching?: ActuatorChange['batching']
      admission?: ActuatorChange['admission']
    } = {}
    for (const a of actions) {
      if (a.kind === 'scale') change.replicas = after.desiredReplicas
      else if (a.kind === 'batching')
        change.batching = { windowMs: after.batchWindowMs, maxBatch: after.maxBatch }
      else change.admission = after.admission
    }
    const ctx = { target: s.name, fencingToken: s.token!, decisionId: id, reason }
    const errors: string[] = []
    const done = { replicas: false, batching: false, admission: false }
    const notes: string[] = []
    await Promise.all(
      s.t.actuators.map(async (act) => {
        const part: {
          replicas?: number
          batching?: ActuatorChange['batching']
          admission?: ActuatorChange['admission']
        } = {}
        if (change.replicas !== undefined && act.knobs.includes('replicas')) part.replicas = change.replicas
        if (change.batching && act.knobs.includes('batching')) part.batching = change.batching
        if (change.admission && act.knobs.includes('admission')) part.admission = change.admission
        if (Object.keys(part).length === 0) return
        const r = await act.apply(part, ctx)
        if (!r.ok) errors.push(`${act.name}: ${r.error}`)
        else {
          if (part.replicas !== undefined) done.replicas = true
          if (part.batching) done.batching = true
          if (part.admission) done.admission = true
          if (r.detail && r.detail !== 'nothing to change') notes.push(`${act.name}: ${r.detail}`)
        }
      }),
    )
    const inForce: Setpoints = {
      desiredReplicas:
        change.replicas !== undefined && !done.replicas ? before.desiredReplicas : after.desiredReplicas,
      batchWindowMs: change.batching && !done.batching ? before.batchWindowMs : after.batchWindowMs,
      maxBatch: change.batching && !done.batching ? before.maxBatch : after.maxBatch,
      admission: change.admission && !done.admission ? before.admission : after.admission,
    }
    if (done.replicas) s.lastSetReplicas = after.desiredReplicas
    return {
      ok: errors.length === 0,
      detail: errors.length > 0 ? errors.join('; ') : notes.length > 0 ? notes.join('; ') : null,
      inForce,
    }
  }

  /** AbleToScale after an actuation: failed, or rescaled when it set a replica count (`rescaledTo`). */
  function noteActuation(
    s: TargetState,
    r: { ok: boolean; detail: string | null },
    rescaledTo: number | null,
    nowMs: number,
  ): void {
    if (!r.ok)
      setCondition(s, 'AbleToScale', 'False', 'FailedUpdateScale', r.detail ?? 'an actuator failed', nowMs)
    else if (rescaledTo !== null)
      setCondition(s, 'AbleToScale', 'True', 'SucceededRescale', `desired replicas ${rescaledTo}`, nowMs)
  }

  async function stepTarget(
    s: TargetState,
    rec: ControllerRecord,
    newestMs: number | null,
    replicaLabels: number,
    nowMs: number,
  ): Promise<{ id: number; outcome: string } | null> {
    const mode = rec.mode
    s.ticks++
    // An operator's mode change acknowledges a conflict: adopt the replica count as it is now.
    if (s.conflict && rec.modeChangedMs > s.conflict.sinceMs) {
      s.conflict = null
      s.lastSetReplicas = null
    }
    const reads = await Promise.all(s.t.actuators.map((a) => a.read().then((r) => ({ a, r }))))
    const readErrors = reads
      .filter((x) => !x.r.ok)
      .map((x) => `${x.a.name}: ${(x.r as { error: string }).error}`)
    const reading = mergeReadings(reads.flatMap((x) => (x.r.ok ? [x.r.reading] : [])))
    if (readErrors.length > 0)
      setCondition(s, 'AbleToScale', 'False', 'FailedGetScale', readErrors.join('; '), nowMs)
    else setCondition(s, 'AbleToScale', 'True', 'ReadyForNewScale', 'every actuator answers', nowMs)

    const replicasNow = reading.replicas
    if (mode === 'enforce' && s.lastMode !== 'enforce') {
      // Entering enforce (or leading anew): start from what the fleet runs now.
      s.lastSetReplicas = null
      s.setpoints = {
        desiredReplicas: replicasNow?.desired ?? s.setpoints.desiredReplicas,
        batchWindowMs: reading.batching?.windowMs ?? s.setpoints.batchWindowMs,
        maxBatch: reading.batching?.maxBatch ?? s.setpoints.maxBatch,
        admission:
          reading.admission && reading.admission.length >= s.rails.classes
            ? reading.admission.slice(0, s.rails.classes)
            : s.setpoints.admission,
      }
      s.policyState = s.t.policy.init(s.setpoints)
      s.rail = INITIAL_RAIL_STATE
      const n = s.setpoints.desiredReplicas
      if (s.rails.knobs.includes('replicas') && n < s.rails.minReplicas) {
        const goal = Math.max(s.rails.minReplicas, Math.min(s.rails.maxReplicas, s.t.config.initial.replicas))
        s.rail = {
          ...INITIAL_RAIL_STATE,
          goalReplicas: goal,
          scaleReason: `the fleet runs ${n} replica(s), below the minimum of ${s.rails.minReplicas}: starting ${goal}`,
        }
      }
    }
    s.lastMode = mode
    if (replicasNow && mode === 'enforce') {
      if (s.lastSetReplicas === null) s.lastSetReplicas = replicasNow.desired
      else if (
        replicasNow.desired !== s.lastSetReplicas &&
        !s.conflict &&
        s.rails.knobs.includes('replicas')
      ) {
        s.conflict = {
          sinceMs: nowMs,
          message: `the replica count is ${replicasNow.desired}, tailguard last set ${s.lastSetReplicas}: another controller (an HPA?) scales this target; tailguard stops acting on it until its mode is set again (POST /api/v1/controllers/${s.name}/mode)`,
        }
      }
      s.setpoints = {
        ...s.setpoints,
        desiredReplicas: s.conflict ? s.setpoints.desiredReplicas : replicasNow.desired,
      }
    }
    const before = s.setpoints

    // Freshness: the store keeps last-seen times to within one finest step.
    const ageMs = newestMs === null ? Infinity : Math.max(0, nowMs - newestMs - stepMs)
    const wasStale = s.stale
    s.stale = ageMs > staleLimitMs
    if (s.stale)
      setCondition(
        s,
        'MetricsStale',
        'True',
        'NoRecentData',
        newestMs === null
          ? 'no data for this target yet'
          : `newest data ${Math.round(ageMs / 1000)} s old (limit ${staleLimitMs / 1000} s): holding every setpoint`,
        nowMs,
      )
    else
      setCondition(
        s,
        'MetricsStale',
        'False',
        'FreshData',
        `the newest data is within the ${staleLimitMs / 1000} s limit`,
        nowMs,
      )
    if (s.conflict)
      setCondition(s, 'ConflictingController', 'True', 'ReplicasChangedOutside', s.conflict.message, nowMs)
    else
      setCondition(
        s,
        'ConflictingController',
        'False',
        'NoConflict',
        'the replica count is as tailguard set it',
        nowMs,
      )

    const active = !s.stale && !s.conflict && mode === 'enforce'
    setCondition(
      s,
      'ScalingActive',
      active ? 'True' : 'False',
      s.stale
        ? 'MetricsStale'
        : s.conflict
          ? 'ConflictingController'
          : mode === 'observe'
            ? 'ObserveMode'
            : 'ValidMetricFound',
      s.stale
        ? 'frozen: the metrics are stale'
        : s.conflict
          ? 'not acting: another controller changes the replica count'
          : mode === 'observe'
            ? 'observe mode: decisions are stored, nothing is changed'
            : `the policy ${s.t.policy.name} is acting`,
      nowMs,
    )

    let result: { id: number; outcome: string } | null = null
    const ready = replicasNow ? replicasNow.ready : replicaLabels
    const starting = replicasNow ? replicasNow.starting : 0

    // Rollback: restore the setpoints from before the last applied decision, then observe.
    if (rec.rollbackRequestedMs !== null) {
      const lastApplied = await cs.lastApplied(s.name)
      const target = (lastApplied?.setpointsBefore as Setpoints | undefined) ?? initialSetpoints(s.t.config)
      const all: Action[] = [
        { kind: 'scale', desiredReplicas: target.desiredReplicas, reason: 'rollback' },
        { kind: 'batching', windowMs: target.batchWindowMs, maxBatch: target.maxBatch, reason: 'rollback' },
        ...target.admission.map((a, priorityClass) => ({
          kind: 'admission' as const,
          priorityClass,
          ...a,
          reason: 'rollback',
        })),
      ]
      const actions = all.filter((a) => s.rails.knobs.includes(a.kind === 'scale' ? 'replicas' : a.kind))
      const reason = `rollback requested through the API: restoring the setpoints from before decision ${lastApplied ? `#${lastApplied.id}` : '(none applied: the initial ones)'}, then observe mode`
      const id = await record(s, nowMs, mode, {
        observation: null,
        prediction: null,
        actions,
        before,
        after: target,
        reason,
        outcome: 'pending',
        detail: null,
      })
      if (id === null) return null
      const r = await actuate(s, id, before, target, actions, reason)
      await cs.setOutcome(id, r.ok ? 'applied' : 'failed', r.detail)
      s.setpoints = r.inForce
      s.policyState = s.t.policy.init(s.setpoints)
      s.rail = INITIAL_RAIL_STATE
      await cs.setMode(s.name, 'observe', nowMs)
      await cs.clearRollback(s.name, rec.rollbackRequestedMs)
      return { id, outcome: r.ok ? 'applied' : 'failed' }
    }

    // The replica floor holds without data too: a fleet below minReplicas (nothing started yet, or its
    // processes gone) gets its minimum, since replicas that do not run send no data to unfreeze it.
    if (
      s.stale &&
      !s.conflict &&
      mode === 'enforce' &&
      s.rails.knobs.includes('replicas') &&
      replicasNow &&
      replicasNow.desired < s.rails.minReplicas
    ) {
      const goal = Math.max(s.rails.minReplicas, Math.min(s.rails.maxReplicas, s.t.config.initial.replicas))
      const floor = applyRails(
        [
          {
            kind: 'scale',
            desiredReplicas: goal,
            reason: `the fleet runs ${replicasNow.desired} replica(s), below the minimum of ${s.rails.minReplicas}: starting ${goal}`,
          },
        ],
        before,
        s.rails,
        s.rail,
      )
      s.rail = floor.state
      const after = applyActions(before, floor.actions)
      const reason = [
        ...floor.actions.map((a) => `${a.kind}: ${a.reason}`),
        ...floor.notes,
        `no policy step (${s.conditions.get('MetricsStale')!.message})`,
      ].join('; ')
      const id = await record(s, nowMs, mode, {
        observation: null,
        prediction: null,
        actions: floor.actions,
        before,
        after,
        reason,
        outcome: 'pending',
        detail: null,
      })
      if (id === null) return null
      const r = await actuate(s, id, before, after, floor.actions, reason)
      await cs.setOutcome(id, r.ok ? 'applied' : 'failed', r.detail)
      s.setpoints = r.inForce
      // The policy started from the count below the floor; it starts again from the one in force.
      s.policyState = s.t.policy.init(s.setpoints)
      noteActuation(s, r, after.desiredReplicas, nowMs)
      return { id, outcome: r.ok ? 'applied' : 'failed' }
    }

    if (s.stale || s.conflict) {
      // Freeze: hold every setpoint. Store one decision when the freeze starts, so the timeline shows it.
      const startsNow = (s.stale && !wasStale) || (s.conflict !== null && s.conflict.sinceMs === nowMs)
      if (startsNow) {
        const why =
          s.conflict && s.conflict.sinceMs === nowMs
            ? s.conflict.message
            : s.conditions.get('MetricsStale')!.message
        const id = await record(s, nowMs, mode, {
          observation: null,
          prediction: null,
          actions: [],
          before,
          after: before,
          reason: `frozen: ${why}`,
          outcome: 'skipped',
          detail: s.conflict ? 'ConflictingController' : 'MetricsStale',
        })
        if (id !== null) result = { id, outcome: 'skipped' }
      }
      setCondition(s, 'ScalingLimited', 'False', 'DesiredWithinRange', 'no change while frozen', nowMs)
      return result
    }

    // A closed bucket is read once: with an interval shorter than the store's step, consecutive steps see
    // the same newest bucket, and its histograms are the costly part of an observation (decode and merge).
    const cached: ObservationReader = {
      counts: (sel, range) => reader.counts(sel, range),
      ...(reader.signals ? { signals: reader.signals.bind(reader) } : {}),
      ...(reader.budgetRemaining ? { budgetRemaining: reader.budgetRemaining.bind(reader) } : {}),
      ...(reader.gpuUtilization ? { gpuUtilization: reader.gpuUtilization.bind(reader) } : {}),
      histograms: async (sel, range, metrics) => {
        const key = `${range.fromMs}:${range.toMs}:${metrics.join(',')}`
        if (s.histCache?.key === key) return s.histCache.value
        const value = await reader.histograms(sel, range, metrics)
        s.histCache = { key, value }
        return value
      },
    }
    const obs = foldClasses(
      await buildObservation(cached, s.observed, nowMs, {
        intervalMs: interval,
        stepMs,
        settleMs,
        ticks: s.ticks,
        replicas: { ready, starting },
      }),
      s.rails.classes,
    )
    let policyActions: readonly Action[]
    try {
      const out = s.t.policy.step(s.policyState, obs, nowMs)
      s.policyState = out.state
      policyActions = out.actions
    } catch (err) {
      log.error(`policy ${s.t.policy.name} failed on ${s.name}: ${(err as Error).message}`)
      policyActions = []
    }
    const railed = applyRails(policyActions, before, s.rails, s.rail)
    s.rail = railed.state
    if (railed.limited)
      setCondition(s, 'ScalingLimited', 'True', railed.limited.reason, railed.limited.message, nowMs)
    else
      setCondition(
        s,
        'ScalingLimited',
        'False',
        'DesiredWithinRange',
        'the desired setpoints are within the bounds',
        nowMs,
      )

    if (railed.actions.length > 0) {
      const after = applyActions(before, railed.actions)
      const reason = [...railed.actions.map((a) => `${a.kind}: ${a.reason}`), ...railed.notes].join('; ')
      const enforce = mode === 'enforce'
      const id = await record(s, nowMs, mode, {
        observation: obs,
        prediction: predict(obs, after),
        actions: railed.actions,
        before,
        after,
        reason,
        outcome: enforce ? 'pending' : 'skipped',
        detail: enforce ? null : 'observe mode: recommendation only, nothing changed',
      })
      if (id === null) return null
      if (enforce) {
        const r = await actuate(s, id, before, after, railed.actions, reason)
        await cs.setOutcome(id, r.ok ? 'applied' : 'failed', r.detail)
        s.setpoints = r.inForce
        noteActuation(
          s,
          r,
          railed.actions.some((a) => a.kind === 'scale') ? after.desiredReplicas : null,
          nowMs,
        )
        result = { id, outcome: r.ok ? 'applied' : 'failed' }
      } else {
        // Observe: the recommendation stands as the setpoints shown; the fleet keeps what it has.
        s.setpoints = after
        result = { id, outcome: 'skipped' }
      }
      s.effects.push({ id, dueMs: nowMs + effectAfter, before: snapshot(obs, nowMs) })
    }
    // Effects of earlier decisions, measured now.
    const due = s.effects.filter((e) => e.dueMs <= nowMs)
    if (due.length > 0) {
      s.effects = s.effects.filter((e) => e.dueMs > nowMs)
      const after = snapshot(obs, nowMs)
      for (const e of due) await cs.setEffect(e.id, { before: e.before, after }, nowMs)
    }
    return result
  }

  /** One pass: lease upkeep for every target, and a control step for each led target that is due. */
  async function round(nowMs = clock()): Promise<RoundResult> {
    await register(nowMs)
    const rows = new Map((await cs.list()).map((r) => [r.target, r]))
    let services: ServiceInfo[] | null = null
    const decisions: Array<{ target: string; id: number; outcome: string }> = []
    for (const s of states) {
      if (stopped) break
      const rec = rows.get(s.name)
      if (!rec) continue
      // Only ask for an expired lease or renew our own: a standby reads, it does not write.
      const ours = rec.leaseHolder === holder && s.token !== null
      if (!ours && rec.leaseExpiresMs > nowMs) {
        s.token = null
        continue
      }
      const due = nowMs - s.lastStepMs >= interval
      if (ours && !due && rec.leaseExpiresMs - nowMs > ttl / 2) continue
      const lease = await cs.acquireLease(s.name, holder, nowMs, ttl)
      if (!lease.held) {
        s.token = null
        continue
      }
      if (lease.acquired || s.token !== lease.fencingToken)
        await becomeLeader(s, rec, lease.fencingToken, nowMs)
      if (!due) continue
      s.lastStepMs = nowMs
      services ??= await o.store.services()
      let newest: number | null = null
      const replicaNames = new Set<string>()
      for (const i of services)
        if (matches(s.observed.selector, i)) {
          if (newest === null || i.lastSeenMs > newest) newest = i.lastSeenMs
          if (nowMs - i.lastSeenMs <= staleLimitMs + stepMs) replicaNames.add(`${i.node}\u0000${i.replica}`)
        }
      try {
        const r = await stepTarget(s, { ...rec, mode: rec.mode }, newest, replicaNames.size, nowMs)
        if (r) decisions.push({ target: s.name, ...r })
        // The status row is written when it changes (the lease row already says the leader is alive).
        const status = JSON.stringify([s.token, s.setpoints, [...s.conditions.values()]])
        if (s.token !== null && status !== s.lastStatus) {
          await cs.putStatus(s.name, holder, s.token, {
            setpoints: s.setpoints,
            conditions: [...s.conditions.values()],
            nowMs,
          })
          s.lastStatus = status
        }
      } catch (err) {
        log.error(`controller step for ${s.name} failed: ${(err as Error).message}`)
      }
    }
    if (o.onView) for (const s of states) await publishView(s, rows.get(s.name), nowMs)
    return { leading: states.filter((s) => s.token !== null).map((s) => s.name), decisions }
  }

  /** Calls `onView` for a target: from memory where this process leads it, else from the stored status. */
  async function publishView(s: TargetState, rec: ControllerRecord | undefined, nowMs: number) {
    if (!rec) return
    const leading = s.token !== null
    let decision = s.lastDecision
    if (!leading && rec.lastDecisionId !== null && decision?.id !== rec.lastDecisionId) {
      const d = await cs.decision(rec.lastDecisionId)
      decision = d
        ? {
            id: d.id,
            timeMs: d.timeMs,
            reason: d.reason,
            observation: (d.observation as FleetObservation | null) ?? null,
          }
        : null
      s.lastDecision = decision
    }
    const stored = rec.setpoints as Setpoints | null
    o.onView!({
      name: s.name,
      config: s.t.config,
      mode: rec.mode,
      setpoints: leading || !stored ? s.setpoints : stored,
      conditions: leading ? [...s.conditions.values()] : rec.conditions,
      leading,
      minReplicas: s.rails.minReplicas,
      intervalMs: interval,
      staleAfterMs: staleLimitMs,
      decision,
      nowMs,
    })
  }

  return {
    holder,
    round,
    /** Runs rounds every quarter interval (lease upkeep; steps fall due every interval). */
    start(): void {
      const tickMs = Math.max(50, Math.floor(interval / 4))
      const tick = () => {
        running = running
          .then(() => (stopped ? null : round()))
          .catch((err: unknown) => log.error(`controller round failed: ${(err as Error).message}`))
      }
      tick()
      timer = setInterval(tick, tickMs)
    },
    /** Stops, gives up the leases it holds (a standby takes over at once) and closes the actuators. */
    async stop(): Promise<void> {
      stopped = true
      if (timer) clearInterval(timer)
      await running
      for (const s of states)
        if (s.token !== null) await cs.releaseLease(s.name, holder, s.token).catch(() => undefined)
      for (const s of states) for (const a of s.t.actuators) await a.close?.()
    },
  }
}

/** A running live controller (see {@link createLiveController}). */
export type LiveController = ReturnType<typeof createLiveController>

/**
 * The observation with the queues of classes past the configured ones counted under the last configured class,
 * as the proxy admits them once the controller's setpoints list only those (an unlisted class goes under the
 * nearest listed one of lower priority, else the last). A proxy with its default three classes reports class 1
 * and 2 queues until then; the policy would size caps for classes no setpoint can carry.
 *
 * @example foldClasses(obs, 1).queueDepthByClass // [3] for [1, 2, 0]
 */
export function foldClasses(obs: FleetObservation, classes: number): FleetObservation {
  const q = obs.queueDepthByClass
  if (classes < 1 || q.length <= classes) return obs
  const folded = q.slice(0, classes)
  folded[classes - 1] = q.slice(classes - 1).reduce((a, b) => a + b, 0)
  return { ...obs, queueDepthByClass: folded }
}

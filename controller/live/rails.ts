/**
 * Safety rails between a policy and the actuators: knobs the target allows, bounds, a maximum step per
 * interval, and hysteresis on scale-down. Pure functions of the actions, the current setpoints and the rail
 * state, so they are unit-tested and the same whether the policy is ours or a baseline.
 */
import type { Action, Setpoints } from '../policy.js'
import type { Knob } from './actuators/types.js'

/** The rails of one target (from its config: knobs and bounds). */
export interface Rails {
  readonly knobs: readonly Knob[]
  readonly minReplicas: number
  readonly maxReplicas: number
  readonly maxWindowMs: number
  readonly maxBatch: number
  readonly maxScaleUpStep: number
  readonly maxScaleDownStep: number
  readonly maxWindowStepMs: number
  /** Consecutive intervals that must ask for fewer replicas before one is removed. */
  readonly scaleDownStabilizationIntervals: number
  /** Priority classes the admission setpoints cover. */
  readonly classes: number
}

/** Rail defaults where the config leaves a bound out. */
export const RAIL_DEFAULTS = {
  maxWindowMs: 100,
  maxBatch: 256,
  maxScaleUpStep: 2,
  maxScaleDownStep: 1,
  maxWindowStepMs: 10,
  scaleDownStabilizationIntervals: 6,
} as const

/**
 * What the rails remember between intervals: the policy's last replica and batching wish (clamped to the
 * bounds), so a change cut by a step limit or held by hysteresis still happens in later intervals even if a
 * policy, believing it applied, does not ask again.
 */
export interface RailState {
  readonly goalReplicas: number | null
  readonly scaleReason: string
  /** Consecutive intervals the goal has been below the current count. */
  readonly downVotes: number
  readonly goalWindowMs: number | null
  readonly batchingReason: string
}

/** The rail state before the first interval. */
export const INITIAL_RAIL_STATE: RailState = {
  goalReplicas: null,
  scaleReason: '',
  downVotes: 0,
  goalWindowMs: null,
  batchingReason: '',
}

/** What the rails let through, what they held back and why. */
export interface RailsResult {
  readonly actions: readonly Action[]
  /** One line per change the rails made to the policy's wish. */
  readonly notes: readonly string[]
  /** Set when a bound or step limit cut a change (the ScalingLimited condition). */
  readonly limited: { readonly reason: string; readonly message: string } | null
  readonly state: RailState
}

const KNOB_OF: Readonly<Record<Action['kind'], Knob>> = {
  scale: 'replicas',
  batching: 'batching',
  admission: 'admission',
}

const finite = (x: number) => Number.isFinite(x)

/**
 * Applies the rails to a policy's actions.
 *
 * @example
 * ```ts
 * const r = applyRails([{ kind: 'scale', desiredReplicas: 9, reason: 'load' }], current, rails, INITIAL_RAIL_STATE)
 * r.actions // [{ kind: 'scale', desiredReplicas: 4, … }] when current is 2 (max step +2)
 * ```
 */
export function applyRails(
  actions: readonly Action[],
  current: Setpoints,
  rails: Rails,
  state: RailState,
): RailsResult {
  const notes: string[] = []
  let limited: RailsResult['limited'] = null
  const out: Action[] = []
  let { goalReplicas, scaleReason, downVotes, goalWindowMs, batchingReason } = state
  let maxBatch: number | null = null
  // The last action of each kind (and class) wins, as applyActions would apply them in order.
  const last = new Map<string, Action>()
  for (const a of actions) last.set(a.kind === 'admission' ? `admission:${a.priorityClass}` : a.kind, a)
  for (const a of last.values()) {
    if (!rails.knobs.includes(KNOB_OF[a.kind])) {
      notes.push(`${a.kind} not applied: knob '${KNOB_OF[a.kind]}' is not enabled for this target`)
      continue
    }
    if (a.kind === 'scale') {
      if (!finite(a.desiredReplicas)) {
        notes.push(`scale ignored: desired replicas ${a.desiredReplicas} is not a number`)
        continue
      }
      let want = Math.round(a.desiredReplicas)
      if (want < rails.minReplicas) {
        limited = {
          reason: 'TooFewReplicas',
          message: `the policy asked for ${want}, the minimum is ${rails.minReplicas}`,
        }
        want = rails.minReplicas
      } else if (want > rails.maxReplicas) {
        limited = {
          reason: 'TooManyReplicas',
          message: `the policy asked for ${want}, the maximum is ${rails.maxReplicas}`,
        }
        want = rails.maxReplicas
      }
      if (goalReplicas === null || want >= current.desiredReplicas || goalReplicas >= current.desiredReplicas)
        downVotes = 0
      goalReplicas = want
      scaleReason = a.reason
    } else if (a.kind === 'batching') {
      if (!finite(a.windowMs) || !finite(a.maxBatch)) {
        notes.push('batching ignored: window or max batch is not a number')
        continue
      }
      goalWindowMs = Math.min(rails.maxWindowMs, Math.max(0, a.windowMs))
      maxBatch = Math.min(rails.maxBatch, Math.max(1, Math.round(a.maxBatch)))
      if (goalWindowMs !== a.windowMs || maxBatch !== Math.round(a.maxBatch))
        notes.push(
          `batching bounded to window ${goalWindowMs} ms, max batch ${maxBatch} (asked ${a.windowMs} ms, ${a.maxBatch})`,
        )
      batchingReason = a.reason
    } else {
      if (
        !(a.priorityClass >= 0 && a.priorityClass < rails.classes) ||
        !finite(a.maxQueue) ||
        !finite(a.maxConcurrency)
      ) {
        notes.push(
          `admission for class ${a.priorityClass} ignored: outside the ${rails.classes} configured class(es) or not a number`,
        )
        continue
      }
      let mc = Math.max(0, Math.round(a.maxConcurrency))
      const mq = Math.max(0, Math.round(a.maxQueue))
      // The highest class is never shut out entirely: shedding is a valve, not a gate.
      if (a.priorityClass === 0 && mc < 1) {
        notes.push('class 0 keeps a concurrency of at least 1')
        mc = 1
      }
      const qt =
        a.queueTimeoutMs !== undefined && Number.isFinite(a.queueTimeoutMs)
          ? Math.max(1, Math.round(a.queueTimeoutMs))
          : undefined
      const have = current.admission[a.priorityClass]
      if (
        have &&
        have.maxQueue === mq &&
        have.maxConcurrency === mc &&
        (qt === undefined || have.queueTimeoutMs === qt)
      )
        continue
      out.push({
        kind: 'admission',
        priorityClass: a.priorityClass,
        maxQueue: mq,
        maxConcurrency: mc,
        ...(qt !== undefined ? { queueTimeoutMs: qt } : {}),
        reason: a.reason,
      })
    }
  }
  // Move the replica count toward the goal: up at once within the step, down after the stabilization window.
  const have = current.desiredReplicas
  if (goalReplicas !== null && goalReplicas !== have) {
    if (goalReplicas > have) {
      let want = goalReplicas
      if (want > have + rails.maxScaleUpStep) {
        limited = {
          reason: 'ScaleUpLimit',
          message: `${have} → ${goalReplicas} limited to +${rails.maxScaleUpStep} per interval`,
        }
        want = have + rails.maxScaleUpStep
      }
      out.push({
        kind: 'scale',
        desiredReplicas: want,
        reason: scaleReason + (want !== goalReplicas ? ` (step to ${want} of ${goalReplicas})` : ''),
      })
    } else {
      downVotes++
      if (downVotes < rails.scaleDownStabilizationIntervals) {
        notes.push(
          `scale-down ${have} → ${goalReplicas} held: ${downVotes} of ${rails.scaleDownStabilizationIntervals} intervals`,
        )
      } else {
        let want = goalReplicas
        if (want < have - rails.maxScaleDownStep) {
          limited = {
            reason: 'ScaleDownLimit',
            message: `${have} → ${goalReplicas} limited to −${rails.maxScaleDownStep} per interval`,
          }
          want = have - rails.maxScaleDownStep
        }
        out.push({
          kind: 'scale',
          desiredReplicas: want,
          reason: `${scaleReason} (after ${downVotes} intervals asking for fewer)`,
        })
        downVotes = 0
      }
    }
  } else downVotes = 0
  // Move the window toward the goal within the step.
  const haveW = current.batchWindowMs
  if (
    (goalWindowMs !== null && goalWindowMs !== haveW) ||
    (maxBatch !== null && maxBatch !== current.maxBatch)
  ) {
    let w = goalWindowMs ?? haveW
    if (Math.abs(w - haveW) > rails.maxWindowStepMs) {
      limited ??= {
        reason: 'WindowStepLimit',
        message: `window ${haveW} → ${w} ms limited to ±${rails.maxWindowStepMs} ms per interval`,
      }
      w = w > haveW ? haveW + rails.maxWindowStepMs : haveW - rails.maxWindowStepMs
    }
    out.push({
      kind: 'batching',
      windowMs: w,
      maxBatch: maxBatch ?? current.maxBatch,
      reason: batchingReason,
    })
  }
  return {
    actions: out,
    notes,
    limited,
    state: { goalReplicas, scaleReason, downVotes, goalWindowMs, batchingReason },
  }
}

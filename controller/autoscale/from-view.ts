import type { TargetView } from '../live/controller.js'
import type { Recommendation } from './recommendation.js'

const finiteOrNull = (v: number | undefined): number | null =>
  v !== undefined && Number.isFinite(v) ? v : null

/**
 * The recommendation autoscalers read for a target, from the live controller's view of it: the desired
 * replicas of its setpoints (the newest decision's, in observe mode too), its conditions, and the signals of
 * the observation behind the newest decision. Valid for the stale limit (3 intervals by default) after the
 * view was taken; scaling to zero is safe only when the policy asked for zero replicas, the target's minimum
 * allows it, and the data is fresh.
 *
 * @example board.publish(recommendationFromView(view))
 */
export function recommendationFromView(view: TargetView): Recommendation {
  const obs = view.decision?.observation ?? null
  const c = view.config
  const stale = view.conditions.some((k) => k.type === 'MetricsStale' && k.status === 'True')
  const shortest = obs ? Math.min(...Object.keys(obs.arrivalRps).map(Number)) : NaN
  return {
    ref: {
      service: c.service,
      ...(c.model !== undefined ? { model: c.model } : {}),
      ...(c.version !== undefined ? { version: c.version } : {}),
    },
    desiredReplicas: view.setpoints.desiredReplicas,
    currentReplicas: obs ? obs.replicas.ready + obs.replicas.starting : null,
    reason: view.decision?.reason ?? 'no decision yet: the initial setpoints',
    decisionId: view.decision ? String(view.decision.id) : null,
    mode: view.mode,
    decidedAtMs: view.decision?.timeMs ?? view.nowMs,
    validUntilMs: view.nowMs + view.staleAfterMs,
    conditions: view.conditions.map(({ type, status, reason, message }) => ({
      type,
      status,
      reason,
      message,
    })),
    signals: {
      queueDepth: obs ? finiteOrNull(obs.queueDepth) : null,
      concurrency: obs ? finiteOrNull(obs.queueDepth + obs.inFlight) : null,
      burnRate: obs ? finiteOrNull(obs.errorBudget.burnRate) : null,
      arrivalRps: obs ? finiteOrNull(obs.arrivalRps[shortest]) : null,
    },
    scaleToZeroSafe: view.setpoints.desiredReplicas === 0 && view.minReplicas === 0 && !stale,
  }
}

import type { ControllerTargetConfig } from '../../collector/index.js'
import type { Policy } from '../policy.js'
import { tailguardPolicy } from '../policies/tailguard/index.js'
import { BASELINE_POLICIES, createBaselinePolicy } from '../sim/scenario.js'
import type { BaselinePolicyName } from '../sim/scenario.js'

/** The policies a target may name in `policy:`: ours and the simulator's baselines. */
export const LIVE_POLICIES: readonly string[] = ['tailguard', ...BASELINE_POLICIES]

/** The policy a target runs when it names none. */
export const DEFAULT_LIVE_POLICY = 'tailguard'

/**
 * Builds a target's policy by name, with the target's objective and bounds as the workload knobs. Returns an
 * error naming the choices for an unknown name.
 *
 * @example createTargetPolicy('tailguard', target) // { ok: true, policy }
 */
export function createTargetPolicy(
  name: string,
  t: ControllerTargetConfig,
): { ok: true; policy: Policy<unknown> } | { ok: false; error: string } {
  if (name === 'tailguard')
    return {
      ok: true,
      policy: tailguardPolicy({
        sloMs: t.objective.thresholdMs,
        metric: t.objective.phase === 'ttft' ? 'ttft' : 'e2e',
        objective: t.objective.target ?? 0.99,
        minReplicas: t.bounds.minReplicas,
        maxReplicas: t.bounds.maxReplicas,
        ...(t.bounds.maxBatch !== undefined ? { maxBatchCap: t.bounds.maxBatch } : {}),
        ...(t.coldStartMs !== undefined ? { coldStartMs: t.coldStartMs } : {}),
      }) as Policy<unknown>,
    }
  if (!(BASELINE_POLICIES as readonly string[]).includes(name))
    return { ok: false, error: `unknown policy '${name}' (choose one of ${LIVE_POLICIES.join(', ')})` }
  return {
    ok: true,
    policy: createBaselinePolicy(name as BaselinePolicyName, {
      sloMs: t.objective.thresholdMs,
      minReplicas: t.bounds.minReplicas,
      maxReplicas: t.bounds.maxReplicas,
      maxBatch: t.initial.maxBatch,
    }),
  }
}

import { closestNames } from '../../collector/index.js'
import type { ControllerTargetConfig } from '../../collector/index.js'
import type { Policy } from '../policy.js'
import { tailguardPolicy } from '../policies/tailguard/index.js'
import type { TailguardOptions } from '../policies/tailguard/index.js'
import { BASELINE_POLICIES, createBaselinePolicy } from '../sim/scenario.js'
import type { BaselinePolicyName } from '../sim/scenario.js'

/** The policies a target may name in `policy:`: ours and the simulator's baselines. */
export const LIVE_POLICIES: readonly string[] = ['tailguard', ...BASELINE_POLICIES]

/** The policy a target runs when it names none. */
export const DEFAULT_LIVE_POLICY = 'tailguard'

/**
 * Builds a target's policy by name, with the target's objective and bounds as the workload knobs. The
 * `tailguard` policy also takes the config file's `policy.tailguard` options (`file`, already in ms): the
 * target's own objective and cold start win over them, and the file's replica bounds only narrow the
 * target's. Returns an error naming the choices for an unknown name.
 *
 * @example createTargetPolicy('tailguard', target, { headroom: 0.3 }) // { ok: true, policy }
 */
export function createTargetPolicy(
  name: string,
  t: ControllerTargetConfig,
  file: TailguardOptions = {},
): { ok: true; policy: Policy<unknown> } | { ok: false; error: string } {
  if (name === 'tailguard') {
    const minReplicas = Math.min(t.bounds.maxReplicas, Math.max(t.bounds.minReplicas, file.minReplicas ?? 0))
    const maxReplicas = Math.max(minReplicas, Math.min(t.bounds.maxReplicas, file.maxReplicas ?? Infinity))
    return {
      ok: true,
      policy: tailguardPolicy({
        ...file,
        sloMs: t.objective.thresholdMs,
        metric: t.objective.phase === 'ttft' ? 'ttft' : 'e2e',
        objective: t.objective.target ?? 0.99,
        minReplicas,
        maxReplicas,
        ...(t.bounds.maxBatch !== undefined ? { maxBatchCap: t.bounds.maxBatch } : {}),
        ...(t.coldStartMs !== undefined ? { coldStartMs: t.coldStartMs } : {}),
      }) as Policy<unknown>,
    }
  }
  if (!(BASELINE_POLICIES as readonly string[]).includes(name)) {
    const near = closestNames(name, LIVE_POLICIES, 1)[0]
    return {
      ok: false,
      error: `unknown policy '${name}'${near !== undefined ? `; did you mean '${near}'?` : ''} (choose one of ${LIVE_POLICIES.join(', ')})`,
    }
  }
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

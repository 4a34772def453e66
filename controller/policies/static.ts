import type { Policy, Setpoints } from '../policy.js'

/**
 * Static peak provisioning with fixed batching: the fleet keeps the replicas and batching it starts with
 * (sized for the peak, e.g. with `planCapacity`) and never acts.
 *
 * @example const p = staticPolicy(); runSimulation({ ...cfg, initial: { ...sp, desiredReplicas: 12 } }, p)
 */
export function staticPolicy(): Policy<Setpoints> {
  return {
    name: 'static',
    init: (initial) => initial,
    step: (state) => ({ state, actions: [] }),
  }
}

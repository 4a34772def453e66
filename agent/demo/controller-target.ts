import type { ControllerTargetConfig } from '../../collector/index.js'
import { DEMO_PROXY_CLASSES } from './serving.js'

/** Options of {@link demoControllerTarget}. */
export interface DemoControllerTargetOptions {
  /** `enforce` (what `tailguard start` runs) or `observe` (decide and store, change nothing). */
  readonly mode: 'observe' | 'enforce'
  /** The local agent's HTTP address, whose setpoints API carries the demo proxies' admission caps. */
  readonly agentUrl: string
  /** The agent's admin token (its setpoints API). */
  readonly agentToken: string
  /** Replicas the demo starts with (the least the controller keeps). */
  readonly replicas: number
  /** The most replicas the controller may run (default 6). */
  readonly maxReplicas?: number
  /** The demo's service (default demo-llm, as the serving demo names it). */
  readonly service?: string
}

/**
 * The controller target `tailguard start` gives its serving demo (`demo-llm`): the tailguard policy holds the
 * time to first token under 500 ms for 99% of requests by moving the admission caps of the demo's proxies
 * (through the agent's `PUT /v1/setpoints`, with fencing), the model servers' batching window and max batch,
 * and the replica count between the demo's starting replicas and `maxReplicas`. Replicas and batching go
 * through an in-process actuator over the demo's replica set, which `tailguard start` adds (no actuator of the
 * config file starts processes inside `start`). The initial setpoints are the demo's own, fleet-wide (the
 * proxies' caps summed); in enforce mode the controller reads the live ones before its first step.
 *
 * @example demoControllerTarget({ mode: 'enforce', agentUrl: 'http://127.0.0.1:4318', agentToken, replicas: 2 })
 */
export function demoControllerTarget(o: DemoControllerTargetOptions): ControllerTargetConfig {
  const replicas = Math.max(1, o.replicas)
  return {
    name: 'demo-llm',
    service: o.service ?? 'demo-llm',
    slos: [],
    objective: { thresholdMs: 500, phase: 'ttft', target: 0.99 },
    mode: o.mode,
    policy: 'tailguard',
    coldStartMs: 5000,
    knobs: ['admission', 'batching', 'replicas'],
    bounds: {
      minReplicas: replicas,
      maxReplicas: Math.max(replicas, o.maxReplicas ?? 6),
      maxWindowMs: 20,
      maxBatch: 64,
    },
    initial: {
      replicas,
      windowMs: 5,
      maxBatch: 16,
      admission: DEMO_PROXY_CLASSES.map((c) => ({
        maxQueue: c.maxQueue * replicas,
        maxConcurrency: c.maxConcurrency * replicas,
      })),
    },
    actuators: [{ type: 'agent', url: o.agentUrl, token: o.agentToken }],
  }
}

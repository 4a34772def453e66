import type { FleetObservation, Setpoints } from '../../../controller/index.js'

const none = { p50: null, p99: null, count: 0 }

/** An observation with everything quiet, overridden where a test cares. */
export function observation(o: Partial<FleetObservation> = {}): FleetObservation {
  return {
    intervalMs: 1000,
    arrivalRps: { 6: 0, 10: 0, 60: 0 },
    latencyMs: { queue: none, service: none, e2e: none, ttft: none, tpot: none },
    queueDepth: 0,
    queueDepthByClass: [0],
    inFlight: 0,
    concurrency: { 6: 0, 10: 0, 60: 0 },
    batchSize: { mean: 0, max: 0 },
    errorBudget: { remaining: 1, burnRate: 0 },
    gpuUtilization: 0,
    replicas: { ready: 1, starting: 0 },
    completed: 0,
    shed: 0,
    ...o,
  }
}

export function setpoints(desiredReplicas: number, maxBatch = 8): Setpoints {
  return { batchWindowMs: 5, maxBatch, admission: [{ maxQueue: 1e9, maxConcurrency: 1e9 }], desiredReplicas }
}

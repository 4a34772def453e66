import type { Recommendation } from '../../../controller/index.js'

/**
 * A recommendation as the controller publishes it, with overrides.
 *
 * @example recommendation({ desiredReplicas: 4 })
 */
export function recommendation(over: Partial<Recommendation> = {}): Recommendation {
  return {
    ref: { service: 'chat' },
    desiredReplicas: 3,
    currentReplicas: 2,
    reason: 'forecast 412 rps in 90 s, capacity 118 rps/replica at ttft p99 ≤ 2000 ms, need 4, have 3',
    decisionId: 'd-1',
    mode: 'observe',
    decidedAtMs: Date.UTC(2026, 10, 23, 1, 0, 0),
    validUntilMs: Date.UTC(2026, 10, 23, 1, 0, 15),
    conditions: [{ type: 'AbleToScale', status: 'True', reason: 'ReadyForNewScale', message: 'ok' }],
    signals: { queueDepth: 12, concurrency: 40, burnRate: 0.5, arrivalRps: 350 },
    scaleToZeroSafe: false,
    ...over,
  }
}

/**
 * Batching control for batch replicas: window T and max batch B so that T + S(B at p99) fits the share of the
 * latency budget the queue may use, with T = min(budget − S, √(S/λ)) (small windows at low load, larger when
 * throughput is needed). Falls back to AIMD on the max batch when the S(B) fit is not trusted.
 */
import { adaptiveWindowMs, largestBatchWithinLatency } from '../../queueing/batching.js'
import type { BatchServiceModel } from '../../queueing/batching.js'
import type { FleetObservation } from '../../policy.js'
import type { FittedModel } from './capacity.js'

/** A batching decision and the numbers behind it. */
export interface BatchingChoice {
  readonly windowMs: number
  readonly maxBatch: number
  readonly mode: 'model' | 'aimd'
  readonly reason: string
}

/**
 * Picks window and max batch from the fitted S(B).
 *
 * @example chooseBatching(fit, 1.2, 600, 100, 0.5, { windowMs: 10, maxBatch: 16 }, 256, obs).windowMs
 */
export function chooseBatching(
  fit: FittedModel,
  tail: number,
  perReplicaRps: number,
  sloMs: number,
  queueShare: number,
  current: { readonly windowMs: number; readonly maxBatch: number },
  cap: number,
  obs: FleetObservation,
): BatchingChoice {
  const budget = sloMs * queueShare
  if (!fit.trusted) return aimd(fit, budget, current, cap, obs)
  const m = fit.model
  const { windowMs, maxBatch } = batchingFor(m, tail, perReplicaRps, budget, cap)
  return {
    windowMs,
    maxBatch,
    mode: 'model',
    reason:
      `batching: S(B) = ${m.fixedMs.toFixed(2)} + ${m.perItemMs.toFixed(3)}·B ms (R² ${fit.r2.toFixed(2)}, ${fit.points} points), ` +
      `tail ×${tail.toFixed(2)}, ${perReplicaRps.toFixed(0)} req/s per replica: window min(budget − S, √(S/λ)) = ${windowMs} ms, ` +
      `max batch ${maxBatch} (T + S(B)·tail ≤ ${budget.toFixed(1)} ms, ${Math.round(queueShare * 100)}% of ${sloMs} ms)`,
  }
}

/**
 * The numbers of {@link chooseBatching} for a trusted S(B): window T = min(budget − S·tail, √(S/λ)) at the batch
 * it forms (a few rounds settle the window against the batch), then the largest B with T + S(B)·tail ≤ budget.
 *
 * @example batchingFor({ fixedMs: 5, perItemMs: 0.6 }, 1, 500, 50, 256) // { windowMs: …, maxBatch: … }
 */
export function batchingFor(
  m: BatchServiceModel,
  tail: number,
  perReplicaRps: number,
  budget: number,
  cap: number,
): { windowMs: number; maxBatch: number } {
  const s = (b: number) => m.fixedMs + m.perItemMs * b
  let window = 0
  let batch = 1
  for (let i = 0; i < 4; i++) {
    window = adaptiveWindowMs(budget - s(batch) * (tail - 1), s(batch), perReplicaRps)
    batch = Math.max(1, (perReplicaRps * window) / 1000)
  }
  const scaled = { fixedMs: m.fixedMs * tail, perItemMs: m.perItemMs * tail }
  let maxBatch = largestBatchWithinLatency(scaled, window, budget, cap)
  if (maxBatch < 1) {
    window = 0
    maxBatch = Math.max(1, largestBatchWithinLatency(scaled, 0, budget, cap))
  }
  return { windowMs: Math.round(window * 100) / 100, maxBatch }
}

function aimd(
  fit: FittedModel,
  budget: number,
  current: { readonly windowMs: number; readonly maxBatch: number },
  cap: number,
  obs: FleetObservation,
): BatchingChoice {
  const why = `fit ${fit.points} points, R² ${Number.isFinite(fit.r2) ? fit.r2.toFixed(2) : 'n/a'}: AIMD`
  const p99 = obs.latencyMs.service.p99
  if (p99 === null || obs.latencyMs.service.count === 0)
    return { ...current, mode: 'aimd', reason: `batching: ${why}, no batches this interval: hold` }
  const spent = current.windowMs + p99
  let maxBatch = current.maxBatch
  if (spent > budget) maxBatch = Math.max(1, Math.floor(current.maxBatch * 0.9))
  else if (obs.batchSize.max >= current.maxBatch) maxBatch = Math.min(cap, current.maxBatch + 1)
  return {
    windowMs: current.windowMs,
    maxBatch,
    mode: 'aimd',
    reason: `batching: ${why}: window ${current.windowMs} ms + service p99 ${p99.toFixed(1)} ms ${spent > budget ? '>' : '≤'} ${budget.toFixed(1)} ms → max batch ${maxBatch}`,
  }
}

import { describe, expect, it } from 'vitest'
import {
  erlangC,
  md1MeanWait,
  mm1MeanWait,
  mm1WaitPercentile,
  mmcMeanWait,
  mmcWaitPercentile,
  runSimulation,
  staticPolicy,
} from '../../../controller/index.js'
import type { ServiceNoise, SimConfig } from '../../../controller/index.js'

/** A c-server FIFO queue with Poisson arrivals: batch size 1, no window, every replica ready at t = 0. */
function queue(
  servers: number,
  rho: number,
  serviceMs: number,
  requests: number,
  noise: ServiceNoise,
  seed = 7,
): SimConfig {
  return {
    seed,
    arrivals: { kind: 'poisson', rps: (rho * servers * 1000) / serviceMs, maxRequests: requests },
    replica: { kind: 'batch', service: { fixedMs: serviceMs, perItemMs: 0 }, noise },
    initial: { batchWindowMs: 0, maxBatch: 1, admission: [], desiredReplicas: servers },
    warmPoolMin: servers,
    slo: { e2eMs: 1000 },
  }
}

const within5 = (actual: number, expected: number) =>
  expect(Math.abs(actual / expected - 1)).toBeLessThan(0.05)

describe('simulator against closed-form queueing theory (long seeded runs)', () => {
  it('M/M/1 at ρ = 0.7: mean and p99 waits within 5%', () => {
    const r = runSimulation(queue(1, 0.7, 5, 600_000, { kind: 'exponential' }), staticPolicy())
    within5(r.latencyMs.queue.mean, mm1MeanWait(5, 0.7))
    within5(r.latencyMs.queue.p99, mm1WaitPercentile(5, 0.7, 0.99))
    // Time in system is exponential with mean S/(1−ρ).
    within5(r.latencyMs.e2e.mean, 5 / 0.3)
    within5(r.latencyMs.e2e.p99, (Math.log(100) * 5) / 0.3)
  })

  it('M/M/4 at ρ = 0.8: mean and p99 waits within 5% of Erlang C', () => {
    const c = 4
    const load = 0.8 * c
    const r = runSimulation(queue(c, 0.8, 5, 800_000, { kind: 'exponential' }), staticPolicy())
    expect(erlangC(c, load)).toBeGreaterThan(0.5)
    within5(r.latencyMs.queue.mean, mmcMeanWait(c, load, 5))
    within5(r.latencyMs.queue.p99, mmcWaitPercentile(c, load, 5, 0.99))
  })

  it('M/D/1 at ρ = 0.6: mean wait within 5% of Pollaczek–Khinchine', () => {
    const r = runSimulation(queue(1, 0.6, 5, 300_000, { kind: 'none' }), staticPolicy())
    within5(r.latencyMs.queue.mean, md1MeanWait(5, 0.6))
  })

  it("Little's law holds in the simulation: mean number waiting = λ · mean wait", () => {
    // Sample queue depth through the policy's observations.
    const depths: number[] = []
    const probe = {
      name: 'probe',
      init: () => null,
      step: (s: null, obs: { queueDepth: number }) => {
        depths.push(obs.queueDepth)
        return { state: s, actions: [] }
      },
    }
    const r = runSimulation(queue(1, 0.8, 5, 400_000, { kind: 'exponential' }), probe)
    const meanDepth = depths.reduce((a, b) => a + b, 0) / depths.length
    const lambdaPerMs = 0.8 / 5
    expect(Math.abs(meanDepth / (lambdaPerMs * r.latencyMs.queue.mean) - 1)).toBeLessThan(0.1)
  })

  it('same seed, same result; another seed, another result', () => {
    const cfg = queue(2, 0.75, 5, 50_000, { kind: 'lognormal', cv: 0.5 })
    const a = runSimulation(cfg, staticPolicy())
    const b = runSimulation(cfg, staticPolicy())
    expect(JSON.stringify(b)).toBe(JSON.stringify(a))
    const c = runSimulation({ ...cfg, seed: 8 }, staticPolicy())
    expect(c.latencyMs.e2e.mean).not.toBe(a.latencyMs.e2e.mean)
  })
})

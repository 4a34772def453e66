import { describe, expect, it } from 'vitest'
import { aimdPolicy } from '../../../controller/index.js'
import type { AimdState } from '../../../controller/index.js'
import { observation, setpoints } from './fixtures.js'

const svc = (p99: number, batchMax: number, e2eP50: number, inFlight = 100) =>
  observation({
    latencyMs: {
      queue: { p50: 1, p99: 1, count: 10 },
      service: { p50: p99, p99, count: 10 },
      e2e: { p50: e2eP50, p99: e2eP50 * 2, count: 10 },
      ttft: { p50: null, p99: null, count: 0 },
      tpot: { p50: null, p99: null, count: 0 },
    },
    batchSize: { mean: batchMax, max: batchMax },
    inFlight,
    replicas: { ready: 2, starting: 0 },
  })

describe('Clipper AIMD batching', () => {
  const p = aimdPolicy({ sloMs: 20 })
  it('adds one to the max batch while full batches finish under the objective', () => {
    const out = p.step(p.init(setpoints(2, 8)), svc(10, 8, 5), 0)
    expect(out.state.maxBatch).toBe(9)
    expect(out.actions.find((a) => a.kind === 'batching')).toMatchObject({ maxBatch: 9 })
  })
  it('does not grow when batches do not fill', () => {
    expect(p.step(p.init(setpoints(2, 8)), svc(10, 3, 5), 0).state.maxBatch).toBe(8)
  })
  it('cuts by 10% when the batch p99 reaches the objective', () => {
    expect(p.step(p.init(setpoints(2, 30)), svc(25, 30, 5), 0).state.maxBatch).toBe(27)
  })
})

describe('Gradient2 limiter', () => {
  const p = aimdPolicy({ sloMs: 1000, minLimit: 4, initialLimit: 20 })
  it('shrinks the limit when the short RTT rises well above the long RTT', () => {
    let s: AimdState = p.init(setpoints(2))
    for (let i = 0; i < 20; i++) s = p.step(s, svc(1, 1, 10), i * 1000).state
    const before = s.limit
    for (let i = 0; i < 5; i++) s = p.step(s, svc(1, 1, 60), (20 + i) * 1000).state
    expect(s.limit).toBeLessThan(before)
  })
  it('does not grow while app-limited (in-flight under half the limit)', () => {
    let s: AimdState = p.init(setpoints(2))
    for (let i = 0; i < 20; i++) s = p.step(s, svc(1, 1, 10, 2), i * 1000).state
    expect(s.limit).toBe(20)
  })
  it('applies the limit per ready replica as an admission cap on every class', () => {
    const out = p.step(p.init(setpoints(2)), svc(1, 1, 10), 0)
    const adm = out.actions.filter((a) => a.kind === 'admission')
    expect(adm).toHaveLength(1)
    expect(adm[0]).toMatchObject({ priorityClass: 0, maxConcurrency: Math.floor(out.state.limit * 2) })
  })
})

import { describe, expect, it } from 'vitest'
import { kpaPolicy } from '../../../controller/index.js'
import type { KpaState } from '../../../controller/index.js'
import { observation, setpoints } from './fixtures.js'

const conc = (stable: number, panic: number, ready: number) =>
  observation({ concurrency: { 6: panic, 10: panic, 60: stable }, replicas: { ready, starting: 0 } })

describe('Knative KPA', () => {
  const p = kpaPolicy({ containerConcurrency: 10 }) // target 7 per replica

  it('stable mode: ceil(60 s concurrency / (70% · containerConcurrency))', () => {
    const out = p.step(p.init(setpoints(1)), conc(20, 20, 3), 0)
    expect(out.actions).toEqual([expect.objectContaining({ kind: 'scale', desiredReplicas: 3 })])
    expect(out.state.panicSinceMs).toBeNull()
  })

  it('panics at 200% of ready capacity over 6 s and does not scale down until 60 s calm', () => {
    let s: KpaState = p.init(setpoints(1))
    let out = p.step(s, conc(7, 40, 1), 0) // 40/7 = 5.7 ≥ 2 × 1 ready → panic
    expect(out.state.panicSinceMs).toBe(0)
    expect(out.state.desired).toBe(6)
    s = out.state
    out = p.step(s, conc(7, 7, 6), 30_000) // calm, but within 60 s of panic: hold 6
    expect(out.actions).toEqual([])
    s = out.state
    out = p.step(s, conc(7, 7, 6), 61_000) // 60 s without panic → stable: 1, limited to ready/2
    expect(out.state.panicSinceMs).toBeNull()
    expect(out.state.desired).toBe(3)
  })

  it('ticks every 2 s', () => {
    const s = p.step(p.init(setpoints(1)), conc(20, 20, 1), 0).state
    expect(p.step(s, conc(70, 70, 1), 1000).actions).toEqual([])
  })
})

import { describe, expect, it } from 'vitest'
import { applyActions, staticPolicy } from '../../controller/index.js'
import { observation, setpoints } from './policies/fixtures.js'

describe('applyActions', () => {
  it('applies scale, batching and per-class admission actions in order', () => {
    const sp = {
      ...setpoints(2),
      admission: [
        { maxQueue: 1, maxConcurrency: 1 },
        { maxQueue: 1, maxConcurrency: 1 },
      ],
    }
    const out = applyActions(sp, [
      { kind: 'scale', desiredReplicas: 5, reason: 'a' },
      { kind: 'batching', windowMs: 3, maxBatch: 32, reason: 'b' },
      { kind: 'admission', priorityClass: 1, maxQueue: 10, maxConcurrency: 20, reason: 'c' },
      { kind: 'scale', desiredReplicas: 4.6, reason: 'd' },
    ])
    expect(out).toEqual({
      batchWindowMs: 3,
      maxBatch: 32,
      admission: [
        { maxQueue: 1, maxConcurrency: 1 },
        { maxQueue: 10, maxConcurrency: 20 },
      ],
      desiredReplicas: 5,
    })
    // The input is not modified.
    expect(sp.desiredReplicas).toBe(2)
  })
  it('clamps nonsense: negative replicas and windows, batches below one', () => {
    const out = applyActions(setpoints(2), [
      { kind: 'scale', desiredReplicas: -3, reason: 'x' },
      { kind: 'batching', windowMs: -1, maxBatch: 0, reason: 'y' },
    ])
    expect(out).toMatchObject({ desiredReplicas: 0, batchWindowMs: 0, maxBatch: 1 })
  })
  it('the static policy never acts', () => {
    const p = staticPolicy()
    const s = p.init(setpoints(3))
    expect(p.step(s, observation({ gpuUtilization: 1, queueDepth: 1e6 }), 0).actions).toEqual([])
  })
})

import { describe, expect, it } from 'vitest'
import { applyRails, INITIAL_RAIL_STATE } from '../../../controller/index.js'
import type { Action, Rails, Setpoints } from '../../../controller/index.js'

const rails: Rails = {
  knobs: ['replicas', 'batching', 'admission'],
  minReplicas: 1,
  maxReplicas: 8,
  maxWindowMs: 50,
  maxBatch: 32,
  maxScaleUpStep: 2,
  maxScaleDownStep: 1,
  maxWindowStepMs: 10,
  scaleDownStabilizationIntervals: 3,
  classes: 2,
}
const sp = (desiredReplicas: number, batchWindowMs = 5): Setpoints => ({
  desiredReplicas,
  batchWindowMs,
  maxBatch: 8,
  admission: [
    { maxQueue: 64, maxConcurrency: 16 },
    { maxQueue: 64, maxConcurrency: 16 },
  ],
})
const scale = (n: number): Action => ({ kind: 'scale', desiredReplicas: n, reason: `want ${n}` })

describe('safety rails', () => {
  it('bounds replicas and limits the step up; the goal is kept so later intervals finish the climb', () => {
    const r1 = applyRails([scale(20)], sp(2), rails, INITIAL_RAIL_STATE)
    expect(r1.actions).toEqual([expect.objectContaining({ kind: 'scale', desiredReplicas: 4 })])
    expect(r1.limited?.reason).toBe('ScaleUpLimit')
    // The policy says nothing more; the rails carry on to the bound (8), never past it.
    const r2 = applyRails([], sp(4), rails, r1.state)
    expect(r2.actions).toEqual([expect.objectContaining({ desiredReplicas: 6 })])
    const r3 = applyRails([], sp(6), rails, r2.state)
    expect(r3.actions).toEqual([expect.objectContaining({ desiredReplicas: 8 })])
    expect(applyRails([], sp(8), rails, r3.state).actions).toEqual([])
  })

  it('carries an admission action’s queue timeout, and a timeout change alone is a change', () => {
    const adm = (queueTimeoutMs?: number): Action => ({
      kind: 'admission',
      priorityClass: 1,
      maxQueue: 64,
      maxConcurrency: 16,
      ...(queueTimeoutMs !== undefined ? { queueTimeoutMs } : {}),
      reason: 'shed',
    })
    const r = applyRails([adm(23.4)], sp(2), rails, INITIAL_RAIL_STATE)
    expect(r.actions).toEqual([
      expect.objectContaining({ kind: 'admission', maxConcurrency: 16, queueTimeoutMs: 23 }),
    ])
    // Same caps and no timeout: nothing to send.
    expect(applyRails([adm()], sp(2), rails, INITIAL_RAIL_STATE).actions).toEqual([])
  })

  it('never goes below the minimum, not even to zero', () => {
    const r = applyRails([scale(0)], sp(1), rails, INITIAL_RAIL_STATE)
    expect(r.actions).toEqual([])
    expect(r.limited?.reason).toBe('TooFewReplicas')
  })

  it('scales down only after the stabilization window, one replica at a time (hysteresis)', () => {
    let st = INITIAL_RAIL_STATE
    let r = applyRails([scale(2)], sp(4), rails, st)
    expect(r.actions).toEqual([])
    expect(r.notes[0]).toMatch(/held: 1 of 3/)
    st = r.state
    r = applyRails([], sp(4), rails, st)
    expect(r.actions).toEqual([])
    r = applyRails([], sp(4), rails, r.state)
    expect(r.actions).toEqual([expect.objectContaining({ kind: 'scale', desiredReplicas: 3 })])
    // An upward wish in between resets the count.
    const up = applyRails(
      [scale(5)],
      sp(4),
      rails,
      applyRails([scale(2)], sp(4), rails, INITIAL_RAIL_STATE).state,
    )
    expect(up.actions).toEqual([expect.objectContaining({ desiredReplicas: 5 })])
    expect(up.state.downVotes).toBe(0)
  })

  it('limits the window step and bounds window and max batch', () => {
    const r = applyRails(
      [{ kind: 'batching', windowMs: 400, maxBatch: 999, reason: 'throughput' }],
      sp(2, 5),
      rails,
      INITIAL_RAIL_STATE,
    )
    expect(r.actions).toEqual([{ kind: 'batching', windowMs: 15, maxBatch: 32, reason: 'throughput' }])
    expect(r.limited?.reason).toBe('WindowStepLimit')
    expect(r.notes.join()).toMatch(/bounded to window 50 ms, max batch 32/)
  })

  it('drops knobs that are not enabled, bad numbers, and never shuts class 0 out', () => {
    const r = applyRails(
      [
        { kind: 'admission', priorityClass: 0, maxQueue: 0, maxConcurrency: 0, reason: 'shed' },
        { kind: 'admission', priorityClass: 5, maxQueue: 1, maxConcurrency: 1, reason: 'x' },
        { kind: 'scale', desiredReplicas: Number.NaN, reason: 'nan' },
      ],
      sp(2),
      rails,
      INITIAL_RAIL_STATE,
    )
    expect(r.actions).toEqual([
      { kind: 'admission', priorityClass: 0, maxQueue: 0, maxConcurrency: 1, reason: 'shed' },
    ])
    expect(r.notes.join('\n')).toMatch(/class 5 ignored/)
    expect(r.notes.join('\n')).toMatch(/not a number/)
    const noKnob = applyRails([scale(3)], sp(2), { ...rails, knobs: ['admission'] }, INITIAL_RAIL_STATE)
    expect(noKnob.actions).toEqual([])
    expect(noKnob.notes[0]).toMatch(/knob 'replicas' is not enabled/)
  })
})

import { describe, expect, it } from 'vitest'
import { createAdmission, createSetpointsGroup, createSetpointsState } from '../../../agent/index.js'

const item = { priorityClass: 0, maxConcurrency: 4, maxQueue: 8, queueTimeoutMs: 100 }

describe('setpoints state', () => {
  it('keeps the last setpoints when the controller goes quiet, and says they are stale', () => {
    let now = 1_000_000
    const admission = createAdmission({ classes: [item], gradient2: {} })
    const sp = createSetpointsState({ admission, staleAfterMs: 60_000, clock: () => now })
    now += 120_000
    // Config setpoints are never stale: nobody is expected to refresh them.
    expect(sp.view()).toMatchObject({ source: 'config', stale: false, limit: 20 })
    const put = sp.put({ admission: [{ ...item, maxConcurrency: 2 }], fencingToken: 1, source: 'ctl' })
    expect(put.kind).toBe('ok')
    now += 59_000
    expect(sp.view().stale).toBe(false)
    now += 2_000
    expect(sp.view()).toMatchObject({ stale: true, source: 'ctl', fencingToken: 1, limit: null })
    expect(sp.view().admission[0]!.maxConcurrency).toBe(2)
    expect(sp.put({ admission: [item], fencingToken: 0 })).toEqual({ kind: 'fenced', highest: 1 })
    expect(sp.put({ admission: [item], fencingToken: 2 }).kind).toBe('ok')
    expect(sp.view().stale).toBe(false)
  })
})

describe('setpoints group (proxies that share a fleet-wide cap)', () => {
  const member = () =>
    createSetpointsState({
      admission: createAdmission({ classes: [item, { ...item, priorityClass: 1 }], gradient2: {} }),
      staleAfterMs: 60_000,
    })

  it('shows the sum over its members and splits a PUT among them, fencing as one', () => {
    const group = createSetpointsGroup()
    expect(group.put({ admission: [item] })).toMatchObject({ kind: 'invalid' })
    const [a, b] = [member(), member()]
    group.join([a, b])
    expect(group.view().admission.map((c) => [c.maxConcurrency, c.maxQueue])).toEqual([
      [8, 16],
      [8, 16],
    ])
    const out = group.put({
      admission: [
        { ...item, maxConcurrency: 5, maxQueue: 1_000_000 },
        { ...item, priorityClass: 1, maxConcurrency: 0, maxQueue: 0 },
      ],
      fencingToken: 3,
      source: 'ctl',
    })
    expect(out.kind).toBe('ok')
    // 5 → 3 + 3 (rounded up); class 1 shut to 0 stays 0.
    expect(a.view().admission.map((c) => c.maxConcurrency)).toEqual([3, 0])
    expect(group.view()).toMatchObject({ fencingToken: 3, source: 'ctl' })
    expect(group.view().admission.map((c) => c.maxConcurrency)).toEqual([6, 0])
    expect(group.put({ admission: [item], fencingToken: 2 })).toEqual({ kind: 'fenced', highest: 3 })
    expect(b.view().admission[0]!.maxConcurrency).toBe(3)
  })

  it('splits the last PUT again when a member joins or leaves (replicas that come and go)', () => {
    const group = createSetpointsGroup()
    const [a, b, c] = [member(), member(), member()]
    group.join([a, b])
    group.put({
      admission: [
        { ...item, maxConcurrency: 12, maxQueue: 24 },
        { ...item, priorityClass: 1, maxConcurrency: 6, maxQueue: 6 },
      ],
      fencingToken: 4,
      source: 'ctl',
    })
    expect(a.view().admission.map((x) => x.maxConcurrency)).toEqual([6, 3])
    // A third replica: everyone gets a third of the fleet-wide caps, the newcomer the controller's token too.
    group.join([c])
    for (const m of [a, b, c]) {
      expect(m.view().admission.map((x) => [x.maxConcurrency, x.maxQueue])).toEqual([
        [4, 8],
        [2, 2],
      ])
      expect(m.view().fencingToken).toBe(4)
    }
    expect(group.view().admission.map((x) => x.maxConcurrency)).toEqual([12, 6])
    // One drains and goes: the two left share the caps again; the one that left is no longer summed.
    group.leave(c)
    expect(a.view().admission.map((x) => x.maxConcurrency)).toEqual([6, 3])
    expect(group.view().admission.map((x) => x.maxConcurrency)).toEqual([12, 6])
    group.leave(c) // not a member: nothing happens
    expect(group.view().admission.map((x) => x.maxConcurrency)).toEqual([12, 6])
  })
})

import { describe, expect, it } from 'vitest'
import { createAdmission, Gradient2Limit } from '../../../agent/index.js'
import type { ClassSetpoint, Decision } from '../../../agent/index.js'

const cls = (
  priorityClass: number,
  maxConcurrency: number,
  maxQueue = 10,
  queueTimeoutMs = 10_000,
): ClassSetpoint => ({
  priorityClass,
  maxConcurrency,
  maxQueue,
  queueTimeoutMs,
})

/** Collects decisions in order. */
function sink() {
  const got: Array<{ id: string; d: Decision }> = []
  return { got, as: (id: string) => (d: Decision) => got.push({ id, d }) }
}

describe('admission', () => {
  it('admits up to the cap, queues the rest, and admits from the queue as slots free up', () => {
    const adm = createAdmission({ classes: [cls(0, 2)] })
    const s = sink()
    for (const id of ['a', 'b', 'c', 'd']) adm.request(0, undefined, s.as(id))
    expect(s.got.map((g) => g.id)).toEqual(['a', 'b'])
    expect(adm.inFlight).toBe(2)
    expect(adm.queued).toBe(2)
    const first = s.got[0]!.d
    if (first.kind !== 'admit') throw new Error('expected admit')
    first.ticket.release(5)
    first.ticket.release(5) // a second release is ignored
    expect(s.got.map((g) => g.id)).toEqual(['a', 'b', 'c'])
    expect(adm.inFlight).toBe(2)
    expect(adm.queued).toBe(1)
  })

  it('a waiter cancelled after a new class took its number leaves its own queue, and the next release does not spin', () => {
    // Class 2 does not exist yet, so a class-2 request waits in class 1's queue; then class 2 is added.
    const adm = createAdmission({ classes: [cls(0, 1), cls(1, 1)] })
    const s = sink()
    adm.request(1, undefined, s.as('a'))
    const pending = adm.request(2, undefined, s.as('b'))
    expect(adm.queued).toBe(1)
    adm.setClasses([cls(0, 1), cls(1, 1), cls(2, 1)], true)
    pending.cancel()
    expect(adm.queued).toBe(0)
    const queuedByClass = Object.fromEntries(
      adm.takeSignals().byClass.map((c) => [c.priorityClass, c.queued?.last]),
    )
    expect(queuedByClass).toEqual({ 0: 0, 1: 0, 2: 0 })
    // (before the fix, class 1 still counted the cancelled waiter and this release looped forever)
    const a = s.got[0]!.d
    if (a.kind !== 'admit') throw new Error('expected admit')
    a.ticket.release(5)
    adm.request(1, undefined, s.as('c'))
    expect(s.got.map((g) => g.id)).toEqual(['a', 'c'])
  })

  it('tryAdmit takes a free slot at once, and leaves a request that would wait to request()', () => {
    const adm = createAdmission({ classes: [cls(0, 1), cls(1, 1)] })
    const t = adm.tryAdmit(0, undefined)
    expect(t?.priorityClass).toBe(0)
    expect(adm.inFlight).toBe(1)
    expect(adm.tryAdmit(0, undefined)).toBeNull() // at the cap: nothing admitted, nothing queued
    expect(adm.tryAdmit(1, 0)).toBeNull() // a spent deadline is request()'s to shed
    expect(adm.inFlight).toBe(1)
    expect(adm.queued).toBe(0)
    const s = sink()
    adm.request(0, undefined, s.as('waits'))
    expect(adm.queued).toBe(1)
    expect(adm.tryAdmit(0, undefined)).toBeNull() // a waiter comes first
    t!.release(3)
    t!.release(3) // a second release is ignored
    expect(s.got.map((g) => g.id)).toEqual(['waits'])
    expect(adm.inFlight).toBe(1)
    expect(adm.totals().admitted.get(0)).toBe(2)
  })

  it('serves the most important class first when a slot frees up', () => {
    const adm = createAdmission({
      classes: [cls(0, 10), cls(1, 10)],
      gradient2: { initialLimit: 1, minLimit: 1, maxLimit: 1 },
    })
    const s = sink()
    adm.request(1, undefined, s.as('low-1'))
    adm.request(1, undefined, s.as('low-2'))
    adm.request(0, undefined, s.as('high'))
    expect(s.got.map((g) => g.id)).toEqual(['low-1'])
    ;(s.got[0]!.d as Extract<Decision, { kind: 'admit' }>).ticket.release(1)
    expect(s.got.map((g) => g.id)).toEqual(['low-1', 'high'])
  })

  it('sheds with queue_full, concurrency and deadline reasons, counted by class', () => {
    const adm = createAdmission({ classes: [cls(0, 1, 1), cls(1, 1, 0)] })
    const s = sink()
    adm.request(0, undefined, s.as('a')) // admitted
    adm.request(0, undefined, s.as('b')) // queued
    adm.request(0, undefined, s.as('c')) // queue full
    adm.request(1, undefined, s.as('d')) // admitted
    adm.request(1, undefined, s.as('e')) // no queue: concurrency
    adm.request(0, 0, s.as('f')) // deadline already passed
    const reasons = Object.fromEntries(s.got.map((g) => [g.id, g.d.kind === 'shed' ? g.d.reason : g.d.kind]))
    expect(reasons).toEqual({ a: 'admit', c: 'queue_full', d: 'admit', e: 'concurrency', f: 'deadline' })
    const sig = adm.takeSignals()
    expect(sig.byClass).toEqual([
      expect.objectContaining({ priorityClass: 0, admitted: 1, shed: { queue_full: 1, deadline: 1 } }),
      expect.objectContaining({ priorityClass: 1, admitted: 1, shed: { concurrency: 1 } }),
    ])
    expect(sig.inFlight.last).toBe(2)
    expect(sig.queued.last).toBe(1)
    expect(sig.inFlight.max).toBe(2)
  })

  it('sheds a queued request after its queue timeout, and a request that cannot meet its deadline at once', async () => {
    const adm = createAdmission({ classes: [cls(0, 1, 10, 30)] })
    const s = sink()
    adm.request(0, undefined, s.as('a'))
    const a = s.got[0]!.d as Extract<Decision, { kind: 'admit' }>
    adm.request(0, undefined, s.as('b'))
    await new Promise((r) => setTimeout(r, 80))
    expect(s.got[1]).toMatchObject({ id: 'b', d: { kind: 'shed', reason: 'queue_timeout' } })
    expect((s.got[1]!.d as { queuedMs: number }).queuedMs).toBeGreaterThanOrEqual(25)
    a.ticket.release(100) // service time estimate: 100 ms
    adm.request(0, undefined, s.as('c')) // admitted, holds the slot
    adm.request(0, 150, s.as('d')) // must wait ~100 ms then take ~100 ms: over 150 ms
    expect(s.got[3]).toMatchObject({ id: 'd', d: { kind: 'shed', reason: 'deadline' } })
  })

  it('changes setpoints at runtime without dropping requests in flight', () => {
    const adm = createAdmission({ classes: [cls(0, 4)] })
    const s = sink()
    for (const id of ['a', 'b', 'c']) adm.request(0, undefined, s.as(id))
    adm.setClasses([cls(0, 1, 0)], true)
    expect(adm.inFlight).toBe(3) // nothing dropped
    adm.request(0, undefined, s.as('d'))
    expect(s.got[3]).toMatchObject({ id: 'd', d: { kind: 'shed', reason: 'concurrency' } })
    for (const g of s.got.slice(0, 3)) (g.d as Extract<Decision, { kind: 'admit' }>).ticket.release(1)
    adm.request(0, undefined, s.as('e'))
    expect(s.got[4]).toMatchObject({ id: 'e', d: { kind: 'admit' } })
  })

  it('counts an unknown class under the nearest listed class of lower priority', () => {
    const adm = createAdmission({ classes: [cls(0, 1), cls(5, 1)] })
    const s = sink()
    adm.request(3, undefined, s.as('a'))
    adm.request(9, undefined, s.as('b'))
    const sig = adm.takeSignals()
    expect(sig.byClass.map((c) => [c.priorityClass, c.admitted])).toEqual([
      [0, 0],
      [5, 1],
    ])
    // Class 9 also counts under class 5, which is at its cap: it waits.
    expect(s.got.map((g) => g.d.kind)).toEqual(['admit'])
    expect(adm.queued).toBe(1)
  })

  it('cancels a queued request (client gone) without admitting it later', () => {
    const adm = createAdmission({ classes: [cls(0, 1)] })
    const s = sink()
    adm.request(0, undefined, s.as('a'))
    const p = adm.request(0, undefined, s.as('b'))
    p.cancel()
    expect(adm.queued).toBe(0)
    ;(s.got[0]!.d as Extract<Decision, { kind: 'admit' }>).ticket.release(1)
    expect(s.got.map((g) => g.id)).toEqual(['a'])
  })
})

describe('Gradient2Limit', () => {
  it('grows while latency is flat and shrinks when it rises', () => {
    const g = new Gradient2Limit({ initialLimit: 20, windowSamples: 10, windowMs: 1e9 })
    let now = 0
    for (let i = 0; i < 2000; i++) g.sample(10, g.limit, (now += 1))
    const grown = g.limit
    expect(grown).toBeGreaterThan(40)
    for (let i = 0; i < 300; i++) g.sample(40, g.limit, (now += 1))
    expect(g.limit).toBeLessThan(grown / 2)
  })

  it('does not grow while the limit is not the bottleneck', () => {
    const g = new Gradient2Limit({ initialLimit: 20, windowSamples: 10 })
    for (let i = 0; i < 1000; i++) g.sample(10, 2, i)
    expect(g.limit).toBe(20)
  })
})

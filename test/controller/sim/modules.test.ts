import { describe, expect, it } from 'vitest'
import { EventHeap, runSimulation, staticPolicy } from '../../../controller/index.js'
import type { SimConfig } from '../../../controller/index.js'
import {
  ADMIT,
  ClassQueues,
  Ring,
  SHED_CONCURRENCY,
  SHED_QUEUE_FULL,
} from '../../../controller/sim/queues.js'
import { Fleet, KvCache, ST_BUSY, ST_STARTING } from '../../../controller/sim/replicas.js'
import { RequestSlots } from '../../../controller/sim/slots.js'
import { PhaseStats, TickWindows, Timeline } from '../../../controller/sim/stats.js'

describe('request slots', () => {
  it('reuses released slots and keeps values when the arrays grow', () => {
    const slots = new RequestSlots(4)
    const a = slots.alloc()
    slots.arrivalMs[a] = 1.5
    slots.inTok[a] = 7
    const taken = [a]
    for (let i = 0; i < 10; i++) taken.push(slots.alloc())
    expect(slots.arrivalMs[a]).toBe(1.5)
    expect(slots.inTok[a]).toBe(7)
    expect(slots.inUse).toBe(11)
    slots.release(taken[3]!)
    expect(slots.alloc()).toBe(taken[3])
  })
})

describe('queues and admission', () => {
  it('a ring grows, and takes preempted requests back at the front', () => {
    const r = new Ring()
    for (let i = 0; i < 3000; i++) r.push(i)
    r.unshift(-1)
    expect(r.length).toBe(3001)
    expect(r.shift()).toBe(-1)
    expect(r.shift()).toBe(0)
  })
  it('serves classes in priority order and applies the setpoints’ limits and timeouts', () => {
    const slots = new RequestSlots()
    const q = new ClassQueues(2, slots)
    q.setLimits({
      batchWindowMs: 0,
      maxBatch: 1,
      desiredReplicas: 1,
      admission: [
        { maxQueue: 1e9, maxConcurrency: 2, queueTimeoutMs: 50 },
        { maxQueue: 1, maxConcurrency: 1e9 },
      ],
    })
    const put = (c: number, t: number) => {
      const s = slots.alloc()
      slots.cls[s] = c
      slots.arrivalMs[s] = t
      q.enqueue(s, c)
      return s
    }
    const low = put(1, 0)
    expect(q.admits(1)).toBe(SHED_QUEUE_FULL)
    const high = put(0, 5)
    put(0, 6)
    expect(q.admits(0)).toBe(SHED_CONCURRENCY)
    expect(q.timeoutMs[0]).toBe(50)
    expect(q.timeoutMs[1]).toBe(Infinity)
    expect(q.oldestArrivalMs()).toBe(0)
    expect(q.dequeue()).toBe(high)
    q.leave(high)
    expect(q.admits(0)).toBe(ADMIT)
    expect(q.depthByClass()).toEqual([1, 1])
    q.dequeue()
    expect(q.dequeue()).toBe(low)
    q.requeueFront(low)
    expect(q.peek()).toBe(low)
  })
})

describe('replicas and KV', () => {
  it('reserve takes prompt + output up front; paged takes blocks for what is written, plus one', () => {
    const reserve = new KvCache({ kind: 'reserve' }, 100_000)
    expect(reserve.admitNeed(1000, 200, 0)).toBe(1200)
    expect(reserve.tooLarge(90_000, 20_000)).toBe(true)
    const paged = new KvCache({ kind: 'paged', blockTokens: 16 }, 100_000)
    expect(paged.capacity).toBe(6250)
    expect(paged.admitNeed(1000, 200, 0)).toBe(64)
    expect(paged.admitNeed(1000, 200, 40)).toBe(66)
    expect(paged.blocksHeld(1001)).toBe(63)
    expect(paged.tooLarge(90_000, 20_000)).toBe(false)
  })
  it('scales up with a cold start, and down by dropping starting, then idle, then draining busy replicas', () => {
    const heap = new EventHeap(16)
    const fleet = new Fleet(heap, 90_000)
    fleet.add(true, 0)
    fleet.add(true, 0)
    fleet.scaleTo(4, 0)
    expect(fleet.counts()).toEqual({ ready: 2, starting: 2 })
    expect(heap.peekTime()).toBe(90_000)
    fleet.all[0]!.state = ST_BUSY
    fleet.idle = fleet.idle.filter((r) => r !== fleet.all[0])
    fleet.scaleTo(1, 1000)
    expect(fleet.all[2]!.state).not.toBe(ST_STARTING)
    expect(fleet.all[0]!.draining).toBe(false)
    expect(fleet.counts()).toEqual({ ready: 1, starting: 0 })
    fleet.integrateGpu(2000)
    // Two replicas for 1 s, four for 1 ms … : GPU time is integrated as replicas come and go.
    expect(fleet.gpuMs).toBeGreaterThan(0)
  })
})

describe('statistics', () => {
  it('summarizes a phase and averages windows', () => {
    const p = new PhaseStats()
    for (let i = 1; i <= 100; i++) p.record(i)
    const s = p.summary()
    expect(s.count).toBe(100)
    expect(s.mean).toBeCloseTo(50.5, 9)
    expect(s.p99).toBeCloseTo(99, 0)
    const w = new TickWindows()
    for (let t = 1; t <= 60; t++) w.push(t, t <= 54 ? 100 : 400, 2)
    const a = w.averages(60, 1000)
    expect(a.arrivalRps[6]).toBe(400)
    expect(a.arrivalRps[60]).toBe(130)
    expect(a.concurrency[10]).toBe(2)
  })
  it('counts violation minutes by arrival minute', () => {
    const tl = new Timeline()
    tl.minuteOf(0, 1)
    tl.total[0] = 100
    tl.series.good[0] = 98
    tl.minuteOf(61_000, 1)
    tl.total[1] = 100
    tl.series.good[1] = 100
    expect(tl.violationMinutes(0.99)).toBe(1)
  })
})

describe('paged KV in the simulator', () => {
  const base: SimConfig = {
    seed: 3,
    arrivals: {
      kind: 'poisson',
      rps: 6,
      durationMs: 300_000,
      tokens: { meanInputTokens: 800, meanOutputTokens: 300 },
    },
    replica: {
      kind: 'llm',
      prefillMsPerToken: 0.1,
      decodeStepMs: 25,
      decodeMsPerSeq: 0.25,
      kvCapacityTokens: 30_000,
    },
    initial: { batchWindowMs: 0, maxBatch: 64, admission: [], desiredReplicas: 2 },
    slo: { e2eMs: 60_000, ttftMs: 2000 },
  }
  const paged: SimConfig = {
    ...base,
    replica: { ...base.replica, kv: { kind: 'paged', blockTokens: 16 } } as SimConfig['replica'],
  }
  it('runs more sequences at once than reserving up front, preempts when full, and loses no request', () => {
    const r = runSimulation(base, staticPolicy())
    const p = runSimulation(paged, staticPolicy())
    expect(r.preemptions).toBeUndefined()
    expect(p.preemptions).toBeGreaterThan(0)
    expect(p.meanBatchSize).toBeGreaterThan(r.meanBatchSize)
    for (const x of [r, p]) expect(x.completed + x.shed).toBe(x.arrived)
  })
  it('is deterministic for a seed', () => {
    expect(runSimulation(paged, staticPolicy()).preemptions).toBe(
      runSimulation(paged, staticPolicy()).preemptions,
    )
  })
})

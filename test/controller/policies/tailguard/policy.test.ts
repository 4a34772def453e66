import { describe, expect, it } from 'vitest'
import { tailguardPolicy } from '../../../../controller/index.js'
import type {
  Action,
  FleetObservation,
  TailguardOptions,
  TailguardState,
} from '../../../../controller/index.js'
import { observation, setpoints } from '../fixtures.js'

const NONE = { p50: null, p99: null, count: 0 }

/** A batch-fleet observation: S(B) = 5 + 0.6·B ms, `rps` arriving, `ready` replicas. */
function batchObs(o: {
  rps: number
  ready: number
  batch?: number
  queue?: number
  byClass?: number[]
  burn?: number
  extra?: Partial<FleetObservation>
}): FleetObservation {
  const b = o.batch ?? 8
  const s = 5 + 0.6 * b
  return observation({
    arrivalRps: { 6: o.rps, 10: o.rps, 60: o.rps },
    latencyMs: {
      queue: { p50: 1, p99: 5, count: 100 },
      service: { p50: s, p99: s * 1.1, count: 100 },
      e2e: { p50: s + 2, p99: s * 1.1 + 10, count: 100 },
      ttft: NONE,
      tpot: NONE,
    },
    batchSize: { mean: b, max: b + 2 },
    serviceMeanMs: s,
    completed: o.rps,
    replicas: { ready: o.ready, starting: 0 },
    queueDepth: o.queue ?? 0,
    queueDepthByClass: o.byClass ?? [o.queue ?? 0],
    errorBudget: { remaining: 0.9, burnRate: o.burn ?? 0.6 },
    gpuUtilization: 0.5,
    ...o.extra,
  })
}

const OPTS: TailguardOptions = { sloMs: 100, model: 'batch', coldStartMs: 90_000 }

/** Drives the policy over (time, observation) pairs; returns every action and the final state. */
function drive(opts: TailguardOptions, start: number, steps: Array<[number, FleetObservation]>, classes = 1) {
  const p = tailguardPolicy(opts)
  const sp = {
    ...setpoints(start, 16),
    admission: Array.from({ length: classes }, () => ({ maxQueue: 1e9, maxConcurrency: 1e9 })),
  }
  let s = p.init(sp)
  const log: Array<{ t: number; actions: readonly Action[]; state: TailguardState }> = []
  for (const [t, obs] of steps) {
    const out = p.step(s, obs, t)
    s = out.state
    log.push({ t, actions: out.actions, state: s })
  }
  return { log, state: s }
}

/** Ten seconds of learning at a rate, batch sizes spread so S(B) can be fitted. */
function learn(rps: number, ready: number, from = 0): Array<[number, FleetObservation]> {
  return Array.from({ length: 10 }, (_, i) => [
    from + (i + 1) * 1000,
    batchObs({ rps, ready, batch: 2 + (i % 8) * 2 }),
  ])
}

const scales = (actions: readonly Action[]) => actions.filter((a) => a.kind === 'scale')

describe('tailguard: replicas', () => {
  it('holds while it learns capacity, and says so', () => {
    const { log } = drive(OPTS, 3, learn(3000, 3).slice(0, 1))
    const a = scales(log[0]!.actions)
    expect(a).toHaveLength(1)
    expect(a[0]!.reason).toMatch(/learning capacity \(1 of 8 intervals/)
    expect(a[0]).toMatchObject({ desiredReplicas: 3 })
  })
  it('scales up to the fewest replicas whose predicted p99 meets the SLO, with the numbers in the reason', () => {
    const { log, state } = drive(OPTS, 1, learn(3000, 1))
    const up = log.flatMap((l) => scales(l.actions)).find((a) => a.reason.includes('tailguard up'))!
    expect(up).toBeDefined()
    // S(16) = 14.6 ms: a replica carries at most 16/14.6 ms ≈ 1,096 req/s, so 3,000 req/s need at least 3.
    expect(state.desired).toBeGreaterThanOrEqual(3)
    expect(state.desired).toBeLessThanOrEqual(5)
    expect(up.reason).toMatch(
      /forecast 3000\.0 req\/s in 90 s .*capacity [\d.]+ req\/s\/replica at e2e p99 ≤ 100 ms \(predicted \d+ ms; \d+ would give [\d∞]+ ms\), need \d+, have 1/,
    )
  })
  it('scales to its maximum when no count meets the SLO, and says the maximum does not', () => {
    const { log, state } = drive({ ...OPTS, maxReplicas: 2 }, 1, learn(3000, 1))
    const up = log.flatMap((l) => scales(l.actions)).find((a) => a.reason.includes('tailguard up'))!
    expect(state.desired).toBe(2)
    expect(up.reason).toMatch(/\(even the maximum of 2 would give (\d+|∞) ms\), need 2, have 1/)
  })
  it('scales down one step at a time, never below what the look-back window needed', () => {
    const steps = learn(3000, 4)
    for (let t = 11; t <= 400; t++)
      steps.push([t * 1000, batchObs({ rps: 300, ready: 4, batch: 2 + (t % 8) })])
    const { log, state } = drive({ ...OPTS, scaleDownAfterMs: 120_000, scaleDownStepMs: 30_000 }, 4, steps)
    const downs = log.filter((l) => scales(l.actions).some((a) => a.reason.includes('tailguard down')))
    expect(downs.length).toBeGreaterThan(0)
    // The first cut waits for half a look-back window of history, and never goes below the window's highest need.
    expect(downs[0]!.t).toBeGreaterThanOrEqual(60_000)
    for (let i = 1; i < downs.length; i++)
      expect(downs[i]!.t - downs[i - 1]!.t).toBeGreaterThanOrEqual(30_000)
    const cuts = downs.map((d) => scales(d.actions).find((a) => a.reason.includes('down'))!)
    for (const c of cuts) expect(c.kind === 'scale' && c.reason).toMatch(/one step at a time/)
    expect(state.desired).toBeGreaterThanOrEqual(1)
  })
  it('keeps the warm minimum', () => {
    const steps = learn(10, 3)
    for (let t = 11; t <= 400; t++)
      steps.push([t * 1000, batchObs({ rps: 10, ready: 3, batch: 1 + (t % 3) })])
    const { state } = drive({ ...OPTS, minReplicas: 2 }, 3, steps)
    expect(state.desired).toBe(2)
  })
  it('N+1 adds a replica only when the fleet would not survive losing one', () => {
    const plain = drive(OPTS, 1, learn(3000, 1)).state.desired
    const n1 = drive({ ...OPTS, nPlusOne: true }, 1, learn(3000, 1))
    expect(n1.state.desired).toBeGreaterThanOrEqual(plain)
    expect(n1.state.desired).toBeLessThanOrEqual(plain + 1)
    const up = n1.log.flatMap((l) => scales(l.actions)).find((a) => a.reason.includes('tailguard up'))!
    expect(up.reason).toMatch(/N\+1/)
  })
  it('widens headroom while the error budget burns, and says by how much', () => {
    // A minute at 1,000 req/s with the given burn rate (smoothed over about a minute), then a jump to 3,000.
    const run = (burnRate: number, remaining: number) => {
      const steps: Array<[number, FleetObservation]> = []
      for (let t = 1; t <= 70; t++)
        steps.push([
          t * 1000,
          {
            ...batchObs({ rps: 1000, ready: 1, batch: 2 + (t % 8) * 2 }),
            errorBudget: { remaining, burnRate },
          },
        ])
      steps.push([71_000, { ...batchObs({ rps: 3000, ready: 2 }), errorBudget: { remaining, burnRate } }])
      return drive(OPTS, 1, steps)
    }
    const burning = run(3, 0.2)
    const up = burning.log.at(-1)!.actions.find((a) => a.reason.includes('tailguard up'))!
    expect(up.reason).toMatch(/error budget burning [\d.]+×: \+\d+ points/)
    const calm = run(0.1, 0.9)
    const up2 = calm.log.at(-1)!.actions.find((a) => a.reason.includes('tailguard up'))!
    expect(up2.reason).toMatch(/leaner by \d+ points/)
    expect(burning.state.desired).toBeGreaterThanOrEqual(calm.state.desired)
  })
  it('scales up ahead of a rising trend (forecast over the cold start)', () => {
    const steps = learn(1000, 2)
    // 1,000 → 2,000 req/s over three minutes: the forecast carries the trend 90 s ahead.
    for (let t = 11; t <= 180; t++) {
      const rps = 1000 + ((t - 11) / 170) * 1000
      steps.push([
        t * 1000,
        batchObs({
          rps,
          ready: 2,
          batch: 2 + (t % 8) * 2,
          extra: { arrivalRps: { 6: rps, 10: rps, 60: rps - 50 } },
        }),
      ])
    }
    const withForecast = drive(OPTS, 2, steps).state.desired
    const without = drive({ ...OPTS, features: { forecast: false } }, 2, steps).state.desired
    expect(withForecast).toBeGreaterThan(without)
  })
  /**
   * Ten seconds of learning at 1,000 req/s, then `until` seconds whose 6 s and 10 s windows read `rps(t)` and whose
   * 60 s window reads `long(t)`.
   */
  function shaped(
    until: number,
    ready: number,
    rps: (t: number) => number,
    long: (t: number) => number,
  ): Array<[number, FleetObservation]> {
    const steps = learn(1000, 2)
    for (let t = 11; t <= until; t++) {
      const r = rps(t)
      steps.push([
        t * 1000,
        batchObs({
          rps: r,
          ready,
          batch: 2 + (t % 8) * 2,
          extra: { arrivalRps: { 6: r, 10: r, 60: long(t) } },
        }),
      ])
    }
    return steps
  }
  /** Two minutes at 1,000 req/s, then a step to 3,000 seen through the windows: the 60 s one ramps for a minute. */
  const stepLoad = (until: number) =>
    shaped(
      until,
      4,
      (t) => (t <= 120 ? 1000 : 3000),
      (t) => (t <= 120 ? 1000 : Math.min(3000, 1000 + ((t - 120) / 60) * 2000)),
    )
  it('does not take the long window ramping after a step for a trend', () => {
    // Through the 60 s window a step ramps for a minute: both halves of the trend history rise a while later.
    const { log } = drive(OPTS, 4, stepLoad(300))
    const reasons = log.flatMap((l) => scales(l.actions).map((a) => a.reason))
    for (const r of reasons.filter((x) => / (up|down):/.test(x)))
      expect(r).toMatch(/trend \+0\.0 req\/s\/min/)
  })
  it('takes a rise to a new level with a lull of a few seconds for a level, not a surge', () => {
    // 1,000 → 2,200 req/s, with a 5 s lull at 1,400 (under 1.5× the base) 30 s in: not a whole 10 s window.
    const steps = shaped(
      400,
      2,
      (t) => (t < 120 ? 1000 : t >= 150 && t < 155 ? 1400 : 2200),
      (t) => (t < 120 ? 1000 : Math.min(2200, 1000 + ((t - 120) / 60) * 1200)),
    )
    const { log } = drive(OPTS, 2, steps)
    expect(log.some((l) => l.state.surge !== null)).toBe(true)
    expect(log.at(-1)!.state.surges).toEqual([])
  })
  it('keeps the capacity a surge needed for 10 minutes (surges shorter than a cold start recur)', () => {
    // A 3× surge for 40 s, then 1,000 req/s again for 11 minutes.
    const steps = shaped(
      800,
      2,
      (t) => (t >= 120 && t < 160 ? 3000 : 1000),
      (t) => (t < 120 ? 1000 : t < 160 ? 1000 + ((t - 120) / 60) * 2000 : t < 180 ? 2333 : 1000),
    )
    const { log } = drive(OPTS, 2, steps)
    const at = (t: number) => log.find((l) => l.t === t * 1000)!.state.desired
    const peak = at(150)
    expect(peak).toBeGreaterThan(at(110))
    expect(at(600)).toBe(peak)
    const downs = log.filter(
      (l) => l.t > 160_000 && scales(l.actions).some((a) => a.reason.includes(' down:')),
    )
    expect(downs[0]!.t).toBeGreaterThanOrEqual(720_000)
    expect(at(800)).toBeLessThan(peak)
  })
})

/**
 * What the proxy alone sees of a batch fleet whose servers report nothing: no service phase or batch sizes,
 * only requests in flight at the replicas (time-weighted) and completions. Each replica holds `perReplica` in
 * flight, each taking S(B) = 5 + 0.6·B ms at B = perReplica, so Little's law gives the completions.
 */
function proxyObs(perReplica: number, ready: number): FleetObservation {
  const s = 5 + 0.6 * perReplica
  const rps = (perReplica * ready) / (s / 1000)
  return {
    ...batchObs({ rps, ready }),
    latencyMs: {
      queue: { p50: 0, p99: 1, count: 100 },
      service: NONE,
      e2e: { p50: s, p99: s * 1.3, count: 100 },
      ttft: NONE,
      tpot: NONE,
    },
    batchSize: { mean: 0, max: 0 },
    serviceMeanMs: undefined,
    inFlightMean: perReplica * ready,
    completed: rps,
    gpuUtilization: 0,
  }
}

describe('tailguard: a batch fleet seen through the proxy alone (no service phase)', () => {
  const steps = (n: number, ready = 2, from = 0): Array<[number, FleetObservation]> =>
    Array.from({ length: n }, (_, i) => [from + (i + 1) * 1000, proxyObs(1 + (i % 8), ready)])

  it("learns capacity from response times by Little's law, and says it is learning from them", () => {
    const { log, state } = drive(OPTS, 2, steps(12))
    expect(scales(log[0]!.actions)[0]!.reason).toMatch(
      /learning capacity \(1 of 8 intervals with service data or response times\): holding 2 replicas/,
    )
    expect(state.learned.basis).toBe('responses')
    // Points (in flight per replica, response time): S(B) = 5 + 0.6·B back from the rates alone.
    const fit = state.learned.xs.map((x, i) => [x, state.learned.ys[i]!])
    for (const [x, y] of fit) expect(y).toBeCloseTo(5 + 0.6 * x!, 6)
  })

  it('takes the batch per busy replica where the proxy counts the busy ones', () => {
    // Two replicas busy half the time with 6 in flight each then: 6 in flight on average over both, batch 6.
    const o = proxyObs(6, 2)
    const half: FleetObservation = { ...o, inFlightMean: 6, completed: o.completed / 2, busyReplicasMean: 1 }
    const seen = drive(OPTS, 2, [[1000, half]]).state.learned
    expect(seen.xs).toEqual([6])
    expect(seen.ys[0]).toBeCloseTo(5 + 0.6 * 6, 6)
    // Without the count, idle time halves the batch it takes.
    const blind = drive(OPTS, 2, [[1000, { ...half, busyReplicasMean: undefined }]]).state.learned
    expect(blind.xs).toEqual([3])
  })

  it('takes the time from the requests answered without error: fast failures do not shorten it', () => {
    // As many 502s again as answers, each failing at once (no time in flight): the same in flight, twice the
    // completions. Counted as answers, they would halve the time a request takes.
    const o = proxyObs(6, 2)
    const failing: FleetObservation = { ...o, completed: o.completed * 2, errors: o.completed }
    const seen = drive(OPTS, 2, [[1000, failing]]).state.learned
    expect(seen.ys[0]).toBeCloseTo(5 + 0.6 * 6, 6)
    const all = drive(OPTS, 2, [[1000, { ...failing, errors: undefined }]]).state.learned
    expect(all.ys[0]).toBeCloseTo((5 + 0.6 * 6) / 2, 6)
    // Nothing answered: no point.
    const none = drive(OPTS, 2, [[1000, { ...o, errors: o.completed }]]).state.learned
    expect(none.xs).toEqual([])
  })

  it('sizes the fleet from them and says so; sends no batching setpoints, which such a server does not take', () => {
    const all = steps(12)
    for (let t = 13; t <= 30; t++) all.push([t * 1000, proxyObs(14, 2)])
    const { log, state } = drive(OPTS, 2, all)
    const up = log.flatMap((l) => scales(l.actions)).find((a) => a.reason.includes('tailguard up'))
    // 2 replicas at 14 in flight each carry 2 × 14 / 13.4 ms ≈ 2,090 req/s, near the limit of the fitted S(B)
    // at the max batch of 16: the policy adds replicas.
    expect(up?.reason).toMatch(/capacity [\d.]+ req\/s\/replica \(from response times\) at e2e p99 ≤ 100 ms/)
    expect(state.desired).toBeGreaterThan(2)
    expect(log.flatMap((l) => l.actions).filter((a) => a.kind === 'batching')).toEqual([])
  })

  it('is not taken for an LLM fleet for the TTFT the proxy times on every response', () => {
    // Found live: the proxy records the first body chunk of a KServe answer as TTFT; taken as an LLM fleet
    // without TPOT or tokens, the policy learned nothing and held while the load tripled.
    const withTtft = steps(12).map(([t, o]): [number, FleetObservation] => [
      t,
      { ...o, latencyMs: { ...o.latencyMs, ttft: o.latencyMs.e2e } },
    ])
    const { state } = drive({ sloMs: 100, coldStartMs: 90_000 }, 2, withTtft)
    expect(state.llm).toBe(false)
    expect(state.learned.basis).toBe('responses')
    expect(state.learned.samples).toBe(12)
    // Without a proxy's gauges, a TTFT comes from an LLM server's spans: that is still an LLM fleet.
    const spans = withTtft.map(([t, o]): [number, FleetObservation] => [t, { ...o, inFlightMean: undefined }])
    expect(drive({ sloMs: 100, coldStartMs: 90_000 }, 2, spans).state.llm).toBe(true)
  })

  it('holds as before when nothing tells the time at the replicas (no in-flight gauge)', () => {
    const blind = steps(12).map(([t, o]): [number, FleetObservation] => [
      t,
      { ...o, inFlightMean: undefined },
    ])
    const { log, state } = drive(OPTS, 2, blind)
    expect(state.learned.samples).toBe(0)
    expect(scales(log.at(-1)!.actions)[0]!.reason).toMatch(/learning capacity \(0 of 8 intervals/)
    expect(state.desired).toBe(2)
  })

  it('starts over from the service phase once the servers report it, and never mixes the two', () => {
    const mixed = [...steps(10), ...learn(1000, 2, 10_000)]
    const { state } = drive(OPTS, 2, mixed)
    expect(state.learned.basis).toBe('service')
    expect(state.learned.samples).toBe(10)
    // Service data first: a later interval without it does not add response-time points.
    const after = drive(OPTS, 2, [...learn(1000, 2), ...steps(5, 2, 10_000)])
    expect(after.state.learned.basis).toBe('service')
    expect(after.state.learned.xs).toHaveLength(10)
  })
})

describe('tailguard: bad observations', () => {
  const warm = learn(3000, 3)
  const cases: Array<[string, FleetObservation, RegExp]> = [
    [
      'stale (older than 3 intervals)',
      batchObs({ rps: 3000, ready: 3, extra: { ageMs: 3500 } }),
      /hold: stale: observation 3\.5 s old \(> 3 intervals of 1\.0 s\)/,
    ],
    [
      'NaN',
      batchObs({ rps: 3000, ready: 3, extra: { arrivalRps: { 6: 3000, 10: NaN, 60: 3000 } } }),
      /hold: invalid observation: arrivalRps\[10\] = NaN/,
    ],
    [
      'negative',
      batchObs({ rps: 3000, ready: 3, extra: { queueDepth: -4 } }),
      /hold: invalid observation: queueDepth = -4/,
    ],
    [
      'infinite',
      batchObs({ rps: 3000, ready: 3, extra: { gpuUtilization: Infinity } }),
      /hold: invalid observation: gpuUtilization = Infinity/,
    ],
    [
      'a sudden drop to zero everywhere (missing data)',
      observation({ replicas: { ready: 0, starting: 0 } }),
      /hold: no data: every window reads 0 req\/s, 3000\.0 req\/s a moment ago/,
    ],
  ]
  it.each(cases)('%s: holds replicas, batching and admission, and says why', (_name, bad, why) => {
    const before = drive(OPTS, 3, warm).state
    const p = tailguardPolicy(OPTS)
    const out = p.step(before, bad, 11_000)
    expect(out.actions).toHaveLength(1)
    const a = out.actions[0]!
    expect(a.kind).toBe('scale')
    expect(a.kind === 'scale' && a.desiredReplicas).toBe(before.desired)
    expect(a.reason).toMatch(why)
    // Holding again says nothing new; it never scales to zero or sheds everything.
    let s = out.state
    for (let t = 12; t < 60; t++) {
      const again = p.step(s, bad, t * 1000)
      s = again.state
      expect(again.actions).toEqual([])
    }
    expect(s.desired).toBe(before.desired)
    // Good data resumes, with a note.
    const back = p.step(s, batchObs({ rps: 3000, ready: 3 }), 61_000)
    expect(back.actions.some((x) => x.reason.includes('resumes after'))).toBe(true)
  })
  it('treats traffic that stays at zero past the look-back window as real (down slowly, never to zero)', () => {
    const steps = learn(3000, 3)
    for (let t = 11; t <= 600; t++)
      steps.push([t * 1000, observation({ replicas: { ready: 3, starting: 0 } })])
    const { state } = drive(OPTS, 3, steps)
    expect(state.desired).toBeGreaterThanOrEqual(1)
    expect(state.desired).toBeLessThan(3)
  })
})

describe('tailguard: batching', () => {
  it('sets window and max batch from the S(B) fit: T + S(B)·tail within the queue share', () => {
    const { log } = drive(OPTS, 3, learn(1500, 3))
    const b = log.flatMap((l) => l.actions).find((a) => a.kind === 'batching')
    expect(b).toBeDefined()
    if (b?.kind !== 'batching') throw new Error('no batching action')
    // S(B) = 5 + 0.6·B with the learned service tail, budget 50 ms: T + tail·(5 + 0.6·B) ≤ 50, B the largest.
    const tail = Number(/tail ×([\d.]+)/.exec(b.reason)![1])
    expect(tail).toBeGreaterThanOrEqual(1)
    expect(b.windowMs + tail * (5 + 0.6 * b.maxBatch)).toBeLessThanOrEqual(50 + 0.05)
    expect(b.windowMs + tail * (5 + 0.6 * (b.maxBatch + 1))).toBeGreaterThan(50 - 0.05)
    expect(b.windowMs).toBeGreaterThan(0)
    expect(b.reason).toMatch(/S\(B\) = 5\.00 \+ 0\.600·B ms \(R² 1\.00, \d+ points\)/)
  })
  it('falls back to AIMD when the fit is poor (one batch size only)', () => {
    const steps: Array<[number, FleetObservation]> = Array.from({ length: 10 }, (_, i) => [
      (i + 1) * 1000,
      batchObs({ rps: 1500, ready: 3, batch: 16 }),
    ])
    const { log } = drive(OPTS, 3, steps)
    const b = log.flatMap((l) => l.actions).find((a) => a.kind === 'batching')
    expect(b?.reason).toMatch(/AIMD/)
  })
})

describe('tailguard: admission', () => {
  it('tightens lower classes first while the predicted wait exceeds the budget, then relaxes', () => {
    const steps = learn(3000, 3)
    for (let t = 11; t <= 14; t++)
      steps.push([t * 1000, batchObs({ rps: 3000, ready: 3, queue: 5000, byClass: [100, 4900] })])
    steps.push([15_000, batchObs({ rps: 3000, ready: 3, queue: 0, byClass: [0, 0] })])
    steps.push([16_000, batchObs({ rps: 3000, ready: 3, queue: 0, byClass: [0, 0] })])
    const { log } = drive(OPTS, 3, steps, 2)
    const at = (t: number, c: number) =>
      log
        .slice(0, log.findIndex((l) => l.t === t) + 1)
        .flatMap((l) => l.actions)
        .filter((a) => a.kind === 'admission' && a.priorityClass === c)
        .at(-1)
    const c0 = at(14_000, 0)!
    const c1 = at(14_000, 1)!
    if (c0.kind !== 'admission' || c1.kind !== 'admission') throw new Error('no admission')
    expect(c1.maxConcurrency).toBeLessThan(c0.maxConcurrency)
    expect(c1.maxConcurrency).toBeGreaterThanOrEqual(1)
    expect(c1.reason).toMatch(
      /predicted wait \d+ ms \(queue 5000, admitted [\d.]+ of [\d.]+ req\/s offered \(utilization [\d.]+\)\) > budget 50 ms/,
    )
    expect(c0.queueTimeoutMs).toBeGreaterThan(0)
    const relaxed = at(16_000, 1)!
    expect(relaxed.kind === 'admission' && relaxed.maxConcurrency).toBeGreaterThan(c1.maxConcurrency)
  })
  it('leaves admission alone when that part is off', () => {
    const { log } = drive({ ...OPTS, features: { admission: false } }, 3, learn(3000, 3), 2)
    expect(log.flatMap((l) => l.actions).some((a) => a.kind === 'admission')).toBe(false)
  })
})

describe('tailguard: a pure step function', () => {
  it('gives the same answer for the same state and observation, and never mutates its input', () => {
    const { state } = drive(OPTS, 3, learn(3000, 3))
    const frozen = structuredClone(state)
    const p = tailguardPolicy(OPTS)
    const obs = batchObs({ rps: 5000, ready: 3 })
    const a = p.step(state, obs, 20_000)
    const b = p.step(state, obs, 20_000)
    expect(b).toEqual(a)
    expect(state).toEqual(frozen)
  })
  it('rejects nonsense options with the option named', () => {
    expect(() => tailguardPolicy({ sloMs: -1 })).toThrow(/sloMs/)
    expect(() => tailguardPolicy({ percentile: 1 })).toThrow(/percentile/)
    expect(() => tailguardPolicy({ queueShare: 0 })).toThrow(/queueShare/)
    expect(tailguardPolicy().name).toBe('tailguard')
  })
})

import { describe, expect, it } from 'vitest'
import {
  availabilitySlo,
  describeAction,
  latencySlo,
  replicaSteps,
  stepAt,
  targetSelector,
  timelineMarks,
} from '../../dashboard/src/lib/controller.js'
import type { Setpoints } from '../../dashboard/src/lib/controller.js'
import { formatRoute, parseRoute } from '../../dashboard/src/lib/route.js'
import {
  counterRate,
  errorRateRows,
  gaugeMean,
  gaugeStat,
  importedP99Rows,
  lastValue,
  shedPanel,
  signalRows,
} from '../../dashboard/src/lib/signals.js'
import type { SignalPoint, SignalSeries } from '../../dashboard/src/lib/signals.js'
import type { SloStatus } from '../../dashboard/src/lib/slo-types.js'

const T0 = Date.parse('2026-11-23T10:00:00Z')
const iso = (ms: number) => new Date(ms).toISOString()
const sp = (desiredReplicas: number): Setpoints => ({
  batchWindowMs: 5,
  maxBatch: 8,
  admission: [],
  desiredReplicas,
})

describe('controller routes', () => {
  it('reads and writes the list and a target, with its range and charted service', () => {
    expect(parseRoute('#/controllers')).toEqual({ page: 'controllers' })
    expect(parseRoute('#/controllers/')).toEqual({ page: 'controllers' })
    expect(parseRoute('#/controllers/chat%2Fllama?range=6h&service=chat')).toEqual({
      page: 'controller',
      target: 'chat/llama',
      range: '6h',
      service: 'chat',
    })
    expect(parseRoute('#/controllers/chat?range=bogus')).toEqual({
      page: 'controller',
      target: 'chat',
      range: '1h',
      service: '',
    })
    expect(parseRoute('#/controllers/%E0%A4%A')).toEqual({ page: 'controllers' })
    expect(formatRoute({ page: 'controllers' })).toBe('#/controllers')
    expect(formatRoute({ page: 'controller', target: 'chat/llama', range: '1h', service: '' })).toBe(
      '#/controllers/chat%2Fllama',
    )
    const r = { page: 'controller', target: 'a b', range: '24h', service: 'svc' } as const
    expect(parseRoute(formatRoute(r))).toEqual(r)
  })
})

describe('controller transforms', () => {
  it('describes each kind of action', () => {
    expect(describeAction({ kind: 'scale', desiredReplicas: 4 })).toBe('scale to 4 replicas')
    expect(describeAction({ kind: 'batching', windowMs: 6, maxBatch: 16 })).toBe(
      'batching window 6 ms, max batch 16',
    )
    expect(
      describeAction({
        kind: 'admission',
        priorityClass: 1,
        maxQueue: 8,
        maxConcurrency: 4,
        queueTimeoutMs: 500,
      }),
    ).toBe('admission class 1: queue 8, concurrency 4, timeout 500 ms')
    expect(describeAction({ kind: 'admission', priorityClass: 0, maxQueue: 8, maxConcurrency: 4 })).toBe(
      'admission class 0: queue 8, concurrency 4',
    )
    // No limit, as the policy writes it (the largest safe integer), reads as ∞.
    expect(
      describeAction({
        kind: 'admission',
        priorityClass: 0,
        maxQueue: Number.MAX_SAFE_INTEGER,
        maxConcurrency: 102,
      }),
    ).toBe('admission class 0: queue ∞, concurrency 102')
  })

  it('steps the desired replicas through the decisions, skipping failures and holding the last', () => {
    const decisions = [
      { time: iso(T0 - 10_000), setpointsBefore: sp(1), setpointsAfter: sp(9), outcome: 'applied' }, // before the range
      { time: iso(T0 + 10_000), setpointsBefore: sp(2), setpointsAfter: sp(3), outcome: 'applied' },
      { time: iso(T0 + 20_000), setpointsBefore: sp(3), setpointsAfter: sp(5), outcome: 'failed' },
      { time: iso(T0 + 30_000), setpointsBefore: sp(3), setpointsAfter: sp(2), outcome: 'skipped' },
    ]
    expect(replicaSteps(decisions, { setpoints: sp(7) }, T0, T0 + 60_000)).toEqual([
      { tMs: T0, desired: 2 },
      { tMs: T0 + 10_000, desired: 3 },
      { tMs: T0 + 30_000, desired: 2 },
      { tMs: T0 + 60_000, desired: 2 },
    ])
    // No decision in the range: the current setpoints across it; nothing known: no line.
    expect(replicaSteps([], { setpoints: sp(4) }, T0, T0 + 60_000)).toEqual([
      { tMs: T0, desired: 4 },
      { tMs: T0 + 60_000, desired: 4 },
    ])
    expect(replicaSteps([], { setpoints: null }, T0, T0 + 60_000)).toEqual([])
    const steps = replicaSteps(decisions, null, T0, T0 + 60_000)
    expect(
      [T0 - 1, T0, T0 + 9_999, T0 + 10_000, T0 + 45_000, T0 + 60_000].map((t) => stepAt(steps, t)),
    ).toEqual([null, 2, 2, 3, 2, 2])
  })

  it('marks decisions in time order with the p99 their observation saw', () => {
    const marks = timelineMarks([
      { id: 2, time: iso(T0 + 5_000), outcome: 'skipped', reason: 'b', observation: null },
      {
        id: 1,
        time: iso(T0),
        outcome: 'applied',
        reason: 'a',
        observation: { latencyMs: { e2e: { p50: 100, p99: 612 } } },
      },
      { id: 3, time: 'not a time', outcome: 'applied', reason: 'c', observation: null },
    ])
    expect(marks).toEqual([
      { id: 1, tMs: T0, outcome: 'applied', reason: 'a', p99Ms: 612 },
      { id: 2, tMs: T0 + 5_000, outcome: 'skipped', reason: 'b', p99Ms: null },
    ])
  })

  it('finds the service a target controls from its name', () => {
    const services = [
      { service: 'chat', model: 'llama', version: '2' },
      { service: 'chat', model: 'mistral', version: '1' },
    ]
    expect(targetSelector('chat', services)).toEqual({ service: 'chat', model: '', version: '' })
    expect(targetSelector('chat/llama', services)).toEqual({ service: 'chat', model: 'llama', version: '' })
    expect(targetSelector('chat/llama/2', services)).toEqual({
      service: 'chat',
      model: 'llama',
      version: '2',
    })
    expect(targetSelector('chat/llama/9', services)).toEqual({ service: 'chat', model: 'llama', version: '' })
    expect(targetSelector('chat/gpt', services)).toEqual({ service: 'chat', model: '', version: '' })
    expect(targetSelector('batch-pool', services)).toBeNull()
  })

  it('picks the latency SLO of a phase and the availability SLO of a service', () => {
    const slo = (over: Partial<SloStatus>) =>
      ({
        name: 'x',
        kind: 'latency',
        selector: { service: 'chat' },
        thresholdMs: 100,
        phase: null,
        objective: 0.99,
        ...over,
      }) as SloStatus
    const slos = [
      slo({ name: 'b-total', thresholdMs: 450 }),
      slo({ name: 'a-total', thresholdMs: 500, phase: 'total' }),
      slo({ name: 'ttft', thresholdMs: 120, phase: 'ttft' }),
      slo({ name: 'other', selector: { service: 'embed' } }),
      slo({ name: 'avail', kind: 'availability', thresholdMs: null, objective: 0.999 }),
    ]
    expect(latencySlo(slos, 'chat', 'total')?.name).toBe('a-total')
    expect(latencySlo(slos, 'chat', 'e2e')?.name).toBe('a-total')
    expect(latencySlo(slos, 'chat', 'ttft')?.thresholdMs).toBe(120)
    expect(latencySlo(slos, 'chat', 'tpot')).toBeNull()
    expect(latencySlo(slos, 'nobody', 'total')).toBeNull()
    expect(availabilitySlo(slos, 'chat')?.name).toBe('avail')
    expect(availabilitySlo(slos, 'embed')).toBeNull()
  })
})

const point = (tMs: number, over: Partial<SignalPoint>): SignalPoint => ({
  t: iso(tMs),
  gauges: {},
  counters: {},
  ratesPerS: {},
  ...over,
})
const stat = (min: number, mean: number, max: number) => ({ min, mean, max, last: mean })
const series = (
  replica: string,
  points: SignalPoint[],
  histograms: SignalSeries['histograms'] = {},
): SignalSeries => ({
  service: 'chat',
  model: 'llama',
  version: '1',
  replica,
  node: 'n',
  sources: ['scrape:vllm'],
  points,
  histograms,
})

describe('signal transforms', () => {
  const res = {
    series: [
      series('r0', [
        point(T0, {
          gauges: { running: stat(1, 4, 6), kvCacheUsage: stat(0.2, 0.3, 0.4), batchSize: stat(2, 4, 8) },
        }),
        point(T0 + 60_000, { gauges: { running: stat(5, 5, 5) }, ratesPerS: { outputTokens: 10 } }),
      ]),
      series('r1', [
        point(T0, {
          gauges: { running: stat(2, 2, 2), kvCacheUsage: stat(0.5, 0.7, 0.9), batchSize: stat(1, 2, 3) },
        }),
        point(T0 + 120_000, { gauges: { waiting: stat(1, 1, 1) } }),
      ]),
    ],
  }

  it('sums, takes the max, min or mean across series per bucket, and leaves unreported values null', () => {
    const rows = signalRows(res, [
      { key: 'running', pick: gaugeMean('running'), combine: 'sum' },
      { key: 'kv', pick: gaugeMean('kvCacheUsage'), combine: 'max' },
      { key: 'bmin', pick: gaugeStat('batchSize', 'min'), combine: 'min' },
      { key: 'bmean', pick: gaugeMean('batchSize'), combine: 'mean' },
      { key: 'tok', pick: counterRate('outputTokens'), combine: 'sum' },
    ])
    expect(rows).toEqual([
      { tMs: T0, running: 6, kv: 0.7, bmin: 1, bmean: 3, tok: null },
      { tMs: T0 + 60_000, running: 5, kv: null, bmin: null, bmean: null, tok: 10 },
    ])
    // A bucket where none of the lines has a value is no row (r1's waiting-only bucket).
    expect(lastValue(rows, 'kv')).toBe(0.7)
    expect(lastValue(rows, 'tok')).toBe(10)
    expect(lastValue(rows, 'nothing')).toBeNull()
    expect(signalRows({ series: [] }, [{ key: 'x', pick: gaugeMean('running'), combine: 'sum' }])).toEqual([])
  })

  it('keeps server-bucket p99 estimates per replica, never merged', () => {
    const h = (p99s: Array<number | null>) => ({
      precision: 'buckets',
      count: 10,
      p50Ms: 1,
      p99Ms: 2,
      points: p99s.map((p99Ms, i) => ({ t: iso(T0 + i * 60_000), count: 5, p50Ms: 1, p99Ms })),
    })
    const out = importedP99Rows(
      {
        series: [
          series('r0', [], { ttft: h([100, null]) }),
          series('r1', [], { ttft: h([200, 250]) }),
          series('r2', []),
        ],
      },
      'ttft',
    )
    expect(out.replicas).toEqual(['r0', 'r1'])
    expect(out.precision).toBe('buckets')
    expect(out.rows).toEqual([
      { tMs: T0, r0: 100, r1: 200 },
      { tMs: T0 + 60_000, r0: null, r1: 250 },
    ])
    expect(importedP99Rows({ series: [series('r0', [])] }, 'tpot')).toEqual({
      replicas: [],
      precision: null,
      rows: [],
    })
  })

  it('turns request buckets into error-rate rows in time order', () => {
    expect(
      errorRateRows({
        points: [
          { t: iso(T0 + 10_000), ok: 9, error: 1, shed: 0, errorRatio: 0.1, shedRatio: 0 },
          { t: iso(T0), ok: 0, error: 0, shed: 2, errorRatio: null, shedRatio: 1 },
        ],
      }),
    ).toEqual([
      { tMs: T0, errorRatio: null, shedRatio: 1 },
      { tMs: T0 + 10_000, errorRatio: 0.1, shedRatio: 0 },
    ])
  })
})

describe('shed by class', () => {
  const point = (t: string, shed?: Record<string, number>): SignalPoint => ({
    t,
    gauges: {},
    counters: {},
    ratesPerS: {},
    byClass: [{ priorityClass: 0 }, { priorityClass: 2, ...(shed ? { shed } : {}) }],
  })
  const series = (points: SignalPoint[]): SignalSeries => ({
    service: 'chat',
    model: '',
    version: '',
    replica: 'r0',
    node: 'n',
    sources: ['proxy'],
    points,
    histograms: {},
  })
  it('draws one line per class that shed, per second of the step, with the reasons over the range', () => {
    const res = {
      stepMs: 10_000,
      series: [
        series([
          point('2026-11-25T12:00:00Z', { queue_timeout: 20, concurrency: 10 }),
          point('2026-11-25T12:00:10Z'),
        ]),
        series([point('2026-11-25T12:00:00Z', { queue_timeout: 10 })]),
      ],
    }
    const spec = shedPanel(res)!
    expect(spec.lines.map((l) => l.label)).toEqual(['class 2'])
    expect(spec.subtitle).toContain('queue timeout 30, concurrency 10')
    expect(signalRows(res, spec.lines)).toEqual([{ tMs: Date.parse('2026-11-25T12:00:00Z'), class2: 4 }])
  })
  it('is absent when nothing was shed', () => {
    expect(shedPanel({ stepMs: 10_000, series: [series([point('2026-11-25T12:00:00Z')])] })).toBeNull()
  })
})

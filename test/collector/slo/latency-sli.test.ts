// Acceptance 3: a latency SLO at 187 ms (no bucket boundary anywhere) has its SLI within 0.1% of the
// exact fraction computed from the raw samples. Also: LLM (TTFT) and time-slice SLOs through the engine.
import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createSloEngine } from '../../../collector/slo/engine.js'
import { validateSlo } from '../../../collector/slo/definition.js'
import type { SloDefinition } from '../../../collector/slo/definition.js'
import { FunctionSource, openDb } from './helpers.js'
import type { TestDb } from './helpers.js'
import { seededRandom } from '../../../agent/index.js'

const MIN = 60_000
const HOUR = 60 * MIN
const END = Date.UTC(2026, 4, 1, 6)

function slo(raw: object): SloDefinition {
  const r = validateSlo(raw)
  if (!r.ok) throw new Error(JSON.stringify(r.problems))
  return r.slo
}

const rng = seededRandom

let tdb: TestDb | undefined
afterEach(async () => {
  await tdb?.drop()
  tdb = undefined
})

describe('latency SLI at any threshold', () => {
  it('a 187 ms SLO is within 0.1% of the exact fraction of raw samples', async () => {
    tdb = await openDb('sqlite')
    const source = new FunctionSource(() => undefined)
    const random = rng(187)
    let good = 0
    let total = 0
    // 3 hours of log-normal latencies around 120 ms, one histogram per minute.
    for (let t = END - 3 * HOUR; t < END; t += MIN)
      for (let i = 0; i < 400; i++) {
        const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())
        const us = Math.max(1, Math.round(Math.exp(Math.log(120_000) + 0.35 * z)))
        source.record(t, 'total', us)
        total++
        if (us <= 187_000) good++
      }
    const engine = createSloEngine({ source, db: tdb.db })
    engine.setFileSlos([slo({ name: 'chat-latency', kind: 'latency', thresholdMs: 187, objective: 0.99 })])
    await engine.evaluate(END)
    const e = engine.get('chat-latency')!.evaluation!
    const exact = good / total
    expect(e.total).toBe(total)
    expect(Math.abs(e.sli! - exact) / exact).toBeLessThan(0.001)
    expect(exact).toBeGreaterThan(0.85)
    expect(exact).toBeLessThan(0.99)
  })

  it('holds for random samples and thresholds (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1_000, max: 2_000_000 }), { minLength: 50, maxLength: 300 }),
        fc.integer({ min: 1_000, max: 2_000_000 }),
        async (values, thresholdUs) => {
          const source = new FunctionSource(() => undefined)
          values.forEach((v, i) => source.record(END - HOUR + (i % 30) * MIN, 'total', v))
          const rows = await source.timeseries({}, { fromMs: END - HOUR, toMs: END }, 'total', MIN)
          const { countAtOrBelow } = await import('../../../collector/slo/math.js')
          const got = rows.reduce((acc, r) => acc + countAtOrBelow(r.histogram, thresholdUs), 0)
          const sure = values.filter((v) => v <= thresholdUs * 0.999).length
          const maybe = values.filter((v) => v <= thresholdUs * 1.001).length
          expect(got).toBeGreaterThanOrEqual(sure - 1e-9)
          expect(got).toBeLessThanOrEqual(maybe + 1e-9)
        },
      ),
      { numRuns: 30 },
    )
  })

  it('evaluates a TTFT SLO with time-slice budgeting', async () => {
    tdb = await openDb('sqlite')
    const source = new FunctionSource(() => undefined)
    // Two hours of 5-minute slices: slices starting on the half hour are slow (50% over 500 ms).
    for (let t = END - 2 * HOUR; t < END; t += MIN) {
      const slow = Math.floor(t / (5 * MIN)) % 6 === 0
      for (let i = 0; i < 20; i++) source.record(t, 'ttft', slow && i % 2 === 0 ? 900_000 : 200_000)
    }
    const engine = createSloEngine({ source, db: tdb.db })
    engine.setFileSlos([
      slo({
        name: 'ttft',
        kind: 'llm',
        metric: 'ttft',
        thresholdMs: 500,
        objective: 0.95,
        budgeting: 'timeslices',
        timeslice: { window: '5m', target: 0.9 },
      }),
    ])
    await engine.evaluate(END)
    const e = engine.get('ttft')!.evaluation!
    expect(e.total).toBe(24) // 24 five-minute slices
    expect(e.good).toBe(20)
    expect(e.sli).toBeCloseTo(20 / 24, 12)
  })
})

// Acceptance 2: alert scenarios on a controlled clock (no sleeping), with a 99.9% availability SLO.
// Firing and resolving times are checked against a reference computed in helpers.ts from the raw 10 s counts.
import { afterEach, describe, expect, it } from 'vitest'
import type { Kysely } from 'kysely'
import { createSloEngine } from '../../../collector/slo/engine.js'
import { validateSlo } from '../../../collector/slo/definition.js'
import type { SloTables } from '../../../collector/slo/tables.js'
import { FunctionSource, migrate, reference, scenario, sqliteDb } from './helpers.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const T0 = Date.UTC(2026, 0, 10)
const STEP_AT = T0 + 10 * HOUR

const SLO = validateSlo({
  name: 'chat-availability',
  kind: 'availability',
  selector: { service: 'chat' },
  objective: '99.9%',
  window: '30d',
})
if (!SLO.ok) throw new Error('fixture SLO invalid')

let db: Kysely<SloTables> | undefined
afterEach(async () => {
  await db?.destroy()
  db = undefined
})

async function run(counts: (t: number) => { ok: number; error: number; shed: number }, hours: number) {
  db = await sqliteDb()
  await migrate(db)
  const source = new FunctionSource(counts)
  const engine = createSloEngine({ source, db, evaluationIntervalMs: MIN })
  engine.setFileSlos([SLO.ok ? SLO.slo : (undefined as never)])
  const times: number[] = []
  const transitions: Array<{ t: number; tier: string; state: string }> = []
  const last = new Map<string, string>()
  for (let t = STEP_AT - 10 * MIN; t <= STEP_AT + hours * HOUR; t += MIN) {
    times.push(t)
    await engine.evaluate(t)
    for (const tier of engine.get('chat-availability')!.evaluation!.tiers) {
      if (last.get(tier.tier) !== tier.state) transitions.push({ t, tier: tier.tier, state: tier.state })
      last.set(tier.tier, tier.state)
    }
  }
  return { times, transitions, engine, source }
}

const firstAt = (tr: Array<{ t: number; tier: string; state: string }>, tier: string, state: string) =>
  tr.find((x) => x.tier === tier && x.state === state)?.t ?? null

describe('multiwindow burn-rate alerts (99.9%, 30 d)', () => {
  it('a steady 0.05% error rate fires nothing', async () => {
    const counts = scenario(1, 0, 0)
    const { transitions, engine } = await run(counts, 3)
    expect(transitions.filter((x) => x.state !== 'inactive')).toEqual([])
    const e = engine.get('chat-availability')!.evaluation!
    expect(e.burnRates['1h']).toBeCloseTo(0.5, 9)
    expect(e.sli).toBeCloseTo(0.9995, 9)
    expect(e.budget.remainingRatio).toBeCloseTo(0.5, 6)
  })

  it('a step to 1.5% fires the 14.4× page when the reference does, and resolves after errors stop', async () => {
    const stopAt = STEP_AT + 90 * MIN
    const counts = scenario(30, STEP_AT, stopAt)
    const { times, transitions } = await run(counts, 3)
    const ref = reference(counts, times, { factor: 14.4, longMs: HOUR, shortMs: 5 * MIN })
    expect(ref.firedAt).not.toBeNull()
    expect(firstAt(transitions, 'page-1h', 'firing')).toBe(ref.firedAt)
    expect(firstAt(transitions, 'page-1h', 'resolved')).toBe(ref.resolvedAt)
    // Detection: a 15× burn crosses 14.4× over 1 h after 14.4/15 of the long window (SRE workbook),
    // plus at most one evaluation interval.
    const detectMs = ((14.4 - 0.5) / (15 - 0.5)) * HOUR
    expect(ref.firedAt! - STEP_AT).toBeLessThanOrEqual(detectMs + MIN)
    expect(ref.firedAt! - STEP_AT).toBeGreaterThan(detectMs - MIN)
    // Reset: once errors stop, the short window clears within its length plus one evaluation interval.
    expect(ref.resolvedAt! - stopAt).toBeLessThanOrEqual(5 * MIN + MIN)
    expect(firstAt(transitions, 'page-6h', 'firing')).toBeNull()
  })

  it('a step to 0.7% fires the 6× page and not the 14.4× one', async () => {
    const counts = scenario(14, STEP_AT, STEP_AT + DAY)
    const { times, transitions } = await run(counts, 6)
    const ref6 = reference(counts, times, { factor: 6, longMs: 6 * HOUR, shortMs: 30 * MIN })
    const ref14 = reference(counts, times, { factor: 14.4, longMs: HOUR, shortMs: 5 * MIN })
    expect(ref14.firedAt).toBeNull()
    expect(ref6.firedAt).not.toBeNull()
    expect(firstAt(transitions, 'page-6h', 'firing')).toBe(ref6.firedAt)
    expect(firstAt(transitions, 'page-1h', 'firing')).toBeNull()
  })

  it('the minimum event count keeps a low-traffic SLO quiet', async () => {
    const low = validateSlo({
      ...{ name: 'tiny', kind: 'availability', objective: 0.999 },
      alerting: { minEvents: 1_000_000 },
    })
    expect(low.ok).toBe(true)
    db = await sqliteDb()
    await migrate(db)
    const engine = createSloEngine({ source: new FunctionSource(scenario(30, STEP_AT, STEP_AT + DAY)), db })
    engine.setFileSlos([low.ok ? low.slo : (undefined as never)])
    for (let t = STEP_AT; t <= STEP_AT + 2 * HOUR; t += 5 * MIN) await engine.evaluate(t)
    const tiers = engine.get('tiny')!.evaluation!.tiers
    expect(tiers.find((x) => x.tier === 'page-1h')!.longBurnRate).toBeGreaterThan(14.4)
    expect(tiers.every((x) => x.state === 'inactive')).toBe(true)
  })
})

import { describe, expect, it } from 'vitest'
import { DEMO_SLOS_YAML } from '../../../agent/index.js'
import { createDemoFleet } from '../../../agent/demo/fleet.js'
import { parseSloText } from '../../../collector/slo/loader.js'

// The demo's SLOs tell a story: vision latency healthy, vision tail burning (the 6× page tier fires, the
// 14.4× one does not), measured on the demo fleet's own vision requests.
describe('demo SLOs', () => {
  const loaded = parseSloText(DEMO_SLOS_YAML, 'demo-slos.yaml')
  const slo = (name: string) => {
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems))
    const s = loaded.slos.find((x) => x.name === name)
    if (!s || s.sli.kind !== 'latency') throw new Error(`no latency SLO ${name}`)
    return { objective: s.objective, thresholdMs: s.sli.thresholdMs }
  }
  const fleet = createDemoFleet({ seed: 7, node: 'demo' })
  const totalsMs = Array.from({ length: 100_000 }, () => (fleet.vision().phasesUs['total'] ?? 0) / 1000)
  const burn = (name: string) => {
    const { objective, thresholdMs } = slo(name)
    const bad = totalsMs.filter((t) => t > thresholdMs).length / totalsMs.length
    return bad / (1 - objective)
  }

  it('parses', () => expect(loaded.ok).toBe(true))

  it('keeps demo-vision-latency healthy', () => expect(burn('demo-vision-latency')).toBeLessThan(0.5))

  it('burns demo-vision-tail above the 6× tier and below the 14.4× one', () => {
    expect(burn('demo-vision-tail')).toBeGreaterThan(6)
    expect(burn('demo-vision-tail')).toBeLessThan(14.4)
  })
})

import { describe, expect, it } from 'vitest'
import { createTargetPolicy } from '../../../controller/index.js'
import type { Action } from '../../../controller/index.js'
import { parseConfigText } from '../../../collector/config/index.js'
import type { ControllerTargetConfig } from '../../../collector/index.js'
import { tailguardOptionsFromConfig } from '../../../controller/policies/tailguard/options.js'
import { observation } from '../policies/fixtures.js'

const target: ControllerTargetConfig = {
  name: 'chat',
  service: 'chat',
  slos: [],
  objective: { thresholdMs: 500, phase: 'ttft' },
  knobs: ['admission'],
  bounds: { minReplicas: 1, maxReplicas: 4 },
  initial: { replicas: 2, windowMs: 5, maxBatch: 16, admission: [{ maxQueue: 64, maxConcurrency: 32 }] },
  actuators: [{ type: 'agent', url: 'http://127.0.0.1:4318' }],
}

/** Steps a policy over a steady LLM load and returns the kinds of every action it took. */
function run(file: Parameters<typeof createTargetPolicy>[2]): Action[] {
  const made = createTargetPolicy('tailguard', target, file)
  if (!made.ok) throw new Error(made.error)
  const p = made.policy
  let s = p.init({
    desiredReplicas: 2,
    batchWindowMs: 5,
    maxBatch: 16,
    admission: [{ maxQueue: 64, maxConcurrency: 32 }],
  })
  const actions: Action[] = []
  for (let i = 0; i < 12; i++) {
    const out = p.step(
      s,
      observation({
        intervalMs: 10_000,
        arrivalRps: { 6: 10, 10: 10, 60: 10 },
        latencyMs: {
          queue: { p50: 0, p99: 0, count: 100 },
          service: { p50: null, p99: null, count: 0 },
          e2e: { p50: 150, p99: 190, count: 100 },
          ttft: { p50: 7, p99: 20, count: 100 },
          tpot: { p50: 6, p99: 7.5, count: 100 },
        },
        inFlight: 2,
        replicas: { ready: 2, starting: 0 },
        completed: 100,
      }),
      i * 10_000,
    )
    s = out.state
    actions.push(...out.actions)
  }
  return actions
}

// The live controller builds a target's tailguard policy from the config file's policy.tailguard section too.
describe('createTargetPolicy with the policy.tailguard section', () => {
  it('reads the section as tailguard sim does (seconds to ms; what is left out stays out)', () => {
    const cfg = parseConfigText(
      'policy:\n  tailguard:\n    headroom: 0.4\n    coldStartS: 30\n    features: { admission: false }\n',
      'tailguard.yaml',
    )
    expect(tailguardOptionsFromConfig(cfg.policy!.tailguard!)).toEqual({
      headroom: 0.4,
      coldStartMs: 30_000,
      features: { admission: false },
    })
  })

  it("applies the section's options: with admission off the policy never moves the caps", () => {
    expect(run({}).some((a) => a.kind === 'admission')).toBe(true)
    expect(run({ features: { admission: false } }).some((a) => a.kind === 'admission')).toBe(false)
  })

  it("lets the section narrow the target's replica bounds, never widen them", () => {
    // A warm minimum of 3 from the section: the policy asks for at least 3 of the target's 1..4.
    const up = run({ minReplicas: 3 }).filter((a) => a.kind === 'scale')
    expect(up.at(-1)).toMatchObject({ desiredReplicas: 3 })
    // A section minimum above the target's maximum is cut to it.
    const capped = run({ minReplicas: 9 }).filter((a) => a.kind === 'scale')
    expect(capped.at(-1)).toMatchObject({ desiredReplicas: 4 })
  })

  it('names the policy a misspelt name meant', () => {
    expect(createTargetPolicy('aimdd', target, {})).toEqual({
      ok: false,
      error:
        "unknown policy 'aimdd'; did you mean 'aimd'? (choose one of tailguard, static, hpa, keda, kpa, aimd)",
    })
  })
})

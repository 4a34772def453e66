import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { api, eventually, spawnStart } from '../helpers/cli.js'
import { useTempDirs } from '../helpers/temp-dirs.js'
import type { CliProcess } from '../helpers/cli.js'

// What `npm start` shows a newcomer: the serving demo's load steps up and the controller answers it on the demo's
// replicas, each action with its reason. The demo's base load is sized to this machine (15% of what two replicas
// serve flat out, measured at start: the default; the rest of the suite runs it light), and here the step goes past
// what two replicas serve at all (STEP_X), so the controller must add replicas on a fast machine and a slow one
// (each a `serve-model` process behind its own proxy, started by the demo's replica set) with the reason, and the
// new replicas must take traffic under their own labels. (Scaling back down after the step is the policy's call,
// tested in the simulator; draining and stopping a replica is tested in test/agent/demo/serving.test.ts.)
// It runs alone after the rest of the suite (package.json), as the load-step test does: on a 2-core machine the
// parallel suite starves the model servers.

const tempDir = useTempDirs('tg-start-demo-step-')
const procs: CliProcess[] = []
afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM')
})

interface Decision {
  outcome: string
  outcomeDetail: string | null
  reason: string
  time: string
  actions: Array<{ kind: string; reason: string }>
  setpointsBefore: { desiredReplicas: number }
  setpointsAfter: { desiredReplicas: number }
}

/** Seconds of base load before the step, and how long the step lasts. */
const STEP_AFTER_S = 15
const HOLD_S = 120
/**
 * The step: 8× the base of 15% of what two replicas serve flat out is 1.2× that flat out, past what the two
 * starting replicas can serve at all, on any machine. The demo's own 3× step needs more replicas only where the
 * model is slow against the 500 ms objective, which depends on the machine: on CI (2026-11-25), where a replica
 * served 2.4× what it serves on the development machine, a 3× step brought no scale-up within 120 s (what the
 * controller decided instead was not kept; a failed try now prints its decisions).
 */
const STEP_X = 8

describe('tailguard start: the demo load step', () => {
  // One retry: on a shared machine the whole plane, its model servers and the load share two cores. A failed try
  // prints what the controller saw and did (the decisions), so a retry that passes still leaves the evidence.
  it(
    'steps the serving demo past what two replicas serve; the controller adds replicas, which take traffic',
    {
      retry: 1,
      timeout: 300_000,
    },
    async () => {
      const dir = tempDir()
      const config = join(dir, 'tailguard.yaml')
      writeFileSync(config, 'version: 1\nagent:\n  intervalMs: 500\ncontroller:\n  intervalMs: 1000\n')
      const start = spawnStart(dir, config, [
        '--no-keda',
        '--demo-load',
        '0.15',
        '--demo-step-after',
        String(STEP_AFTER_S),
        '--demo-step-hold',
        String(HOLD_S),
        '--demo-step',
        String(STEP_X),
      ])
      procs.push(start)
      try {
        await stepAndScale(start)
      } finally {
        await start.kill('SIGTERM')
      }
    },
  )
})

async function stepAndScale(start: CliProcess): Promise<void> {
  const [, perReplica, baseRps] = await start.waitFor(
    /one replica serves ([\d.]+) req\/s here, so demo-llm's trace replays at ([\d.]+) req\/s \(15% of what two replicas serve flat out\)/,
    60_000,
  )
  expect(Number(perReplica)).toBeGreaterThan(0)
  // 15% of two replicas, printed rounded.
  expect(Number(baseRps)).toBeCloseTo(0.3 * Number(perReplica), 0)
  const [, base, token] = await start.waitFor(/dashboard:\s+(http:\/\/[^/\s]+)\/#token=(\S+)/, 30_000)
  const decisions = async () =>
    (await api<{ decisions: Decision[] }>(base!, '/api/v1/decisions?target=demo-llm&from=-1h', token!)).body
      .decisions ?? []

  const [stepLine] = await start.waitFor(
    new RegExp(`demo: demo-llm's load steps up ${STEP_X}× to [\\d.]+ req\\/s until`),
    (STEP_AFTER_S + 30) * 1000,
  )
  console.log(`${new Date().toISOString()} ${stepLine}`)
  const scaledUp = await eventually(
    async () =>
      (await decisions()).find(
        (d) =>
          d.outcome === 'applied' &&
          d.actions.some((a) => a.kind === 'scale') &&
          d.setpointsAfter.desiredReplicas > d.setpointsBefore.desiredReplicas,
      ),
    HOLD_S * 1000,
    1000,
  ).catch(async (err: Error) => {
    // What the controller saw and did instead: the evidence a failure needs (a CI log has nothing else).
    const seen = (await decisions().catch(() => [])).slice(-12)
    const lines = seen.map(
      (d) => `${d.time} ${d.outcome} ${d.actions.map((a) => a.kind).join('+')}: ${d.reason.slice(0, 400)}`,
    )
    const evidence = `${err.message}\nlast decisions:\n${lines.join('\n')}\nstart printed:\n${start.output().slice(-3000)}`
    console.log(evidence)
    throw new Error(evidence)
  })
  console.log(`scale-up at ${scaledUp.time}: ${scaledUp.reason} -> ${scaledUp.outcomeDetail ?? ''}`)
  expect(scaledUp.reason).toMatch(/need \d+, have \d+/)
  expect(scaledUp.outcomeDetail).toMatch(/starting r\d+/)
  const added = /starting (r\d+)/.exec(scaledUp.outcomeDetail!)![1]!

  // The new replica serves requests under its own label (its proxy records them).
  const served = await eventually(
    async () => {
      const r = await api<{ count?: number }>(
        base!,
        `/api/v1/latency?service=demo-llm&replica=${added}&from=-10m`,
        token!,
      )
      return r.status === 200 && (r.body.count ?? 0) > 0 ? r.body.count! : null
    },
    30_000,
    1000,
  )
  expect(served).toBeGreaterThan(0)

  // Every decision is stored with its reason and outcome.
  for (const d of await decisions()) {
    expect(d.reason.length).toBeGreaterThan(0)
    expect(['applied', 'failed', 'skipped']).toContain(d.outcome)
  }
}

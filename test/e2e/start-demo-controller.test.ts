import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { api, eventually, spawnStart } from '../helpers/cli.js'
import { useTempDirs } from '../helpers/temp-dirs.js'
import type { CliProcess } from '../helpers/cli.js'

// Out of the box, `tailguard start` runs the live controller on its serving demo (demo-llm: reference model
// servers behind tailguard proxies), in enforce mode: decisions appear in the API and the proxies' admission
// caps move through the agent's setpoints API. With --demo-controller observe nothing moves.

// Registered first, so removed last: after-all hooks run in reverse, and the processes must stop first.
const tempDir = useTempDirs('tg-start-demo-ctl-')
const procs: CliProcess[] = []
afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM')
})

interface Decision {
  target: string
  mode: string
  outcome: string
  reason: string
  actions: Array<{ kind: string; reason: string }>
  setpointsAfter: { admission: Array<{ maxConcurrency: number }> }
}
interface Setpoints {
  admission: Array<{ priorityClass: number; maxConcurrency: number; maxQueue: number }>
  fencingToken: number | null
  source: string
}

async function startDemo(extra: string[]) {
  const dir = tempDir()
  const config = join(dir, 'tailguard.yaml')
  // Short intervals so the policy's 8 learning intervals fit in seconds; policy.tailguard is read as well.
  writeFileSync(
    config,
    'version: 1\nagent:\n  intervalMs: 500\ncontroller:\n  intervalMs: 1000\npolicy:\n  tailguard:\n    headroom: 0.2\n',
  )
  const start = spawnStart(dir, config, ['--no-keda', ...extra])
  procs.push(start)
  const [, base, token] = await start.waitFor(/dashboard:\s+(http:\/\/[^/\s]+)\/#token=(\S+)/, 30_000)
  const [, agent] = await start.waitFor(/OTLP\/HTTP:\s+(http:\/\/[^/\s]+)\//)
  const tokens = JSON.parse(readFileSync(join(dir, 'data', 'tokens.json'), 'utf8')) as { admin: string }
  const decisions = async () =>
    (await api<{ decisions: Decision[] }>(base!, '/api/v1/decisions?target=demo-llm', token!)).body
      .decisions ?? []
  const setpoints = async () => (await api<Setpoints>(agent!, '/v1/setpoints', tokens.admin)).body
  return { start, decisions, setpoints }
}

describe('tailguard start: the controller on the serving demo', () => {
  it('enforces by default: decisions for demo-llm, applied to the proxies through the agent', async () => {
    const { start, decisions, setpoints } = await startDemo([])
    expect(start.output()).toMatch(/controller: demo-llm \(enforce\), every 1 s/)
    const before = await setpoints()
    expect(before).toMatchObject({ source: 'config', fencingToken: null })
    expect(before.admission.map((c) => c.maxConcurrency)).toEqual([128, 128]) // two proxies × 64
    const applied = await eventually(
      async () => (await decisions()).find((d) => d.outcome === 'applied' && d.actions.length > 0),
      75_000,
      1000,
    )
    expect(applied).toMatchObject({ target: 'demo-llm', mode: 'enforce' })
    expect(applied.reason).toMatch(/Little's law/)
    const after = await eventually(async () => {
      const sp = await setpoints()
      return sp.source === 'tailguard-controller/demo-llm' ? sp : null
    }, 10_000)
    expect(after.fencingToken).toBeGreaterThanOrEqual(1)
    // The proxies hold what the decision set (each proxy half of it, rounded up; the agent shows the sum).
    const want = applied.setpointsAfter.admission.map((c) => c.maxConcurrency)
    after.admission.forEach((c, k) => {
      expect(c.maxConcurrency).toBeGreaterThanOrEqual(Math.min(want[k]!, 1_000_000))
      expect(c.maxConcurrency).toBeLessThanOrEqual(Math.min(want[k]!, 1_000_000) + 1)
    })
    expect(after.admission.map((c) => c.maxConcurrency)).not.toEqual([128, 128])
  }, 120_000)

  it('with --demo-controller observe, decides and stores but changes nothing', async () => {
    const { start, decisions, setpoints } = await startDemo(['--demo-controller', 'observe'])
    expect(start.output()).toMatch(/controller: demo-llm \(observe\)/)
    const decided = await eventually(
      async () => (await decisions()).find((d) => d.actions.length > 0),
      75_000,
      1000,
    )
    expect(decided).toMatchObject({ mode: 'observe', outcome: 'skipped' })
    expect(await setpoints()).toMatchObject({ source: 'config', fencingToken: null })
    expect((await setpoints()).admission.map((c) => c.maxConcurrency)).toEqual([128, 128])
  }, 120_000)
})

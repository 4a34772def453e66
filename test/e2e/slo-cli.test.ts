// SLOs end to end through the CLI: the built collector (`tailguard collector --slos FILE`, dist/; run
// `npm run build` first) on a SQLite file, fed by a real in-process agent over HTTP. The SLO API and the
// per-SLO gauges on /metrics must reflect exactly the requests the agent recorded; editing the SLO file
// while the collector runs reloads it; an invalid file stops the collector with file, line and field.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { startAgent } from '../../agent/index.js'
import type { RunningAgent } from '../../agent/index.js'
import { api, eventually, spawnCli } from '../helpers/cli.js'
import type { CliProcess } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'

const API = 'api-token-slo-cli-0123456789'
const AGENT = 'agent-token-slo-cli-0123456789'
const env = { TAILGUARD_API_TOKEN: API, TAILGUARD_AGENT_TOKEN: AGENT }
const FIXTURES = fileURLToPath(new URL('../fixtures/slo/', import.meta.url))

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'tg-slo-cli-'))
  dirs.push(d)
  return d
}

const slosYaml = (availabilityObjective: string, extra = '') => `version: 1
slos:
  - name: shop-latency
    description: checkout requests within 187 ms
    kind: latency
    selector: { service: shop }
    thresholdMs: 187
    objective: 99%
    window: 30d
  - name: shop-availability
    kind: availability
    selector: { service: shop }
    objective: ${availabilityObjective}
    window: 7d
${extra}`

/** The SLO status fields this test reads (collector/routes/slos.ts). */
interface Status {
  name: string
  kind: string
  objective: number
  window: string
  sli: number | null
  budgetRemaining: number | null
  events: { good: number; total: number }
  errorBudget: { remainingRatio: number; consumedEvents: number } | null
  burnRates: Record<string, number>
  alerts: Array<{ tier: string; severity: string; longWindow: string; longBurnRate: number; state: string }>
  evaluatedAt: string | null
}

/** The value of one Prometheus sample line, e.g. `tailguard_slo_sli_ratio{slo="x"} 0.98`. */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

describe('SLOs through the CLI (tailguard collector --slos)', () => {
  it('serves SLO status and gauges from an agent’s traffic, and reloads the edited file', async () => {
    const dir = tmp()
    const slos = join(dir, 'slos.yaml')
    writeFileSync(slos, slosYaml('99.9%'))
    // Evaluate every second instead of every minute.
    const config = join(dir, 'tailguard.yaml')
    writeFileSync(config, 'collector:\n  sloEvaluationMs: 1000\n')
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const collector: CliProcess = spawnCli(
      [
        'collector',
        '--config',
        config,
        '--port',
        String(port),
        '--db',
        join(dir, 'tg.db'),
        '--slos',
        slos,
        '--log-level',
        'warn',
      ],
      env,
    )
    let agent: RunningAgent | undefined
    try {
      await collector.waitFor(/listening on http/)
      const listed = await api<{ slos: Status[] }>(base, '/api/v1/slos', API)
      expect(listed.status).toBe(200)
      expect(listed.body.slos.map((s) => [s.name, s.kind, s.objective, s.window])).toEqual([
        ['shop-latency', 'latency', 0.99, '30d'],
        ['shop-availability', 'availability', 0.999, '7d'],
      ])
      // The evaluator counts closed minutes only; the agent's clock runs 90 s behind so that its reports
      // land in minutes that are already closed, instead of the test waiting for the minute to end.
      agent = await startAgent(
        {
          id: 'slo-agent',
          node: 'node-a',
          collectorUrl: base,
          token: AGENT,
          intervalMs: 100,
          spoolDir: null,
          spoolMaxBytes: 1 << 20,
          http: null,
        },
        { clock: () => Date.now() - 90_000 },
      )
      const labels = { service: 'shop', model: 'm', version: '1', replica: 'r0', node: 'node-a' }
      // 1,000 requests: 40 slower than 187 ms (300 ms), 10 errors.
      const sent = { total: 0, fast: 0, ok: 0 }
      for (let i = 0; i < 1000; i++) {
        const slow = i % 25 === 0
        const failed = i % 100 === 7
        agent.recorder.recordRequest({
          labels,
          status: failed ? 'error' : 'ok',
          ...(failed ? { errorClass: 'http_500' } : {}),
          phasesUs: { total: slow ? 300_000 : 100_000 },
        })
        sent.total++
        if (!slow) sent.fast++
        if (!failed) sent.ok++
        if (i % 100 === 99) await new Promise((r) => setTimeout(r, 30))
      }
      await agent.stop()
      agent = undefined
      expect(sent).toEqual({ total: 1000, fast: 960, ok: 990 })

      const byName = async () => {
        const r = await api<{ slos: Status[] }>(base, '/api/v1/slos', API)
        return new Map(r.body.slos.map((s) => [s.name, s]))
      }
      const statuses = await eventually(async () => {
        const m = await byName()
        const done =
          m.get('shop-availability')?.events.total === sent.total &&
          m.get('shop-latency')?.events.total === sent.total
        return done ? m : undefined
      }, 30_000)
      const av = statuses.get('shop-availability')!
      expect(av.events).toEqual({ good: sent.ok, total: sent.total })
      expect(av.sli).toBeCloseTo(0.99, 12)
      // 1% errors against a 0.1% budget: overspent ten times.
      expect(av.budgetRemaining).toBeCloseTo(1 - 0.01 / 0.001, 9)
      expect(av.burnRates['7d']).toBeCloseTo(10, 9)
      const lat = statuses.get('shop-latency')!
      expect(lat.events).toEqual({ good: sent.fast, total: sent.total })
      expect(lat.sli).toBeCloseTo(0.96, 12)
      expect(lat.burnRates['30d']).toBeCloseTo(0.04 / 0.01, 9)
      expect(lat.alerts.map((a) => a.tier)).toEqual(['page-1h', 'page-6h', 'ticket-1d', 'ticket-3d'])

      // The detail route: status, burn-down series and definition.
      const detail = await api<
        Status & {
          burnDown: Array<{ t: string; remainingRatio: number }>
          definition: Record<string, unknown>
        }
      >(base, '/api/v1/slos/shop-latency', API)
      expect(detail.status).toBe(200)
      expect(detail.body.events).toEqual(lat.events)
      expect(detail.body.definition).toMatchObject({ name: 'shop-latency', thresholdMs: 187 })
      expect(detail.body.burnDown.length).toBeGreaterThan(0)
      expect(detail.body.burnDown.at(-1)!.remainingRatio).toBeCloseTo(lat.budgetRemaining!, 9)
      expect((await api(base, '/api/v1/slos/nope', API)).status).toBe(404)

      // The gauges on /metrics carry the same figures.
      const metrics = await eventually(async () => {
        const r = await api<string>(base, '/metrics', API)
        const text = String(r.body)
        const v = sample(text, 'tailguard_slo_sli_ratio', 'slo="shop-availability"')
        return v !== undefined && Math.abs(v - 0.99) < 1e-9 ? text : undefined
      })
      expect(sample(metrics, 'tailguard_slo_objective_ratio', 'slo="shop-availability"')).toBe(0.999)
      expect(sample(metrics, 'tailguard_slo_sli_ratio', 'slo="shop-latency"')).toBeCloseTo(0.96, 9)
      expect(
        sample(metrics, 'tailguard_slo_error_budget_remaining_ratio', 'slo="shop-availability"'),
      ).toBeCloseTo(-9, 6)
      expect(sample(metrics, 'tailguard_slo_burn_rate', 'slo="shop-latency",window="30d"')).toBeCloseTo(4, 9)

      // Editing the file while the collector runs: a changed objective and one more SLO.
      writeFileSync(
        slos,
        slosYaml(
          '99%',
          `  - name: shop-latency-slow
    kind: latency
    selector: { service: shop }
    thresholdMs: 500
    objective: 99%
`,
        ),
      )
      const reloaded = await eventually(async () => {
        const m = await byName()
        const slow = m.get('shop-latency-slow')
        return m.get('shop-availability')?.objective === 0.99 && slow?.evaluatedAt ? m : undefined
      }, 15_000)
      expect(reloaded.get('shop-latency-slow')!.events).toEqual({ good: sent.total, total: sent.total })
      await eventually(async () => {
        const m = await byName()
        // 1% errors against a 1% budget: exactly spent.
        const r = m.get('shop-availability')!.budgetRemaining
        return r !== null && Math.abs(r) < 1e-9
      }, 15_000)
    } finally {
      await agent?.stop()
      await collector.kill('SIGTERM')
    }
  }, 90_000)

  it('an invalid SLO file stops the collector with the file, line and field of each problem', async () => {
    const dir = tmp()
    const port = await freePort()
    const file = join(FIXTURES, 'invalid-tailguard.yaml')
    const c = spawnCli(['collector', '--port', String(port), '--db', join(dir, 'tg.db'), '--slos', file], env)
    const code = await c.exited
    expect(code).not.toBe(0)
    expect(code).not.toBeNull()
    const out = c.output()
    expect(out).toContain(`${file}:8: slos[1].phase:`)
    expect(out).toContain(`${file}:9: slos[1].thresholdMs:`)
    expect(out).toContain(`${file}:10: slos[1].objective:`)
    expect(out).not.toMatch(/listening on http/)
  }, 30_000)
})

import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { startAgent } from '../../../agent/index.js'
import type { RunningAgent } from '../../../agent/index.js'
import { makeLogger, resolveConfig, runCollector } from '../../../collector/index.js'
import { api, eventually } from '../../helpers/cli.js'
import { useTempDirs } from '../../helpers/temp-dirs.js'

// An agent whose token the collector refuses: it backs off instead of retrying every few hundred ms, says so in
// one log line (not one per retry) and in /healthz, and keeps its reports, which a fixed token then delivers.

const ADMIN = 'token-refused-admin-0123456789'
const GOOD = 'token-refused-agent-good-0123'
const WRONG = 'token-refused-agent-wrong-012'
const labels = { service: 'chat', model: 'm', version: '1', replica: 'r0', node: 'n' }
const tempDir = useTempDirs('tg-token-')

const running: Array<{ stop(): Promise<void> }> = []
afterAll(async () => {
  for (const r of running.reverse()) await r.stop()
})

function capture() {
  const lines: string[] = []
  const logger = makeLogger('info', 'json', {
    isTTY: false,
    write: (t: string) => void lines.push(...t.split('\n').filter(Boolean)),
  })
  return { lines, messages: () => lines.map((l) => (JSON.parse(l) as { msg: string }).msg), logger }
}

type RunningCollector = Awaited<ReturnType<typeof runCollector>>

async function agentWith(token: string, collector: RunningCollector, spoolDir: string) {
  const log = capture()
  const agent: RunningAgent = await startAgent(
    {
      id: 'a',
      node: 'n',
      collectorUrl: collector.url,
      token,
      intervalMs: 100,
      spoolDir,
      spoolMaxBytes: 1 << 20,
      http: { host: '127.0.0.1', port: 0, token: null },
    },
    { logger: log.logger },
  )
  running.push(agent)
  const healthz = async () =>
    (await (await fetch(`http://127.0.0.1:${agent.address!.port}/healthz`)).json()) as {
      status: string
      collector: { tokenRefused: number | null; problem?: string }
    }
  return { agent, log, healthz }
}

describe('an agent whose token the collector refuses', () => {
  it('backs off, logs one line, shows it in /healthz, keeps its reports; a fixed token delivers them', async () => {
    const dir = tempDir()
    const cfg = resolveConfig({
      flags: {
        collector: {
          port: 0,
          db: join(dir, 'c.db'),
          apiTokens: [{ token: ADMIN, scope: 'admin' }],
          agentTokens: [{ token: GOOD }],
        },
      },
    })
    const collector = await runCollector(cfg, makeLogger('silent'))
    running.push(collector)
    const spoolDir = join(dir, 'spool')

    const wrong = await agentWith(WRONG, collector, spoolDir)
    for (let i = 0; i < 5; i++)
      wrong.agent.recorder.recordRequest({ labels, status: 'ok', phasesUs: { total: 1000 + i } })
    await eventually(async () => wrong.agent.shipper.stats.failures >= 3, 30_000, 50)
    const t0 = Date.now()
    const failuresAt = wrong.agent.shipper.stats.failures
    await new Promise((r) => setTimeout(r, 2_000))
    // Exponential backoff: by now retries are seconds apart, not one per 100 ms interval.
    expect(wrong.agent.shipper.stats.failures - failuresAt).toBeLessThanOrEqual(2)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2_000)

    const refused = wrong.log.messages().filter((m) => m.includes('refused the agent token'))
    expect(refused).toHaveLength(1)
    expect(refused[0]).toMatch(/^collector refused the agent token \(401\): check TAILGUARD_AGENT_TOKEN; /)
    const health = await wrong.healthz()
    expect(health.status).toBe('degraded')
    expect(health.collector.tokenRefused).toBe(401)
    expect(health.collector.problem).toBe(
      'collector refused the agent token (401): check TAILGUARD_AGENT_TOKEN',
    )
    expect(wrong.agent.shipper.stats.rejected).toBe(0) // nothing thrown away
    await wrong.agent.stop()
    running.pop()

    // The operator fixes the token and restarts the agent on the same spool: every request arrives.
    const fixed = await agentWith(GOOD, collector, spoolDir)
    await eventually(async () => {
      const r = await api<{ count: number }>(collector.url, '/api/v1/latency?service=chat&from=-1h', ADMIN)
      return r.body.count === 5
    }, 30_000)
    expect((await fixed.healthz()).status).toBe('ok')
    expect(fixed.log.messages().some((m) => m.includes('refused'))).toBe(false)
  }, 90_000)
})

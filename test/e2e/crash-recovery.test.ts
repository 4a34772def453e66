import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { startAgent } from '../../agent/index.js'
import type { RunningAgent } from '../../agent/index.js'
import { api, eventually, spawnCli } from '../helpers/cli.js'
import type { CliProcess } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'
import { tempPgDatabase } from '../helpers/pg.js'
import { testDialects } from '../helpers/dialects.js'

const API = 'api-token-crash-recovery-0123456789'
const AGENT = 'agent-token-crash-recovery-0123456789'
const env = { TAILGUARD_API_TOKEN: API, TAILGUARD_AGENT_TOKEN: AGENT }

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

// Acceptance 4 of issue #2: kill -9 the collector while agents send; after the restart every acknowledged
// report is stored, the agents resend what was not acknowledged, and the total equals what was sent.
for (const dialect of testDialects()) {
  describe(`${dialect}: collector killed with SIGKILL while two agents send`, () => {
    it('loses nothing and counts nothing twice', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'tg-crash-'))
      dirs.push(dir)
      const pgdb = dialect === 'postgres' ? await tempPgDatabase() : null
      const db = pgdb ? pgdb.url : join(dir, 'tailguard.db')
      const port = await freePort()
      const startCollector = async () => {
        const c = spawnCli(['collector', '--port', String(port), '--db', db, '--log-level', 'warn'], env)
        await c.waitFor(/listening on http/)
        return c
      }
      let collector: CliProcess = await startCollector()
      const agents: RunningAgent[] = []
      try {
        for (const name of ['a', 'b'])
          agents.push(
            await startAgent({
              id: `agent-${name}`,
              node: `node-${name}`,
              collectorUrl: `http://127.0.0.1:${port}`,
              token: AGENT,
              intervalMs: 50,
              spoolDir: join(dir, `spool-${name}`),
              spoolMaxBytes: 64 << 20,
              http: null,
            }),
          )
        const labels = (a: number) => ({
          service: 'crashy',
          model: 'm',
          version: '1',
          replica: `r${a}`,
          node: `node-${a}`,
        })
        let sent = 0
        const sendFor = async (ms: number) => {
          const end = Date.now() + ms
          while (Date.now() < end) {
            agents.forEach((agent, a) => {
              for (let i = 0; i < 50; i++) {
                agent.recorder.recordRequest({
                  labels: labels(a),
                  status: 'ok',
                  phasesUs: { total: 1000 + ((sent + i) % 997) },
                })
              }
            })
            sent += 50 * agents.length
            await new Promise((r) => setTimeout(r, 10))
          }
        }
        await sendFor(1500)
        const before = await api<{ count: number }>(
          `http://127.0.0.1:${port}`,
          '/api/v1/latency?service=crashy&from=-1h',
          API,
        )
        expect(before.body.count).toBeGreaterThan(0) // acknowledged reports exist before the kill
        const killed = await collector.kill('SIGKILL')
        expect(killed).toBeNull() // killed by the signal, not a clean exit
        await sendFor(1000) // the agents keep recording and spooling while the collector is down
        collector = await startCollector()
        await sendFor(1000)
        // The outage was felt: sends failed while the collector was down.
        expect(agents.reduce((n, a) => n + a.shipper.stats.failures, 0)).toBeGreaterThan(0)
        for (const agent of agents) await agent.stop()
        agents.length = 0
        const total = await eventually(async () => {
          const r = await api<{ count: number }>(
            `http://127.0.0.1:${port}`,
            '/api/v1/latency?service=crashy&from=-1h',
            API,
          )
          return r.body.count === sent ? r.body.count : undefined
        }, 30_000)
        expect(total).toBe(sent)
        const breakdown = await api<{ requests: { ok: number } }>(
          `http://127.0.0.1:${port}`,
          '/api/v1/breakdown?service=crashy&from=-1h',
          API,
        )
        expect(breakdown.body.requests.ok).toBe(sent)
      } finally {
        for (const agent of agents) await agent.stop()
        await collector.kill('SIGTERM')
        await pgdb?.drop()
      }
    })
  })
}

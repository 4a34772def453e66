import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { api, eventually, spawnCli } from '../helpers/cli.js'
import type { CliProcess } from '../helpers/cli.js'
import { startServer } from '../helpers/contract-servers.js'
import { freePort } from '../helpers/ports.js'
import { makeReport } from '../helpers/reports.js'

const ADMIN = 'admin-token-controller-cli-0123456789'
const READ = 'read-token-controller-cli-0123456789'
const AGENT = 'agent-token-controller-cli-0123456789'
const env = { TAILGUARD_API_TOKEN: ADMIN, TAILGUARD_READ_TOKEN: READ, TAILGUARD_AGENT_TOKEN: AGENT }
const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const config = (hookUrl: string, policy = 'aimd') => `controller:
  intervalMs: 1000
controllers:
  - name: chat
    service: chat
    slos: []
    objective: { thresholdMs: 100 }
    policy: ${policy}
    knobs: [batching]
    bounds: { minReplicas: 1, maxReplicas: 2 }
    initial: { replicas: 1, windowMs: 5, maxBatch: 32, admission: [{ maxQueue: 64, maxConcurrency: 16 }] }
    actuators:
      - type: webhook
        url: ${hookUrl}
`

async function run(args: string[], extra: Record<string, string> = {}) {
  const p = spawnCli(args, { ...env, ...extra })
  const code = await p.exited
  return { code, out: p.output() }
}

describe('tailguard controller and tailguard decisions from the CLI', () => {
  it('observes a live service through the collector, stores decisions, shows them, and changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-ctl-cli-'))
    dirs.push(dir)
    const hook = await startServer((_r, res) => {
      res.writeHead(204)
      res.end()
    })
    const cfg = join(dir, 'tailguard.yaml')
    writeFileSync(cfg, config(`${hook.url}/batching`))
    const db = join(dir, 'tailguard.db')
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const procs: CliProcess[] = []
    let seq = 1
    let feed: NodeJS.Timeout | undefined
    try {
      const collector = spawnCli(
        ['collector', '--port', String(port), '--db', db, '--log-level', 'warn'],
        env,
      )
      procs.push(collector)
      await collector.waitFor(/listening on http/)
      const post = () => {
        const now = Date.now()
        void api(base, '/api/v1/reports', AGENT, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(
            makeReport({
              seq: seq++,
              startMs: now - 1000,
              series: [
                {
                  labels: { service: 'chat' },
                  samples: { kernel: Array(10).fill(180_000), total: Array(10).fill(200_000) },
                  ok: 10,
                },
              ],
            }),
          ),
        })
      }
      post()
      feed = setInterval(post, 1000)
      const controller = spawnCli(
        ['controller', '-c', cfg, '--db', db, '--collector', base, '--log-level', 'warn'],
        env,
      )
      procs.push(controller)
      await controller.waitFor(/tailguard controller .*: 1 target\(s\) \(chat\), every 1 s/)
      const ds = await eventually(async () => {
        const r = await api<{ decisions: Array<{ outcome: string; mode: string; reason: string }> }>(
          base,
          '/api/v1/decisions?target=chat',
          READ,
        )
        return r.body.decisions.length >= 2 ? r.body.decisions : null
      }, 60_000)
      for (const d of ds)
        expect(d).toMatchObject({
          mode: 'observe',
          outcome: 'skipped',
          reason: expect.stringMatching(/aimd: batch p99 180/),
        })
      expect(hook.requests).toEqual([])
      const ctl = await api<{
        controllers: Array<{
          target: string
          mode: string
          leader: string
          conditions: Array<{ type: string; status: string; reason: string }>
        }>
      }>(base, '/api/v1/controllers', READ)
      expect(ctl.body.controllers[0]).toMatchObject({
        target: 'chat',
        mode: 'observe',
        leader: expect.stringMatching(/:/),
      })
      expect(ctl.body.controllers[0]!.conditions).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ type: 'ScalingActive', status: 'False', reason: 'ObserveMode' }),
          expect.objectContaining({ type: 'MetricsStale', status: 'False' }),
        ]),
      )
      const timeline = await run(['decisions', '--collector', base, '--target', 'chat', '--since', '10m'])
      expect(timeline.code, timeline.out).toBe(0)
      expect(timeline.out).toMatch(/chat {2}#\d+ aimd\/observe {2}SKIPPED {2}max batch 32→28/)
      expect(timeline.out).toMatch(/why: batching: aimd: batch p99 180\.\d ms ≥ 100 ms → max batch 28/)
      expect(timeline.out).toMatch(/note: observe mode: recommendation only, nothing changed/)
      // Enforce through the API: the next decision is applied through the webhook.
      const mode = await api(base, '/api/v1/controllers/chat/mode', ADMIN, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ mode: 'enforce' }),
      })
      expect(mode.status).toBe(200)
      await eventually(async () => hook.requests.length > 0, 30_000)
      const bad = await run(['decisions', '--collector', base, '--since', 'yesterday'])
      expect(bad.code).not.toBe(0)
      expect(bad.out).toMatch(/--since: expected a duration like 1h, got 'yesterday'/)
    } finally {
      if (feed) clearInterval(feed)
      for (const p of procs.reverse()) await p.kill('SIGTERM')
      await hook.close()
    }
  }, 120_000)

  it('refuses a config without targets or with an unknown policy, naming the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-ctl-cli-'))
    dirs.push(dir)
    const none = await run(['controller', '--db', join(dir, 'x.db')])
    expect(none.code).toBe(2)
    expect(none.out).toMatch(/no targets: add a controllers: section/)
    const cfg = join(dir, 'bad.yaml')
    writeFileSync(cfg, config('http://127.0.0.1:9/x', 'yolo'))
    const bad = await run(['controller', '-c', cfg, '--db', join(dir, 'x.db')])
    expect(bad.code).toBe(2)
    expect(bad.out).toMatch(
      /controllers\.0\.policy: unknown policy 'yolo' \(choose one of tailguard, static, hpa, keda, kpa, aimd/,
    )
    // The policy.tailguard section the controller reads: a misspelled option is named with file and line.
    const typo = join(dir, 'typo.yaml')
    writeFileSync(
      typo,
      config('http://127.0.0.1:9/x', 'tailguard') +
        'policy:\n  tailguard:\n    headroom: 0.3\n    coldStartSecs: 60\n',
    )
    const misspelled = await run(['controller', '-c', typo, '--db', join(dir, 'x.db')])
    expect(misspelled.code).toBe(2)
    expect(misspelled.out).toContain(
      `${typo}:18: policy.tailguard.coldStartSecs: unknown field; did you mean "coldStartS"?`,
    )
  }, 60_000)
})

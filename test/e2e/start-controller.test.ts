import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { api, CLI, eventually, spawnStart } from '../helpers/cli.js'
import type { CliProcess } from '../helpers/cli.js'
import { startServer } from '../helpers/contract-servers.js'
import { freePort, freePorts } from '../helpers/ports.js'

const procs: CliProcess[] = []
const dirs: string[] = []
afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM')
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

// `tailguard start` runs the live controller for the targets of `controllers:` in its one process, on the
// demo fleet's live data, with the SLO engine's budgets; in observe mode it changes nothing.
describe('tailguard start with controllers:', () => {
  it('observes the demo chat service with the tailguard policy and serves its controller status', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-start-ctl-'))
    dirs.push(dir)
    const hook = await startServer((_r, res) => {
      res.writeHead(204)
      res.end()
    })
    try {
      const config = join(dir, 'tailguard.yaml')
      writeFileSync(
        config,
        `version: 1
agent:
  intervalMs: 500
controller:
  intervalMs: 1000
controllers:
  - name: demo-chat
    service: demo-chat
    slos: []
    objective: { thresholdMs: 2000, phase: ttft }
    knobs: [replicas]
    bounds: { minReplicas: 1, maxReplicas: 8 }
    initial: { replicas: 2, windowMs: 0, maxBatch: 16, admission: [{ maxQueue: 64, maxConcurrency: 16 }] }
    actuators:
      - type: webhook
        url: ${hook.url}/scale
`,
      )
      const start = spawnStart(dir, config, ['--demo-speed', '20', '--demo-controller', 'off'])
      procs.push(start)
      const [, base, token] = await start.waitFor(/dashboard:\s+(http:\/\/[^/\s]+)\/#token=(\S+)/, 30_000)
      expect(start.output()).toMatch(/controller: demo-chat \(observe\), every 1 s/)
      await start.waitFor(/decisions:\s+tailguard decisions --collector http/, 10_000) // printed after the URL
      expect(start.output()).toMatch(/KEDA:\s+127\.0\.0\.1:\d+ \(external scaler/)
      const ctl = await eventually(async () => {
        const r = await api<{
          controllers: Array<{
            target: string
            mode: string
            policy: string
            leader: string | null
            conditions: Array<{ type: string; status: string }>
          }>
        }>(base!, '/api/v1/controllers', token!)
        const c = r.body.controllers?.[0]
        return c && c.conditions.some((k) => k.type === 'MetricsStale' && k.status === 'False') ? c : null
      }, 60_000)
      expect(ctl).toMatchObject({
        target: 'demo-chat',
        mode: 'observe',
        policy: 'tailguard',
        leader: expect.any(String),
      })
      expect(ctl.conditions).toEqual(
        expect.arrayContaining([expect.objectContaining({ type: 'ScalingActive', status: 'False' })]),
      )
      expect(hook.requests).toEqual([])
    } finally {
      await hook.close()
    }
  }, 120_000)

  it("runs a process actuator's replicas behind its own proxy with no --upstream and no token in the file", async () => {
    // As docs/controller.md shows it: the actuator fills the proxy's upstream set, and `start` gives it (and the
    // agent actuator) the local agent's admin token, which it made. Before 2026-11-28 `start` refused a proxy with
    // no --upstream, and with one the actuator's upstream push got 401 unseen: no replica ever took traffic.
    const dir = mkdtempSync(join(tmpdir(), 'tg-start-proc-'))
    dirs.push(dir)
    const otlp = await freePort()
    const proxyPort = await freePort()
    const base = await freePorts(2)
    const config = join(dir, 'tailguard.yaml')
    writeFileSync(
      config,
      `version: 1
agent:
  intervalMs: 500
  proxy:
    labels: { service: mlp, model: tailguard-mlp, version: "1", replica: "" }
controller:
  intervalMs: 1000
controllers:
  - name: local
    service: mlp
    slos: []
    objective: { thresholdMs: 1000 }
    mode: enforce
    knobs: [replicas, admission]
    bounds: { minReplicas: 1, maxReplicas: 2 }
    initial: { replicas: 1, windowMs: 5, maxBatch: 16, admission: [{ maxQueue: 256, maxConcurrency: 64 }] }
    actuators:
      - type: agent
        url: http://127.0.0.1:${otlp}
      - type: process
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(CLI)}, serve-model, --port, '{port}', --hidden, '256']
        basePort: ${base}
        agentUrl: http://localhost:${otlp}
        readyTimeoutMs: 60000
`,
    )
    const start = spawnStart(dir, config, [
      '--no-demo',
      '--otlp-port',
      String(otlp),
      '--proxy-port',
      String(proxyPort),
    ])
    procs.push(start)
    await start.waitFor(/proxy:\s+http:\S+ -> the process actuator's replicas/, 30_000)
    const answer = await eventually(async () => {
      const r = await fetch(`http://127.0.0.1:${proxyPort}/health`).catch(() => null)
      return r && r.status === 200 ? r.json() : null
    }, 60_000)
    expect(answer).toEqual({ ready: true })
    // The replica answers inference through the proxy.
    const infer = await fetch(`http://127.0.0.1:${proxyPort}/v2/models/tailguard-mlp/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: [{ name: 'INPUT0', shape: [1, 256], datatype: 'FP32', data: Array(256).fill(0.5) }],
      }),
    })
    expect(infer.status).toBe(200)
    expect(start.output()).not.toMatch(/did not take it|HTTP 401/)
    await start.kill('SIGTERM')
    // No replica is left behind.
    const gone = await eventually(
      async () => ((await fetch(`http://127.0.0.1:${base}/health`).catch(() => null)) === null ? true : null),
      10_000,
    )
    expect(gone).toBe(true)
  }, 120_000)
})

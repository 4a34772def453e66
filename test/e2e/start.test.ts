import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { api, eventually, spawnCli, spawnStart } from '../helpers/cli.js'
import type { CliProcess } from '../helpers/cli.js'

// `tailguard start` as a new user runs it: one process, embedded SQLite, generated tokens, the demo fleet,
// and live percentiles within seconds.

const procs: CliProcess[] = []
const dirs: string[] = []
afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM')
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

describe('tailguard start', () => {
  it('serves the dashboard, live demo percentiles, SLOs and OTLP, with tokens it generated', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-start-'))
    dirs.push(dir)
    const config = join(dir, 'tailguard.yaml')
    writeFileSync(config, 'version: 1\nagent:\n  intervalMs: 500\n')
    const start = spawnStart(dir, config, ['--demo-speed', '20'])
    procs.push(start)
    const [, base, token] = await start.waitFor(/dashboard:\s+(http:\/\/[^/\s]+)\/#token=(\S+)/, 30_000)
    const [, otlpUrl] = await start.waitFor(/OTLP\/HTTP:\s+(\S+)/)
    expect(start.output()).toMatch(/demo fleet: services demo-chat and demo-vision/)
    // The demo replays the trace the package ships (never made-up arrivals), with its attribution.
    expect(start.output()).toMatch(
      /replaying \S+\/controller\/sim\/traces\/azure-llm-2023-conv\.csv \(\d+ requests\) — Azure LLM inference trace 2023/,
    )

    // Tokens were generated into the data dir, readable by the owner only; the printed one is the read token.
    const tokens = JSON.parse(readFileSync(join(dir, 'data', 'tokens.json'), 'utf8')) as Record<
      string,
      string
    >
    expect(tokens.read).toBe(token)
    expect(statSync(join(dir, 'data', 'tokens.json')).mode & 0o777).toBe(0o600)

    const page = await fetch(`${base}/`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<div id="root">')

    const live = await eventually(async () => {
      const r = await api<{ count: number; quantiles: Record<string, number> }>(
        base!,
        '/api/v1/latency?service=demo-chat&phase=ttft',
        token!,
      )
      return r.body.count > 0 ? r.body : undefined
    }, 30_000)
    expect(live.quantiles['0.99']).toBeGreaterThan(0)
    // demo-chat and demo-vision come from the SDK demo at once; demo-llm (real requests through the proxies
    // to the reference model servers) joins within a report interval or two.
    const services = await eventually(async () => {
      const r = await api<{ services: Array<{ service: string }> }>(base!, '/api/v1/services', token!)
      const names = new Set(r.body.services.map((s) => s.service))
      return names.has('demo-llm') ? names : undefined
    }, 60_000)
    expect(services).toEqual(new Set(['demo-chat', 'demo-vision', 'demo-llm']))
    // demo-llm's proxies report their own gauges per priority class: the live signals the dashboard's tiles and
    // the controller read (a stat's store-only field once made this answer 500).
    const signals = await eventually(async () => {
      const r = await api<{
        series: Array<{
          points: Array<{ byClass: Array<{ priorityClass: number; inFlight: object | null }> }>
        }>
      }>(base!, '/api/v1/signals?service=demo-llm&from=-5m&step=10s', token!)
      expect(r.status).toBe(200)
      const classes = r.body.series.flatMap((s) => s.points.flatMap((p) => p.byClass))
      return classes.some((c) => c.inFlight !== null) ? classes : undefined
    }, 30_000)
    expect(signals[0]!.inFlight).toEqual({
      min: expect.any(Number),
      mean: expect.any(Number),
      max: expect.any(Number),
      last: expect.any(Number),
    })
    const slos = await api<{ slos: Array<{ name: string }> }>(base!, '/api/v1/slos', token!)
    expect(slos.body.slos.map((s) => s.name)).toContain('demo-chat-ttft')

    // The local agent takes spans over OTLP/HTTP (JSON here) from the machine's own model servers.
    const nowNs = BigInt(Date.now()) * 1_000_000n
    const body = {
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'local-server' } }] },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '0af7651916cd43dd8448eb211c80319c',
                  spanId: 'b7ad6b7169203331',
                  name: 'infer',
                  kind: 2,
                  startTimeUnixNano: String(nowNs),
                  endTimeUnixNano: String(nowNs + 12_500_000n),
                  attributes: [{ key: 'tailguard.phase', value: { stringValue: 'total' } }],
                },
              ],
            },
          ],
        },
      ],
    }
    const otlp = await fetch(otlpUrl!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    expect(otlp.status).toBe(200)
    const local = await eventually(async () => {
      const r = await api<{ count: number; max: number }>(
        base!,
        '/api/v1/latency?service=local-server',
        token!,
      )
      return r.body.count === 1 ? r.body : undefined
    }, 20_000)
    expect(local.max).toBeCloseTo(12.5, 1)

    // SIGTERM stops it cleanly.
    expect(await start.kill('SIGTERM')).toBe(0)
  }, 150_000)

  it('names the file, line and field of a bad config and exits non-zero', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-start-bad-'))
    dirs.push(dir)
    const config = join(dir, 'bad.yaml')
    writeFileSync(config, 'version: 1\ncollector:\n  port: "eighty"\nagent:\n  otlp:\n    port: 70000\n')
    const bad = spawnCli(['start', '--config', config, '--data-dir', join(dir, 'data')])
    expect(await bad.exited).toBe(2)
    expect(bad.output()).toContain(`${config}:3: collector.port: Expected integer`)
    expect(bad.output()).toContain(
      `${config}:6: agent.otlp.port: Expected integer to be less or equal to 65535`,
    )
  })
})

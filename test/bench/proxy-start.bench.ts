import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { CLI, proxyAgentArgs } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'
import { openLoop, quantile, spawnNode, stop, STUB_COLLECTOR, waitListening } from './load.js'
import type { Sample } from './load.js'
import type { Bench } from './table.js'

// A proxy that starts under load (docs/proxy.md#starting-under-load): open-loop load at 2k req/s from the moment
// `tailguard agent` says its proxy listens, against a model-server stand-in and from a load generator that are
// both warm already (as they are when a sidecar restarts). Its first second against the seconds after, and the
// same load straight to the upstream as the baseline. Rounds interleave the paths.

const RATE = 2000
const SECONDS = 3
const ROUNDS = Number(process.env.TG_BENCH_START_ROUNDS ?? 3)

const UPSTREAM = `
import { createServer } from 'node:http'
const s = createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')) })
s.listen(0, '127.0.0.1', () => console.log('listening ' + s.address().port))
`

interface Round {
  readyMs: number
  first: readonly number[]
  after: readonly number[]
  errors: number
}

/** Starts `tailguard agent` with its proxy in front of the upstream; resolves when the proxy listens. */
async function startAgent(
  upstreamPort: number,
  collectorPort: number,
): Promise<{ child: ChildProcess; port: number; readyMs: number }> {
  const t0 = performance.now()
  const child = spawn(
    process.execPath,
    [
      CLI,
      ...proxyAgentArgs(
        `http://127.0.0.1:${upstreamPort}`,
        `http://127.0.0.1:${collectorPort}`,
        await freePort(),
      ),
      '--no-otlp-grpc',
    ],
    {
      env: { ...process.env, TAILGUARD_AGENT_TOKEN: 'bench-agent-token-0123456789' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  const { port } = await waitListening(child, /proxy on http:\/\/[^:]+:(\d+)/)
  return { child, port, readyMs: performance.now() - t0 }
}

/** The latencies of the first second's requests and of the later ones. */
function split(samples: readonly Sample[]): Omit<Round, 'readyMs'> {
  const first: number[] = []
  const after: number[] = []
  for (const s of samples) (s.seq < RATE ? first : after).push(s.latencyMs)
  return { first, after, errors: samples.filter((s) => s.status !== 200).length }
}

const bench: Bench = {
  name: 'proxy-start',
  async run(log) {
    const upstream = await spawnNode(UPSTREAM)
    const collector = await spawnNode(STUB_COLLECTOR)
    try {
      const direct = `http://127.0.0.1:${upstream.port}`
      // The upstream and this process's load generator warm first: what is left is the proxy's own start.
      await openLoop({ url: direct, ratePerS: RATE, durationMs: 3000, path: '/v1/x' })
      const paths = [
        { name: 'direct', agent: false },
        { name: 'tailguard agent --proxy-port', agent: true },
      ]
      const rounds = new Map<string, Round[]>(paths.map((p) => [p.name, []]))
      for (let r = 0; r < ROUNDS; r++)
        for (const p of paths) {
          const agent = p.agent ? await startAgent(upstream.port, collector.port) : null
          try {
            const url = agent ? `http://127.0.0.1:${agent.port}` : direct
            const samples = await openLoop({ url, ratePerS: RATE, durationMs: SECONDS * 1000, path: '/v1/x' })
            const round = { readyMs: agent?.readyMs ?? NaN, ...split(samples) }
            rounds.get(p.name)!.push(round)
            log(
              `round ${r + 1} ${p.name}: ready ${agent ? agent.readyMs.toFixed(0) + ' ms' : '—'}, first second p99 ${quantile(round.first, 0.99).toFixed(1)} ms`,
            )
          } finally {
            if (agent) await stop(agent.child)
          }
        }
      const med = (xs: readonly number[]) => quantile(xs, 0.5)
      const per = (name: string, f: (r: Round) => number) => rounds.get(name)!.map(f)
      const baseP99 = med(per('direct', (r) => quantile(r.first, 0.99)))
      const rows = paths.map((p) => {
        const firstP99 = per(p.name, (r) => quantile(r.first, 0.99))
        const ready = per(p.name, (r) => r.readyMs)
        return [
          p.name,
          p.agent ? med(ready) : '—',
          med(per(p.name, (r) => quantile(r.first, 0.5))),
          med(firstP99),
          `${Math.min(...firstP99).toFixed(1)} … ${Math.max(...firstP99).toFixed(1)}`,
          med(per(p.name, (r) => Math.max(...r.first))),
          med(firstP99) / baseP99,
          med(per(p.name, (r) => quantile(r.after, 0.99))),
          per(p.name, (r) => r.errors).reduce((a, b) => a + b, 0),
        ]
      })
      return {
        title: `proxy-start: the first second of a proxy that starts under ${RATE.toLocaleString('en-US')} req/s (ms, median of ${ROUNDS} rounds)`,
        columns: [
          'path',
          'ready ms',
          '1st s p50',
          '1st s p99',
          'p99 by round',
          '1st s max',
          'p99 × direct',
          `s 2–${SECONDS} p99`,
          'errors',
        ],
        rows,
        notes: [
          `Open-loop GETs at ${RATE} req/s for ${SECONDS} s from the moment the agent printed that its proxy listens (ready: from spawn to then), to a tiny upstream that served ${RATE} req/s for 3 s beforehand (this process's load generator warmed with it). Latency counts from each request's due time; TG_BENCH_START_ROUNDS sets the rounds.`,
        ],
      }
    } finally {
      await stop(upstream.child)
      await stop(collector.child)
    }
  },
}

export default bench

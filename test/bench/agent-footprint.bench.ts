import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { CLI, proxyAgentArgs } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'
import { quantile, stop, waitListening } from './load.js'
import type { Bench } from './table.js'

// What a standalone `tailguard agent` costs to start and to keep (docs/agent.md#footprint): the time from spawn
// to its proxy listening, its resident memory and its V8 heap after it has proxied 200 requests and sent a
// report, three starts each. Baseline in the same run: a bare Node process with a `node:http` server (Node's own
// floor on this machine). `tailguard serve-model` (one process per replica in `npm start`) is measured beside it.

const STARTS = 3
const SETTLE_MS = 2000

/** A collector stand-in that acknowledges every report, and a tiny upstream (one process, two ports). */
const STUBS = `
import { createServer } from 'node:http'
const collector = createServer((req, res) => {
  req.resume()
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"stored"}'))
})
const upstream = createServer((req, res) => { req.resume(); res.writeHead(200, { 'content-length': '2' }).end('ok') })
collector.listen(0, '127.0.0.1', () => upstream.listen(0, '127.0.0.1', () =>
  console.log('listening ' + collector.address().port + ' ' + upstream.address().port)))
`

/** Node's floor: an HTTP server and nothing else. */
const BARE = `
import { createServer } from 'node:http'
const s = createServer((req, res) => { req.resume(); res.end('ok') })
s.listen(0, '127.0.0.1', () => console.log('listening ' + s.address().port))
`

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) / 1024 : NaN
}

interface Start {
  readyMs: number
  rssMb: number
  heapMb: number
}

/** One process to measure: how to start it, how it says it listens, and what to send it before reading. */
interface Launch {
  readonly args: readonly string[]
  readonly env?: Record<string, string>
  readonly ready: RegExp
  readonly path: string
  readonly requests: number
  /** The port of a tailguard agent's /metrics, to read its heap from. */
  readonly metricsPort?: number
}

async function measure(l: Launch): Promise<Start> {
  const t0 = performance.now()
  const child = spawn(process.execPath, l.args, {
    env: { ...process.env, ...l.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  try {
    const { port } = await waitListening(child, l.ready)
    const readyMs = performance.now() - t0
    for (let i = 0; i < l.requests; i++) await get(`http://127.0.0.1:${port}${l.path}`)
    await new Promise((r) => setTimeout(r, SETTLE_MS)) // the agent sends reports meanwhile (every 1 s)
    let heapMb = NaN
    if (l.metricsPort !== undefined) {
      const m = /^tailguard_agent_nodejs_heap_size_used_bytes (\S+)$/m.exec(
        await get(`http://127.0.0.1:${l.metricsPort}/metrics`),
      )
      if (m) heapMb = Number(m[1]) / 2 ** 20
    }
    return { readyMs, rssMb: rssMb(child.pid!), heapMb }
  } finally {
    await stop(child)
  }
}

async function get(url: string): Promise<string> {
  return (await fetch(url)).text()
}

const bench: Bench = {
  name: 'agent-footprint',
  async run(log) {
    const stubs = spawn(process.execPath, ['--input-type=module', '-e', STUBS], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    try {
      const [collectorPort, upstreamPort] = await new Promise<number[]>((resolve, reject) => {
        stubs.stdout!.on('data', (d: Buffer) => {
          const m = /listening (\d+) (\d+)/.exec(d.toString())
          if (m) resolve([Number(m[1]), Number(m[2])])
        })
        stubs.once('exit', () => reject(new Error('the stub servers did not start')))
      })
      const paths: Array<{ name: string; run: () => Promise<Start> }> = [
        {
          name: 'node (a bare node:http server)',
          run: () =>
            measure({
              args: ['--input-type=module', '-e', BARE],
              ready: /listening (\d+)/,
              path: '/',
              requests: 200,
            }),
        },
        {
          name: 'tailguard agent --proxy-port',
          run: async () => {
            const otlp = await freePort()
            return measure({
              args: [
                CLI,
                ...proxyAgentArgs(
                  `http://127.0.0.1:${upstreamPort}`,
                  `http://127.0.0.1:${collectorPort}`,
                  otlp,
                ),
                '--interval-ms',
                '1000',
              ],
              env: { TAILGUARD_AGENT_TOKEN: 'bench-agent-token-0123456789' },
              ready: /proxy on http:\/\/[^:]+:(\d+)/,
              path: '/',
              requests: 200,
              metricsPort: otlp,
            })
          },
        },
        {
          name: 'tailguard serve-model',
          run: () =>
            measure({
              args: [CLI, 'serve-model', '--port', '0', '--log-level', 'fatal'],
              ready: /on http:\/\/[^:]+:(\d+)/,
              path: '/v2/health/ready',
              requests: 20,
            }),
        },
      ]
      const results = new Map<string, Start[]>(paths.map((p) => [p.name, []]))
      // Starts interleave the paths, so a busy moment on the machine does not land on one path only.
      for (let i = 0; i < STARTS; i++)
        for (const p of paths) {
          const s = await p.run()
          results.get(p.name)!.push(s)
          log(`${p.name}: ready ${s.readyMs.toFixed(0)} ms, RSS ${s.rssMb.toFixed(1)} MB`)
        }
      const med = (xs: readonly number[]) => quantile(xs, 0.5)
      const base = results.get(paths[0]!.name)!
      const baseReady = med(base.map((s) => s.readyMs))
      const baseRss = med(base.map((s) => s.rssMb))
      const rows = paths.map((p) => {
        const ss = results.get(p.name)!
        const ready = ss.map((s) => s.readyMs)
        const rss = ss.map((s) => s.rssMb)
        const heap = ss.map((s) => s.heapMb).filter((h) => !Number.isNaN(h))
        return [
          p.name,
          med(ready),
          `${Math.min(...ready).toFixed(0)} … ${Math.max(...ready).toFixed(0)}`,
          med(ready) / baseReady,
          med(rss),
          `${Math.min(...rss).toFixed(1)} … ${Math.max(...rss).toFixed(1)}`,
          med(rss) / baseRss,
          heap.length ? med(heap) : '—',
        ]
      })
      return {
        title: `agent-footprint: start-up and memory of a standalone agent (${STARTS} starts each, median)`,
        columns: ['process', 'ready ms', 'range', '× node', 'RSS MB', 'range', '× node', 'heap used MB'],
        rows,
        notes: [
          `Ready: from spawn to listening (the agent: its proxy). RSS and heap after 200 requests (the model server: 20 health checks) and ${SETTLE_MS / 1000} s more, in which the agent sends reports (every 1 s) to a stub collector. Heap: the agent's own /metrics (prom-client's nodejs_heap_size_used_bytes).`,
          'Before the lean agent (this bench on commit f100be4, where the CLI loaded every command, 2 cores, 2026-11-27): tailguard agent ready in 499 ms, 124 MB RSS, 33.3 MB heap; serve-model 481 ms, 126 MB (docs/agent.md#footprint).',
        ],
      }
    } finally {
      await stop(stubs)
    }
  },
}

export default bench

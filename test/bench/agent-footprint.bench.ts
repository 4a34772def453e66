import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { CLI } from '../helpers/cli.js'
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

async function measure(
  launch: () => ChildProcess,
  ready: RegExp,
  exercise: (port: number) => Promise<number>,
): Promise<Start> {
  const t0 = performance.now()
  const child = launch()
  try {
    const { port } = await waitListening(child, ready)
    const readyMs = performance.now() - t0
    const heapMb = await exercise(port)
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
            measure(
              () =>
                spawn(process.execPath, ['--input-type=module', '-e', BARE], {
                  stdio: ['ignore', 'pipe', 'inherit'],
                }),
              /listening (\d+)/,
              async (port) => {
                for (let i = 0; i < 200; i++) await get(`http://127.0.0.1:${port}/`)
                await new Promise((r) => setTimeout(r, SETTLE_MS))
                return NaN
              },
            ),
        },
        {
          name: 'tailguard agent --proxy-port',
          run: async () => {
            const otlp = await freePort()
            return measure(
              () =>
                spawn(
                  process.execPath,
                  [
                    CLI,
                    'agent',
                    '--proxy-port',
                    '0',
                    '--upstream',
                    `http://127.0.0.1:${upstreamPort}`,
                    '--otlp-port',
                    String(otlp),
                    '--no-nvml',
                    '--interval-ms',
                    '1000',
                    '--log-level',
                    'fatal',
                    '--collector',
                    `http://127.0.0.1:${collectorPort}`,
                  ],
                  {
                    env: { ...process.env, TAILGUARD_AGENT_TOKEN: 'bench-agent-token-0123456789' },
                    stdio: ['ignore', 'pipe', 'inherit'],
                  },
                ),
              /proxy on http:\/\/[^:]+:(\d+)/,
              async (port) => {
                for (let i = 0; i < 200; i++) await get(`http://127.0.0.1:${port}/`)
                await new Promise((r) => setTimeout(r, SETTLE_MS)) // a report goes out (every 1 s)
                const m = /^tailguard_agent_nodejs_heap_size_used_bytes (\S+)$/m.exec(
                  await get(`http://127.0.0.1:${otlp}/metrics`),
                )
                return m ? Number(m[1]) / 2 ** 20 : NaN
              },
            )
          },
        },
        {
          name: 'tailguard serve-model',
          run: () =>
            measure(
              () =>
                spawn(process.execPath, [CLI, 'serve-model', '--port', '0', '--log-level', 'fatal'], {
                  stdio: ['ignore', 'pipe', 'inherit'],
                }),
              /on http:\/\/[^:]+:(\d+)/,
              async (port) => {
                for (let i = 0; i < 20; i++) await get(`http://127.0.0.1:${port}/v2/health/ready`)
                await new Promise((r) => setTimeout(r, SETTLE_MS))
                return NaN
              },
            ),
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

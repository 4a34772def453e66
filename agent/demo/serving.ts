import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { Pool } from 'undici'
import type { SeriesLabels, SeriesSignals } from '../../collector/index.js'
import { createProxy, PROXY_DEFAULTS } from '../proxy/proxy.js'
import type { Proxy } from '../proxy/proxy.js'
import type { SetpointsGroup } from '../proxy/setpoints.js'
import type { SampleSink } from '../types.js'
import type { DemoArrival } from './fleet.js'

/**
 * Options of {@link startServingDemo}.
 *
 * @example
 * ```ts
 * await startServingDemo({ cli: '/path/to/dist/bin/tailguard.js', arrivals, sink: agent.recorder, node: 'laptop' })
 * ```
 */
export interface ServingDemoOptions {
  /** The `tailguard` CLI script, run with this Node to start the reference model servers. */
  readonly cli: string
  readonly arrivals: readonly DemoArrival[]
  readonly sink: SampleSink
  readonly node: string
  /** Replicas, each behind its own proxy (default 2). */
  readonly replicas?: number
  /** Trace time per real time (default 1: the trace's own rate). */
  readonly speed?: number
  /** Longest completion asked for (trace lengths are capped to this; default 24). */
  readonly maxTokens?: number
  /** Width of the demo model (default 256: light enough for a laptop). */
  readonly hidden?: number
  readonly service?: string
  /** Setpoints the proxies join (the agent serves them on its setpoints API, for the controller). */
  readonly setpoints?: SetpointsGroup
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string) => void
}

/**
 * The running serving demo. `setRate` multiplies the replayed trace's request rate at runtime (a load step:
 * `setRate(3)` triples it); `signals` gives the proxies' live gauges for the agent's reports.
 *
 * @example
 * ```ts
 * const demo = await startServingDemo(opts)
 * demo.setRate(3) // a 3× load step
 * await demo.stop()
 * ```
 */
export interface ServingDemo {
  readonly proxies: readonly Proxy[]
  readonly proxyUrls: readonly string[]
  readonly modelUrls: readonly string[]
  /** The current multiplier of the trace's rate. */
  readonly rate: number
  setRate(multiplier: number): void
  /** Requests sent and answered so far. */
  readonly sent: number
  readonly answered: number
  signals(): Array<{ labels: SeriesLabels; signals: SeriesSignals }>
  stop(): Promise<void>
}

/** The admission setpoints each demo proxy starts with: class 0 (20% of the load) and class 1. */
export const DEMO_PROXY_CLASSES = [
  { priorityClass: 0, maxConcurrency: 64, maxQueue: 128, queueTimeoutMs: 2000 },
  { priorityClass: 1, maxConcurrency: 64, maxQueue: 128, queueTimeoutMs: 1000 },
] as const

async function spawnModelServer(
  cli: string,
  replica: number,
  hidden: number,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [
      cli,
      'serve-model',
      '--port',
      '0',
      '--hidden',
      String(hidden),
      '--seed',
      '1',
      '--log-level',
      'fatal',
      '--max-running',
      '128',
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  )
  return new Promise((resolve, reject) => {
    let out = ''
    const t = setTimeout(() => reject(new Error(`model server ${replica} did not start`)), 30_000)
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /on (http:\/\/\S+)/.exec(out)
      if (m) {
        clearTimeout(t)
        resolve({ child, url: m[1]! })
      }
    })
    child.once('exit', (code) => {
      clearTimeout(t)
      reject(new Error(`model server ${replica} exited (${code})`))
    })
  })
}

/**
 * Starts the serving demo: reference model servers (`tailguard serve-model`, one process each), each
 * behind its own tailguard proxy recording into `sink`, and a load generator replaying the trace's
 * arrivals as streaming `/v1/completions` requests (20% priority class 0, the rest class 1), spread over
 * the proxies. Every phase the dashboard shows for the service comes from real requests.
 *
 * @example const demo = await startServingDemo({ cli, arrivals, sink: agent.recorder, node: 'laptop' })
 */
export async function startServingDemo(opts: ServingDemoOptions): Promise<ServingDemo> {
  const n = opts.replicas ?? 2
  const hidden = opts.hidden ?? 256
  const maxTokens = opts.maxTokens ?? 24
  const service = opts.service ?? 'demo-llm'
  const servers = await Promise.all(
    Array.from({ length: n }, (_, i) => spawnModelServer(opts.cli, i, hidden)),
  )
  const killAll = () => {
    for (const s of servers) s.child.kill('SIGTERM')
  }
  process.once('exit', killAll)
  const proxies: Proxy[] = []
  const proxyUrls: string[] = []
  for (const [i, s] of servers.entries()) {
    const proxy = createProxy(
      {
        ...PROXY_DEFAULTS,
        host: '127.0.0.1',
        port: 0,
        upstreams: [s.url],
        labels: { service, model: '', version: '1', replica: `r${i}`, node: opts.node },
        classes: DEMO_PROXY_CLASSES.map((c) => ({ ...c })),
        gradient2: {},
      },
      { sink: opts.sink, ...(opts.log ? { log: opts.log } : {}) },
    )
    const { port } = await proxy.listen()
    proxies.push(proxy)
    proxyUrls.push(`http://127.0.0.1:${port}`)
  }
  opts.setpoints?.join(proxies.map((p) => p.setpoints))
  const pools = proxyUrls.map((u) => new Pool(u, { connections: 128, pipelining: 1 }))

  const arrivals = opts.arrivals
  const loopMs = arrivals.length > 0 ? arrivals[arrivals.length - 1]!.offsetMs + 1000 : 0
  const speed = opts.speed ?? 1
  let multiplier = 1
  let traceNow = 0
  let last = performance.now()
  let idx = 0
  let loop = 0
  let sent = 0
  let answered = 0
  let stopped = false
  const inFlight = new Set<Promise<void>>()

  const send = (a: DemoArrival) => {
    const i = sent++
    const pool = pools[i % pools.length]!
    const body = JSON.stringify({
      model: 'tailguard-mlp',
      prompt: 'Tell me about tail latency. '.repeat(
        Math.max(1, Math.min(8, Math.round(a.contextTokens / 256))),
      ),
      max_tokens: Math.max(1, Math.min(maxTokens, a.generatedTokens)),
      stream: true,
      stream_options: { include_usage: true },
    })
    const p = pool
      .request({
        path: '/v1/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-tailguard-priority': i % 5 === 0 ? '0' : '1' },
        body,
      })
      .then(async (res) => {
        await res.body.dump()
        answered++
      })
      .catch(() => {})
      .finally(() => inFlight.delete(p))
    inFlight.add(p)
  }

  const tick = () => {
    const now = performance.now()
    traceNow += (now - last) * speed * multiplier
    last = now
    if (arrivals.length === 0 || stopped) return
    // Replays the arrivals due by now, looping over the trace; at most 2,000 per tick after a stall.
    for (let k = 0; k < 2000; k++) {
      const a = arrivals[idx]!
      if (a.offsetMs + loop * loopMs > traceNow) break
      send(a)
      idx++
      if (idx === arrivals.length) {
        idx = 0
        loop++
      }
    }
  }
  const timer = setInterval(tick, 50)
  timer.unref()

  return {
    proxies,
    proxyUrls,
    modelUrls: servers.map((s) => s.url),
    get rate() {
      return multiplier
    },
    setRate(m: number) {
      if (!(m >= 0 && m <= 1000)) throw new Error(`setRate: expected a multiplier 0..1000, got ${m}`)
      tick()
      multiplier = m
    },
    get sent() {
      return sent
    },
    get answered() {
      return answered
    },
    signals: () => proxies.map((p) => p.takeSignals()),
    async stop() {
      stopped = true
      clearInterval(timer)
      await Promise.all(pools.map((p) => p.destroy().catch(() => {})))
      await Promise.all(proxies.map((p) => p.close()))
      killAll()
      process.off('exit', killAll)
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((r) => {
              if (s.child.exitCode !== null || s.child.signalCode !== null) r()
              else s.child.once('exit', () => r())
            }),
        ),
      )
    },
  }
}

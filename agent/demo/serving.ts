import { spawn } from 'node:child_process'
import { setMaxListeners } from 'node:events'
import type { ChildProcess } from 'node:child_process'
import type { SeriesLabels, SeriesSignals } from '../../collector/index.js'
import { createProxy, PROXY_DEFAULTS } from '../proxy/proxy.js'
import type { Proxy } from '../proxy/proxy.js'
import type { SetpointsGroup } from '../proxy/setpoints.js'
import { createScrapeSource } from '../sources/scrape/source.js'
import type { SourceSet } from '../sources/set.js'
import type { SampleSink } from '../types.js'
import type { DemoArrival } from './fleet.js'
import { createH1Fetch } from '../proxy/h1-fetch.js'
import type { H1Fetch } from '../proxy/h1-fetch.js'

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
  /** Replicas at the start, each behind its own proxy (default 2). */
  readonly replicas?: number
  /** Trace time per real time (default 1: the trace's own rate). Ignored when `load` is given. */
  readonly speed?: number
  /**
   * Size the load to this machine: measure one replica's capacity for the demo's requests first, then replay
   * the trace at the speed that makes its mean rate this fraction of the starting replicas' capacity (e.g.
   * 0.15). Absent: `speed` as given.
   */
  readonly load?: number
  /** Longest completion asked for (trace lengths are capped to this; default 24). */
  readonly maxTokens?: number
  /**
   * Width of the demo model (default 1024: a replica serves 10-20 of the demo's requests per second on a laptop
   * core, so the model's compute, not the proxies' per-request work, is what a load step saturates).
   */
  readonly hidden?: number
  readonly service?: string
  /** Setpoints the proxies join and leave (the agent serves them on its setpoints API, for the controller). */
  readonly setpoints?: SetpointsGroup
  /**
   * Where each replica's model server is scraped (its vLLM-style `/metrics`: running and waiting sequences,
   * tokens, KV use), under the replica's labels, as a server behind its own proxy (its request counters are the
   * proxy's to count). The controller learns tokens per request and the queue inside the server from them.
   */
  readonly scrapes?: SourceSet
  /** Scrape period of each replica's model server (default 2 s). */
  readonly scrapePeriodMs?: number
  /** How long a replica being removed may finish its requests before it is stopped anyway (default 30 s). */
  readonly drainGraceMs?: number
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string) => void
}

/** Replica counts as a scaler reports them. */
export interface ReplicaCounts {
  /** Replicas asked for (starting and ready; not those draining). */
  readonly desired: number
  readonly ready: number
  readonly starting: number
}

/**
 * The running serving demo. `setRate` multiplies the replayed trace's request rate at runtime (a load step:
 * `setRate(3)` triples it); `scaleTo` starts or drains replicas (each a model server behind its own proxy);
 * `signals` gives the proxies' live gauges for the agent's reports.
 *
 * @example
 * ```ts
 * const demo = await startServingDemo(opts)
 * demo.setRate(3) // a 3× load step
 * demo.scaleTo(4) // two more replicas; they take traffic once they answer
 * await demo.stop()
 * ```
 */
export interface ServingDemo {
  /** The proxies of the replicas now up (ready or draining). */
  readonly proxies: readonly Proxy[]
  readonly proxyUrls: readonly string[]
  /** The model servers of the replicas that take traffic now. */
  readonly modelUrls: readonly string[]
  /** The current multiplier of the trace's rate. */
  readonly rate: number
  setRate(multiplier: number): void
  /** Trace time per real time at multiplier 1 (sized from the capacity probe when `load` was given). */
  readonly speed: number
  /** One replica's measured capacity for the demo's requests (req/s), once the load was sized; else null. */
  readonly capacityRps: number | null
  /**
   * Settles when the load starts: at once without `load`, else after the capacity probe (a few seconds, run in
   * the background so that the rest of the plane need not wait for it).
   */
  readonly started: Promise<void>
  /** Mean request rate of the replayed trace at multiplier 1, req/s. */
  readonly baseRps: number
  /** Requests sent and answered so far. */
  readonly sent: number
  readonly answered: number
  replicaCounts(): ReplicaCounts
  /**
   * Starts replicas up to `n` (they take traffic once they answer) or drains the newest down to `n` (they get
   * no new requests, finish what they have, then stop). Returns what it did, in words.
   */
  scaleTo(n: number): string
  /** Runs `prepare(modelUrl)` on each new replica's model server before it takes traffic (e.g. its batching). */
  onStarting(prepare: (modelUrl: string) => Promise<void>): void
  signals(): Array<{ labels: SeriesLabels; signals: SeriesSignals }>
  stop(): Promise<void>
}

/** The admission setpoints each demo proxy starts with: class 0 (20% of the load) and class 1. */
export const DEMO_PROXY_CLASSES = [
  { priorityClass: 0, maxConcurrency: 64, maxQueue: 128, queueTimeoutMs: 2000 },
  { priorityClass: 1, maxConcurrency: 64, maxQueue: 128, queueTimeoutMs: 1000 },
] as const

const MAX_REPLICAS = 32
/** How long `stop` lets the requests in flight finish before it closes the replicas. */
const STOP_GRACE_MS = 1500

async function spawnModelServer(
  cli: string,
  name: string,
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
    const t = setTimeout(() => {
      child.kill('SIGTERM')
      reject(new Error(`model server ${name} did not start within 30 s`))
    }, 30_000)
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
      reject(new Error(`model server ${name} exited (${code})`))
    })
  })
}

function completionBody(a: DemoArrival, maxTokens: number): string {
  return JSON.stringify({
    model: 'tailguard-mlp',
    prompt: 'Tell me about tail latency. '.repeat(
      Math.max(1, Math.min(8, Math.round(a.contextTokens / 256))),
    ),
    max_tokens: Math.max(1, Math.min(maxTokens, a.generatedTokens)),
    stream: true,
    stream_options: { include_usage: true },
  })
}

/** One signal for all of a load generator's requests in flight (each adds a listener while it runs). */
function cutter(): AbortController {
  const c = new AbortController()
  setMaxListeners(0, c.signal)
  return c
}

/**
 * One replica's capacity for the demo's requests: a closed loop of 32 streams straight to its model server
 * (not through a proxy, so nothing is recorded) for `ms`, after a short warm-up; completed requests per second.
 */
async function probeCapacity(
  url: string,
  arrivals: readonly DemoArrival[],
  maxTokens: number,
  ms: number,
): Promise<number> {
  const client = createH1Fetch({ connectionsPerOrigin: 32 })
  let done = 0
  let counting = false
  let k = 0
  const until = performance.now() + ms + 500
  let failed: Error | null = null
  const stream = async () => {
    while (performance.now() < until && !failed) {
      const a = arrivals[k++ % arrivals.length]!
      try {
        const res = await client(`${url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: completionBody(a, maxTokens),
        })
        await res.text()
        if (counting) done++
      } catch (err) {
        failed = err as Error
      }
    }
  }
  const loops = Array.from({ length: 32 }, stream)
  await new Promise((r) => setTimeout(r, 500))
  counting = true
  const t0 = performance.now()
  await Promise.all(loops)
  const s = (performance.now() - t0) / 1000
  await client.close()
  if (failed) throw failed
  return done / Math.max(s, 1e-3)
}

interface Replica {
  readonly slot: number
  readonly name: string
  state: 'starting' | 'ready' | 'draining' | 'cancelled'
  server: { child: ChildProcess; url: string } | null
  proxy: Proxy | null
  proxyUrl: string | null
  /** The load generator's connections to the replica's proxy, and the signal that cuts their requests. */
  client: { readonly fetch: H1Fetch; readonly cut: AbortController } | null
  /** Requests of the load generator now in flight to this replica. */
  inFlight: number
}

/**
 * Starts the serving demo: reference model servers (`tailguard serve-model`, one process each), each
 * behind its own tailguard proxy recording into `sink` (labels `replica: r0, r1, …`), and a load generator
 * replaying the trace's arrivals as streaming `/v1/completions` requests (20% priority class 0, the rest
 * class 1), spread round-robin over the replicas that are ready. Every phase the dashboard shows for the
 * service comes from real requests. Replicas come and go at runtime (`scaleTo`: the demo's scaler).
 *
 * @example const demo = await startServingDemo({ cli, arrivals, sink: agent.recorder, node: 'laptop', load: 0.15 })
 */
export async function startServingDemo(opts: ServingDemoOptions): Promise<ServingDemo> {
  const hidden = opts.hidden ?? 1024
  const maxTokens = opts.maxTokens ?? 24
  const service = opts.service ?? 'demo-llm'
  const drainGraceMs = opts.drainGraceMs ?? 30_000
  const log = opts.log ?? (() => {})
  const replicas: Replica[] = []
  let rotation: Replica[] = []
  let prepare: ((modelUrl: string) => Promise<void>) | null = null
  let stopped = false
  const refresh = () => {
    rotation = replicas.filter((r) => r.state === 'ready')
  }
  const killAll = () => {
    for (const r of replicas) r.server?.child.kill('SIGTERM')
  }
  process.once('exit', killAll)

  const teardown = async (r: Replica) => {
    if (r.proxy) opts.setpoints?.leave(r.proxy.setpoints)
    await opts.scrapes?.remove(r.name)
    r.client?.cut.abort()
    await r.client?.fetch.close()
    await r.proxy?.close().catch(() => {})
    const child = r.server?.child
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((res) => child.once('exit', () => res()))
      child.kill('SIGTERM')
      await gone
    }
    const i = replicas.indexOf(r)
    if (i >= 0) replicas.splice(i, 1)
    refresh()
  }

  const startReplica = async (r: Replica): Promise<void> => {
    try {
      r.server = await spawnModelServer(opts.cli, r.name, hidden)
      if (r.state === 'cancelled' || stopped) return await teardown(r)
      if (prepare) await prepare(r.server.url)
      const proxy = createProxy(
        {
          ...PROXY_DEFAULTS,
          host: '127.0.0.1',
          port: 0,
          upstreams: [r.server.url],
          labels: { service, model: '', version: '1', replica: r.name, node: opts.node },
          classes: DEMO_PROXY_CLASSES.map((c) => ({ ...c })),
          gradient2: {},
        },
        { sink: opts.sink, ...(opts.log ? { log: opts.log } : {}) },
      )
      const { port } = await proxy.listen()
      r.proxy = proxy
      r.proxyUrl = `http://127.0.0.1:${port}`
      r.client = { fetch: createH1Fetch({ connectionsPerOrigin: 128 }), cut: cutter() }
      // scaleTo or stop may have cancelled it while the proxy started (TypeScript narrowed the state above).
      if ((r.state as Replica['state']) === 'cancelled' || stopped) return await teardown(r)
      opts.setpoints?.join([proxy.setpoints])
      opts.scrapes?.add(
        r.name,
        createScrapeSource(
          {
            url: `${r.server.url}/metrics`,
            kind: 'vllm',
            service,
            version: '1',
            replica: r.name,
            periodMs: opts.scrapePeriodMs ?? 2000,
            countRequests: false,
          },
          { node: opts.node, log: (level, line) => log(level, line) },
        ),
      )
      r.state = 'ready'
      refresh()
    } catch (err) {
      if (!stopped) log('warn', `demo replica ${r.name}: ${(err as Error).message}`)
      await teardown(r)
    }
  }

  const drain = async (r: Replica): Promise<void> => {
    r.state = 'draining'
    refresh()
    const deadline = performance.now() + drainGraceMs
    while (r.inFlight > 0 && performance.now() < deadline && !stopped)
      await new Promise((res) => setTimeout(res, 100))
    await teardown(r)
  }

  const freeSlot = () => {
    const used = new Set(replicas.map((r) => r.slot))
    let slot = 0
    while (used.has(slot)) slot++
    return slot
  }
  const add = (): Replica => {
    const slot = freeSlot()
    const r: Replica = {
      slot,
      name: `r${slot}`,
      state: 'starting',
      server: null,
      proxy: null,
      proxyUrl: null,
      client: null,
      inFlight: 0,
    }
    replicas.push(r)
    return r
  }
  const active = () => replicas.filter((r) => r.state === 'starting' || r.state === 'ready')

  const scaleTo = (n: number): string => {
    if (!(Number.isInteger(n) && n >= 0 && n <= MAX_REPLICAS))
      throw new Error(`scaleTo: expected a replica count 0..${MAX_REPLICAS}, got ${n}`)
    const now = active()
    if (n > now.length) {
      const started = Array.from({ length: n - now.length }, () => add())
      for (const r of started) void startReplica(r)
      return `starting ${started.map((r) => r.name).join(', ')}`
    }
    if (n < now.length) {
      // Newest first, replicas still starting before ready ones.
      const victims = [...now]
        .sort((x, y) => (x.state === y.state ? y.slot - x.slot : x.state === 'starting' ? -1 : 1))
        .slice(0, now.length - n)
      for (const v of victims) {
        if (v.state === 'starting') v.state = 'cancelled'
        else void drain(v)
      }
      return `draining ${victims.map((v) => v.name).join(', ')}`
    }
    return 'nothing to change'
  }

  // The first replicas, ready before the load starts.
  const first = Array.from({ length: opts.replicas ?? 2 }, () => add())
  await Promise.all(first.map((r) => startReplica(r)))
  if (rotation.length === 0) {
    await Promise.all([...replicas].map((r) => teardown(r)))
    process.off('exit', killAll)
    throw new Error('the serving demo could not start its model servers')
  }

  const arrivals = opts.arrivals
  const loopMs = arrivals.length > 0 ? arrivals[arrivals.length - 1]!.offsetMs + 1000 : 0
  const baseRps = loopMs > 0 ? (arrivals.length / loopMs) * 1000 : 0
  let capacityRps: number | null = null
  let speed = opts.speed ?? 1
  let multiplier = 1
  let traceNow = 0
  let last = performance.now()
  let idx = 0
  let loop = 0
  let sent = 0
  let answered = 0
  let turn = 0

  const send = (a: DemoArrival) => {
    if (rotation.length === 0) return
    const i = sent++
    const r = rotation[turn++ % rotation.length]!
    r.inFlight++
    r.client!.fetch(`${r.proxyUrl!}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tailguard-priority': i % 5 === 0 ? '0' : '1' },
      body: completionBody(a, maxTokens),
      signal: r.client!.cut.signal,
    })
      .then(async (res) => {
        await res.text()
        answered++
      })
      .catch(() => {})
      .finally(() => r.inFlight--)
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
  let timer: NodeJS.Timeout | undefined
  const begin = () => {
    if (stopped) return
    last = performance.now()
    timer = setInterval(tick, 50)
    timer.unref()
  }
  const load = opts.load
  const started =
    load !== undefined && arrivals.length > 0
      ? probeCapacity(rotation[0]!.server!.url, arrivals, maxTokens, 2000).then(
          (cap) => {
            capacityRps = cap
            speed = Math.max(0.05, Math.min(1000, (load * first.length * cap) / baseRps))
            begin()
          },
          (err: Error) => {
            if (stopped) return
            log('warn', `demo: measuring a replica failed (${err.message}); replaying at ${speed}x`)
            begin()
          },
        )
      : Promise.resolve(begin())

  const up = () => replicas.filter((r) => r.proxy && (r.state === 'ready' || r.state === 'draining'))
  return {
    get proxies() {
      return up().map((r) => r.proxy!)
    },
    get proxyUrls() {
      return up().map((r) => r.proxyUrl!)
    },
    get modelUrls() {
      return rotation.map((r) => r.server!.url)
    },
    get rate() {
      return multiplier
    },
    setRate(m: number) {
      if (!(m >= 0 && m <= 1000)) throw new Error(`setRate: expected a multiplier 0..1000, got ${m}`)
      tick()
      multiplier = m
    },
    get speed() {
      return speed
    },
    get capacityRps() {
      return capacityRps
    },
    baseRps,
    started,
    get sent() {
      return sent
    },
    get answered() {
      return answered
    },
    replicaCounts() {
      const a = active()
      const ready = a.filter((r) => r.state === 'ready').length
      return { desired: a.length, ready, starting: a.length - ready }
    },
    scaleTo,
    onStarting(fn) {
      prepare = fn
    },
    signals: () => up().map((r) => r.proxy!.takeSignals()),
    async stop() {
      stopped = true
      clearInterval(timer)
      for (const r of replicas) if (r.state === 'starting') r.state = 'cancelled'
      // No new requests; those in flight may end for a moment (tailguard start gives the demo 3 s to stop), so a
      // stop does not record every running request as cut by its client.
      const until = performance.now() + STOP_GRACE_MS
      while (replicas.some((r) => r.inFlight > 0) && performance.now() < until)
        await new Promise((res) => setTimeout(res, 25))
      await Promise.all([...replicas].filter((r) => r.state !== 'cancelled').map((r) => teardown(r)))
      process.off('exit', killAll)
    },
  }
}

import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { describeFailure, httpJson } from '../http.js'
import { putBatching } from './model-server.js'
import type { Actuator, Knob } from './types.js'

/** Options of {@link createProcessActuator}. */
export interface ProcessActuatorOptions {
  /** The replica command; `{port}` in any argument becomes the replica's port, `{slot}` its number (0, 1, …). */
  readonly command: readonly string[]
  /** Variables set for each replica on top of the environment, with `{port}` and `{slot}` replaced (one GPU
   * per replica: `{ CUDA_VISIBLE_DEVICES: '{slot}' }`). */
  readonly replicaEnv?: Readonly<Record<string, string>>
  /** Replica i listens on basePort + i. */
  readonly basePort: number
  readonly host?: string
  /** The agent (sidecar proxy) whose upstream set holds the replicas (contract 2, `PUT /v1/upstreams`). */
  readonly agentUrl?: string
  readonly agentToken?: string
  /** When true the replicas serve the batching API (contract 3) and this actuator also moves batching. */
  readonly batching?: boolean
  readonly batchingToken?: string
  /** The path a new replica answers 200 on once it serves (default `/health`: vLLM, TGI, SGLang, `tailguard
   * serve-model`; Triton and other KServe v2 servers: `/v2/health/ready`). */
  readonly healthPath?: string
  /** How long a new replica may take to answer on `healthPath` (default 30 s). */
  readonly readyTimeoutMs?: number
  /** How long a draining replica may keep in-flight requests before it is stopped anyway (default 30 s). */
  readonly drainGraceMs?: number
  /** Poll period while waiting for readiness or a drain (default 100 ms). */
  readonly pollMs?: number
  readonly env?: NodeJS.ProcessEnv
  readonly onEvent?: (line: string) => void
}

interface Replica {
  readonly slot: number
  readonly url: string
  readonly child: ChildProcess
  state: 'starting' | 'ready' | 'draining' | 'stopped'
  stderr: string
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** How many slots past the last one in use a scale-up looks at before it gives up on finding free ports. */
const SLOT_SEARCH = 64

/**
 * Whether a replica could listen on host:port: `free`, `busy` (another process listens there), or why no
 * process could (an unknown host, a privileged port, a port past 65535).
 */
function probePort(host: string, port: number): Promise<'free' | 'busy' | { error: string }> {
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    return Promise.resolve({ error: `port ${port} is outside 1–65535` })
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', (err: NodeJS.ErrnoException) =>
      resolve(
        err.code === 'EADDRINUSE' ? 'busy' : { error: `cannot listen on ${host}:${port}: ${err.message}` },
      ),
    )
    probe.listen(port, host, () => probe.close(() => resolve('free')))
  })
}

/**
 * Local replica processes behind a sidecar proxy (the demo and the end-to-end test): scaling up spawns
 * replicas (`tailguard serve-model --port {port}` or any command) on ports no other process holds, waits until
 * `GET {healthPath}` answers 200, then adds them to the agent's upstream set; scaling down first marks the
 * newest replicas `draining` there (the proxy sends them nothing new), waits until their in-flight requests
 * finish or `drainGraceMs` passes, then stops them.
 * Replicas it started are stopped on `close()`.
 *
 * @example createProcessActuator({ command: ['tailguard', 'serve-model', '--port', '{port}'], basePort: 9100, agentUrl: 'http://127.0.0.1:4318' })
 */
export function createProcessActuator(o: ProcessActuatorOptions): Actuator {
  const host = o.host ?? '127.0.0.1'
  const poll = o.pollMs ?? 100
  const health = o.healthPath ?? '/health'
  const replicas: Replica[] = []
  let batching: { windowMs: number; maxBatch: number } | null = null
  let upstreamWrite: Promise<unknown> = Promise.resolve()
  const event = o.onEvent ?? (() => {})

  const agentToken = o.agentToken ? { token: o.agentToken } : {}
  const pushUpstreams = (): Promise<string | null> => {
    if (!o.agentUrl) return Promise.resolve(null)
    const next = upstreamWrite.then(async () => {
      const upstreams = replicas
        .filter((r) => r.state === 'ready' || r.state === 'draining')
        .map((r) => ({ url: r.url, state: r.state === 'ready' ? 'active' : 'draining' }))
      const r = await httpJson(`${o.agentUrl!.replace(/\/$/, '')}/v1/upstreams`, {
        method: 'PUT',
        body: { upstreams },
        ...agentToken,
      })
      return r.ok && r.status === 200 ? null : describeFailure('PUT /v1/upstreams', r)
    })
    upstreamWrite = next
    return next
  }
  /** Pushes the set and says so when the agent did not take it (`what`: the change it carried). */
  const pushOrSay = async (what: string): Promise<void> => {
    const failed = await pushUpstreams()
    if (failed !== null) event(`${what}, but the agent did not take it: ${failed}`)
  }

  const inFlightOf = async (url: string): Promise<number | null> => {
    if (!o.agentUrl) return 0
    const r = await httpJson(`${o.agentUrl.replace(/\/$/, '')}/v1/upstreams`, agentToken)
    if (!r.ok || r.status !== 200) return null
    const list =
      (r.json as { upstreams?: Array<{ url?: string; inFlight?: number }> } | null)?.upstreams ?? []
    const u = list.find((x) => x.url === url)
    return u ? (u.inFlight ?? 0) : 0
  }

  const start = (slot: number): Replica => {
    const port = o.basePort + slot
    const fill = (a: string) => a.replaceAll('{port}', String(port)).replaceAll('{slot}', String(slot))
    const [cmd, ...args] = o.command.map(fill)
    const env = { ...(o.env ?? process.env) }
    for (const [k, v] of Object.entries(o.replicaEnv ?? {})) env[k] = fill(v)
    const child = spawn(cmd!, args, { stdio: ['ignore', 'ignore', 'pipe'], env })
    const r: Replica = { slot, url: `http://${host}:${port}`, child, state: 'starting', stderr: '' }
    child.stderr?.on('data', (c: Buffer) => {
      r.stderr = (r.stderr + c.toString('utf8')).slice(-2000)
    })
    // A replica that exits, or whose command could not be started at all ('error' without 'exit'), leaves.
    const gone = (why: string) => {
      if (!replicas.includes(r)) return
      if (r.state !== 'stopped') event(`replica ${r.url} ${why} ${r.stderr.trim().slice(-200)}`.trimEnd())
      r.state = 'stopped'
      replicas.splice(replicas.indexOf(r), 1)
      void pushOrSay(`replica ${r.url} left the upstream set`)
    }
    child.on('exit', (code, signal) => gone(`exited (${signal ?? code})`))
    child.on('error', (err) => gone(`could not start: ${err.message}`))
    replicas.push(r)
    void (async () => {
      const deadline = Date.now() + (o.readyTimeoutMs ?? 30_000)
      while (r.state === 'starting' && Date.now() < deadline) {
        const h = await httpJson(`${r.url}${health}`, { timeoutMs: 1000 })
        if (h.ok && h.status === 200) {
          if (batching && o.batching) await putBatching([r.url], batching, o.batchingToken)
          r.state = 'ready'
          event(`replica ${r.url} ready`)
          await pushOrSay(`replica ${r.url} ready`)
          return
        }
        await sleep(poll)
      }
      if (r.state === 'starting') {
        event(`replica ${r.url} not ready after ${o.readyTimeoutMs ?? 30_000} ms; stopping it`)
        r.state = 'stopped'
        child.kill('SIGTERM')
      }
    })()
    return r
  }

  const drainAndStop = async (r: Replica) => {
    r.state = 'draining'
    // Not taken: the proxy still sends it new requests, which the stop below cuts off after the grace period.
    await pushOrSay(`replica ${r.url} draining`)
    const deadline = Date.now() + (o.drainGraceMs ?? 30_000)
    while (Date.now() < deadline) {
      const n = await inFlightOf(r.url)
      if (n === 0) break
      await sleep(poll)
    }
    r.state = 'stopped'
    r.child.kill('SIGTERM')
    const i = replicas.indexOf(r)
    if (i >= 0) replicas.splice(i, 1)
    await pushOrSay(`replica ${r.url} stopped`)
    event(`replica ${r.url} drained and stopped`)
  }

  const active = () => replicas.filter((r) => r.state === 'starting' || r.state === 'ready')
  const knobs: Knob[] = o.batching ? ['replicas', 'batching'] : ['replicas']
  return {
    name: `process ${o.command[0]} on ${host}:${o.basePort}+`,
    knobs,
    async read() {
      const a = active()
      const ready = a.filter((r) => r.state === 'ready').length
      return {
        ok: true,
        reading: {
          replicas: { desired: a.length, ready, starting: a.length - ready },
          ...(o.batching && batching ? { batching } : {}),
        },
      }
    },
    async apply(change) {
      const notes: string[] = []
      if (change.batching && o.batching) {
        batching = { ...change.batching }
        const urls = replicas.filter((r) => r.state === 'ready').map((r) => r.url)
        if (urls.length > 0) {
          const b = await putBatching(urls, batching, o.batchingToken)
          if (!b.ok) return b
        }
        notes.push(
          `batching window ${batching.windowMs} ms, max batch ${batching.maxBatch} on ${urls.length} replica(s)`,
        )
      }
      if (change.replicas !== undefined) {
        const a = active()
        if (change.replicas > a.length) {
          // A port something else listens on is skipped: a replica there would exit at once, and a foreign
          // server answering the health path would join the upstream set.
          const used = new Set(replicas.map((r) => r.slot))
          const started: string[] = []
          const busy: number[] = []
          const last = Math.max(-1, ...used) + SLOT_SEARCH
          let refused: string | null = null
          for (let slot = 0; started.length < change.replicas - a.length && slot <= last; slot++) {
            if (used.has(slot)) continue
            const port = await probePort(host, o.basePort + slot)
            if (port === 'free') started.push(start(slot).url)
            else if (port === 'busy') busy.push(o.basePort + slot)
            else {
              refused = port.error
              break
            }
          }
          if (busy.length > 0) event(`port(s) ${busy.join(', ')} in use by another process; skipped`)
          if (started.length < change.replicas - a.length) {
            const why = refused ?? `ports ${o.basePort}–${o.basePort + last} on ${host} are in use`
            return {
              ok: false,
              error: `started ${started.length} of ${change.replicas - a.length} replicas: ${why}`,
            }
          }
          notes.push(
            `started ${started.join(', ')}${busy.length > 0 ? ` (ports ${busy.join(', ')} in use, skipped)` : ''}`,
          )
        } else if (change.replicas < a.length) {
          // Newest first, starting ones before ready ones.
          const victims = [...a]
            .sort((x, y) => (x.state === y.state ? y.slot - x.slot : x.state === 'starting' ? -1 : 1))
            .slice(0, a.length - change.replicas)
          for (const v of victims) void drainAndStop(v)
          notes.push(`draining ${victims.map((v) => v.url).join(', ')}`)
        }
      }
      return { ok: true, detail: notes.join('; ') || 'nothing to change' }
    },
    async close() {
      for (const r of [...replicas]) {
        r.state = 'stopped'
        r.child.kill('SIGTERM')
      }
      replicas.length = 0
    },
  }
}

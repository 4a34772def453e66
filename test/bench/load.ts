import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { Pool } from 'undici'

/** One finished request of an open-loop run. */
export interface Sample {
  /** From the moment the schedule said to send it (not when it was sent) to the end of the body, ms. */
  readonly latencyMs: number
  readonly status: number
  /** Priority class sent in x-tailguard-priority, if any. */
  readonly cls: number
  /** The request's place in the schedule (0 first): it was due at start + seq / rate. */
  readonly seq: number
}

/**
 * Open-loop load at a fixed rate: request i is due at start + i/rate whether or not earlier ones finished
 * (no coordinated omission: latency counts from the due time). Returns every sample.
 *
 * @example const samples = await openLoop({ url, ratePerS: 2000, durationMs: 5000 })
 */
export async function openLoop(opts: {
  readonly url: string
  readonly ratePerS: number
  readonly durationMs: number
  readonly path?: string
  readonly method?: string
  readonly body?: string
  readonly headers?: (i: number) => Record<string, string>
  readonly classOf?: (i: number) => number
  readonly connections?: number
  readonly timeoutMs?: number
}): Promise<Sample[]> {
  const pool = new Pool(opts.url, {
    connections: opts.connections ?? 256,
    pipelining: 1,
    headersTimeout: opts.timeoutMs ?? 30_000,
    bodyTimeout: opts.timeoutMs ?? 30_000,
  })
  const total = Math.round((opts.ratePerS * opts.durationMs) / 1000)
  const samples: Sample[] = []
  const pending: Promise<void>[] = []
  const start = performance.now() + 20
  let i = 0
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now()
      while (i < total && start + (i * 1000) / opts.ratePerS <= now) {
        const due = start + (i * 1000) / opts.ratePerS
        const seq = i
        const cls = opts.classOf?.(i) ?? 0
        const headers = opts.headers?.(i) ?? {}
        pending.push(
          pool
            .request({
              path: opts.path ?? '/',
              method: (opts.method ?? 'GET') as 'GET',
              headers,
              ...(opts.body !== undefined ? { body: opts.body } : {}),
            })
            .then(async (res) => {
              await res.body.dump()
              samples.push({ latencyMs: performance.now() - due, status: res.statusCode, cls, seq })
            })
            .catch(() => {
              samples.push({ latencyMs: performance.now() - due, status: 0, cls, seq })
            }),
        )
        i++
      }
      if (i < total) setTimeout(tick, 1)
      else resolve()
    }
    tick()
  })
  await Promise.all(pending)
  await pool.close()
  return samples
}

/** The q-quantile (nearest rank) of `values`, in their unit; NaN for none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN
  const s = [...values].sort((a, b) => a - b)
  return s[Math.max(0, Math.ceil(q * s.length) - 1)]!
}

/** CPU seconds (user + system) a process and its children have used, from /proc. */
export function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // Gone: nothing to add.
    }
  }
  return ticks / 100
}

/** Pids of a process's direct children (nginx's workers). */
export function childPids(pid: number): number[] {
  const out: number[] = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) out.push(Number(d))
    } catch {
      // Raced with an exit.
    }
  }
  return out
}

/** A collector stand-in for {@link spawnNode} that acknowledges every report (an agent with no collector
 * retries from its spool). */
export const STUB_COLLECTOR = `
import { createServer } from 'node:http'
const s = createServer((req, res) => {
  req.resume()
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"stored"}'))
})
s.listen(0, '127.0.0.1', () => console.log('listening ' + s.address().port))
`

/** Spawns `node -e source` (an inline helper server); resolves once it prints `listening <port>`. */
export function spawnNode(
  source: string,
  args: readonly string[] = [],
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', source, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  return waitListening(child)
}

/** Resolves with the port once the child prints `listening <port>` (or any `:<port>` URL). */
export function waitListening(
  child: ChildProcess,
  re = /listening (\d+)/,
): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    let out = ''
    const t = setTimeout(() => reject(new Error(`child did not start: ${out}`)), 30_000)
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = re.exec(out)
      if (m) {
        clearTimeout(t)
        resolve({ child, port: Number(m[1]) })
      }
    })
    child.once('exit', (code) => reject(new Error(`child exited (${code}): ${out}`)))
  })
}

/** Kills a child process and waits for it to exit. */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  child.kill('SIGTERM')
  const t = setTimeout(() => child.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(t)
}

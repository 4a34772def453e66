import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../collector/paths.js'

/** The compiled CLI; `npm test` builds it before the tests run. */
export const CLI = join(packageRoot(), 'dist', 'bin', 'tailguard.js')

export function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first (npm test does)`)
}

export interface CliProcess {
  readonly child: ChildProcess
  /** Everything printed so far (stdout and stderr). */
  output(): string
  /** Resolves with the first match of `re` in the output, or rejects after `timeoutMs`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>
  /** Resolves with the exit code. */
  exited: Promise<number | null>
  kill(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Spawns `tailguard start` with `config`, its data in `<dir>/data` and any free collector and OTLP ports, then
 * `extra` flags.
 *
 * @example const start = spawnStart(dir, join(dir, 'tailguard.yaml'), ['--no-keda'])
 */
export function spawnStart(
  dir: string,
  config: string,
  extra: readonly string[] = [],
  env: Record<string, string> = {},
): CliProcess {
  return spawnCli(
    [
      'start',
      '--config',
      config,
      '--data-dir',
      join(dir, 'data'),
      '--port',
      '0',
      '--otlp-port',
      '0',
      ...extra,
    ],
    env,
  )
}

/**
 * Spawns `tailguard <args>` as a real process.
 *
 * @example const c = spawnCli(['collector', '--port', '0', '--db', file], { TAILGUARD_API_TOKEN: … })
 */
export function spawnCli(args: readonly string[], env: Record<string, string> = {}): CliProcess {
  assertBuilt()
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const waiters: Array<() => void> = []
  const onData = (d: Buffer) => {
    out += d.toString()
    for (const w of waiters.slice()) w()
  }
  child.stdout!.on('data', onData)
  child.stderr!.on('data', onData)
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return {
    child,
    output: () => out,
    exited,
    waitFor(re, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(re)
          if (m) {
            waiters.splice(waiters.indexOf(check), 1)
            clearTimeout(timer)
            resolve(m)
          }
        }
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(check), 1)
          reject(new Error(`timed out waiting for ${re} in output:\n${out}`))
        }, timeoutMs)
        waiters.push(check)
        void exited.then((code) => {
          if (waiters.includes(check)) {
            check()
            if (waiters.includes(check)) {
              waiters.splice(waiters.indexOf(check), 1)
              clearTimeout(timer)
              reject(new Error(`process exited (${code}) before printing ${re}:\n${out}`))
            }
          }
        })
        check()
      })
    },
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
}

/**
 * Arguments of a quiet test `tailguard agent` proxying to `upstream` (any proxy port, the OTLP/metrics port
 * given or any, no NVML), reporting to `collector`.
 *
 * @example spawnCli(proxyAgentArgs(modelUrl, 'http://127.0.0.1:9'), env)
 */
export function proxyAgentArgs(upstream: string, collector: string, otlpPort = 0): string[] {
  return [
    'agent',
    '--proxy-port',
    '0',
    '--upstream',
    upstream,
    '--otlp-port',
    String(otlpPort),
    '--no-nvml',
    '--log-level',
    'fatal',
    '--collector',
    collector,
  ]
}

/** Calls the API with a bearer token and parses JSON. */
export async function api<T = unknown>(
  base: string,
  path: string,
  token: string,
  init: RequestInit = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
  })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: res.status, body: body as T }
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes. */
export async function eventually<T>(
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
  everyMs = 200,
): Promise<T> {
  const end = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v) return v
    } catch (err) {
      last = err
    }
    if (Date.now() > end)
      throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

/** What a program printed and how it exited. */
export interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs a program to completion (no shell) and captures what it printed.
 *
 * @example const r = await runToEnd(process.execPath, [CLI, '--version'])
 */
export function runToEnd(
  cmd: string,
  args: readonly string[],
  opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd ?? packageRoot(),
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

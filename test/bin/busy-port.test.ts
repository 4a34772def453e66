import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import type { Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnCli } from '../helpers/cli.js'
import { useTempDirs } from '../helpers/temp-dirs.js'

// A port that is already taken: one line naming the port and the flag that changes it, exit code 1 within 5 s,
// and nothing half-started (no store opened, no collector left up when only the OTLP port is busy).

let busy: Server
let busyPort = 0
/**
 * How long this machine takes to start the CLI at all (`--version`): the 5 s are counted on top of twice that,
 * as a loaded machine (CI runners, shared cores) can take seconds just to load the modules.
 */
let startupMs = 0
beforeAll(async () => {
  busy = createServer()
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
  busyPort = (busy.address() as { port: number }).port
  const t0 = Date.now()
  expect(await spawnCli(['--version']).exited).toBe(0)
  startupMs = Date.now() - t0
})
afterAll(async () => {
  await new Promise((resolve) => busy.close(resolve))
})
const tempDir = useTempDirs('tg-busy-')

const TOKENS = {
  TAILGUARD_API_TOKEN: 'busy-port-admin-token-0123456789',
  TAILGUARD_AGENT_TOKEN: 'busy-port-agent-token-0123456789',
}

/** Runs the CLI, which must exit by itself (killed after 30 s); resolves with its exit code and output lines. */
async function runBusy(args: string[]): Promise<{ code: number | null; lines: string[]; ms: number }> {
  const t0 = Date.now()
  const p = spawnCli(args, TOKENS)
  const timer = setTimeout(() => void p.kill('SIGKILL'), 30_000)
  const code = await p.exited
  clearTimeout(timer)
  const ms = Date.now() - t0
  return { code, lines: p.output().split('\n').filter(Boolean), ms }
}

const expectedLine = (flag: string) =>
  `tailguard: port ${busyPort} is already in use (${flag}); choose another port or stop the process using it`

describe('a busy port', () => {
  it('tailguard start --port: one line, exit 1, nothing started', async () => {
    const dir = tempDir()
    const r = await runBusy([
      'start',
      '--data-dir',
      dir,
      '--port',
      String(busyPort),
      '--otlp-port',
      '0',
      '--no-demo',
    ])
    expect(r.lines).toEqual([expectedLine('--port')])
    expect(r.code).toBe(1)
    expect(r.ms).toBeLessThan(2 * startupMs + 5_000)
    expect(existsSync(join(dir, 'tailguard.db'))).toBe(false)
  })

  it('tailguard start --otlp-port: one line, exit 1, no collector left up', async () => {
    const dir = tempDir()
    const r = await runBusy(['start', '--data-dir', dir, '--port', '0', '--otlp-port', String(busyPort)])
    expect(r.lines).toEqual([expectedLine('--otlp-port')])
    expect(r.code).toBe(1)
    expect(r.ms).toBeLessThan(2 * startupMs + 5_000)
    // The process exited by itself (no listener kept it alive), and the store was never opened.
    expect(existsSync(join(dir, 'tailguard.db'))).toBe(false)
  })

  it('tailguard collector --port: one line, exit 1, the store is not opened', async () => {
    const dir = tempDir()
    const db = join(dir, 'c.db')
    const r = await runBusy(['collector', '--port', String(busyPort), '--db', db])
    expect(r.lines).toEqual([expectedLine('--port')])
    expect(r.code).toBe(1)
    expect(r.ms).toBeLessThan(2 * startupMs + 5_000)
    expect(existsSync(db)).toBe(false)
  })

  it('tailguard agent --otlp-port: one line, exit 1', async () => {
    const r = await runBusy(['agent', '--otlp-port', String(busyPort), '--no-nvml'])
    expect(r.lines).toEqual([expectedLine('--otlp-port')])
    expect(r.code).toBe(1)
    expect(r.ms).toBeLessThan(2 * startupMs + 5_000)
  })

  it('tailguard agent --otlp-grpc-port: one line, exit 1', async () => {
    const r = await runBusy(['agent', '--otlp-port', '0', '--otlp-grpc-port', String(busyPort), '--no-nvml'])
    expect(r.lines).toEqual([expectedLine('--otlp-grpc-port')])
    expect(r.code).toBe(1)
    expect(r.ms).toBeLessThan(2 * startupMs + 5_000)
  })
})

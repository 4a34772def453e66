import { execFileSync } from 'node:child_process'
import { rmSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnCli } from '../helpers/cli.js'
import { useTempDirs } from '../helpers/temp-dirs.js'
import type { CliProcess } from '../helpers/cli.js'

// When the data directory of `tailguard start` (or its SQLite file) is removed while it runs, SQLite keeps
// writing to the removed file and the agent cannot spool its last reports: nothing fails until exit, and the data
// is gone. SIGTERM must still stop it within seconds, and the exit must say so: code 1 and one clear line.
// Shutdown is bounded as well: a part that does not stop (a demo model server that does not exit) is left behind
// after 3 s, and the agent's reports and the store are still flushed.

const tempDir = useTempDirs('tg-start-data-removed-')
const procs: CliProcess[] = []
afterAll(async () => {
  for (const p of procs) await p.kill('SIGKILL')
})

async function start(extra: string[]) {
  const dir = tempDir()
  const dataDir = join(dir, 'data')
  const p = spawnCli([
    'start',
    '--data-dir',
    dataDir,
    '--port',
    '0',
    '--otlp-port',
    '0',
    '--no-keda',
    ...extra,
  ])
  procs.push(p)
  await p.waitFor(/tailguard is running/, 60_000)
  await p.waitFor(/OTLP\/HTTP:/)
  return { p, dataDir }
}

async function stopTimed(p: CliProcess) {
  const t0 = Date.now()
  const code = await p.kill('SIGTERM')
  return { code, ms: Date.now() - t0 }
}

describe('tailguard start when its data is removed under it', () => {
  it('with the demo running: the data directory removed, SIGTERM exits 1 within seconds with one line', async () => {
    const { p, dataDir } = await start([])
    await new Promise((r) => setTimeout(r, 3000)) // reports and decisions flowing into the store
    rmSync(dataDir, { recursive: true, force: true })
    await new Promise((r) => setTimeout(r, 3000)) // the agent fails to spool; the store writes to the removed file
    const { code, ms } = await stopTimed(p)
    expect(code, p.output()).toBe(1)
    expect(ms).toBeLessThan(10_000)
    const lines = p.output().split('\n')
    expect(lines.filter((l) => l.startsWith('tailguard: '))).toEqual([
      `tailguard: the data directory ${dataDir} was removed while tailguard ran: what it stored since (and the agent's last reports) could not be saved`,
    ])
  }, 90_000)

  it('the SQLite file alone removed: exit 1 naming the store', async () => {
    const { p, dataDir } = await start(['--no-demo'])
    unlinkSync(join(dataDir, 'tailguard.db'))
    const { code, ms } = await stopTimed(p)
    expect(code, p.output()).toBe(1)
    expect(ms).toBeLessThan(10_000)
    expect(p.output()).toContain(
      `tailguard: the store ${join(dataDir, 'tailguard.db')} was removed or replaced while tailguard ran: what it stored since could not be saved`,
    )
  }, 60_000)

  it('a demo model server that does not exit: left behind after 3 s, exit 1 with one line', async () => {
    const { p } = await start([])
    // The start process's own children: the demo's model servers. A stopped process ignores SIGTERM.
    const kids = execFileSync('pgrep', ['-P', String(p.child.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number)
    expect(kids.length).toBeGreaterThanOrEqual(1)
    process.kill(kids[0]!, 'SIGSTOP')
    try {
      const { code, ms } = await stopTimed(p)
      expect(code, p.output()).toBe(1)
      expect(ms).toBeLessThan(8000)
      // The controller may be stuck too: its step can be waiting on the stopped server's batching API.
      const lines = p.output().split('\n')
      expect(lines.filter((l) => l.startsWith('tailguard: '))).toEqual([
        expect.stringMatching(
          /^tailguard: stopping (the controller and )?the demo took more than 3 s: left behind; the agent's reports and the store were flushed$/,
        ),
      ])
    } finally {
      process.kill(kids[0]!, 'SIGKILL')
    }
  }, 90_000)

  it('nothing removed: SIGTERM exits 0 and prints no such line', async () => {
    const { p } = await start(['--no-demo'])
    const { code } = await stopTimed(p)
    expect(code).toBe(0)
    expect(p.output()).not.toMatch(/could not be saved/)
  }, 60_000)

  it('a SIGTERM the moment it says it is running stops it cleanly (exit 0), not by the signal', async () => {
    // The CI run on Node 22 caught `start` killed by SIGTERM (code null): the signal came between the printed
    // addresses and the wait. Sent here as early as a script can: on the first line that says it runs.
    for (let i = 0; i < 3; i++) {
      const p = spawnCli([
        'start',
        '--data-dir',
        join(tempDir(), 'data'),
        '--port',
        '0',
        '--otlp-port',
        '0',
        '--no-keda',
        '--no-demo',
      ])
      procs.push(p)
      await p.waitFor(/tailguard is running/, 60_000)
      p.child.kill('SIGTERM')
      expect(await p.exited, p.output()).toBe(0)
      expect(p.child.signalCode).toBeNull()
    }
  }, 90_000)
})

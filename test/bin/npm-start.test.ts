import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { packageRoot } from '../../collector/index.js'
import { childPids } from '../bench/load.js'
import { assertBuilt } from '../helpers/cli.js'
import { useTempDirs } from '../helpers/temp-dirs.js'

// A process manager, systemd or `docker stop` sends SIGTERM to `npm start` only, not to its process group; npm
// passes it to its child. The start script `exec`s the CLI, so that child is tailguard itself (through a shell
// in between, the shell died and tailguard went on running without a parent, holding its ports).

const ROOT = packageRoot()
const tempDir = useTempDirs('tg-npm-start-')

function descendants(pid: number): number[] {
  const out: number[] = []
  for (const c of childPids(pid)) out.push(c, ...descendants(c))
  return out
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('npm start', () => {
  it('stops tailguard when npm alone gets SIGTERM', async () => {
    assertBuilt()
    const dir = tempDir()
    const npm = spawn(
      'npm',
      ['start', '--', '--data-dir', dir, '--port', '0', '--otlp-port', '0', '--no-demo'],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let output = ''
    await new Promise<void>((resolve, reject) => {
      const onData = (d: Buffer) => {
        output += d.toString()
        if (/tailguard is running/.test(output)) resolve()
      }
      npm.stdout.on('data', onData)
      npm.stderr.on('data', onData)
      npm.once('exit', () => reject(new Error(`npm start exited before running:\n${output}`)))
    })
    const pids = descendants(npm.pid!)
    expect(pids.length).toBeGreaterThan(0)
    // 'exit', not 'close': a tailguard left running would hold npm's output pipes open.
    const exited = new Promise((r) => npm.once('exit', r))
    npm.kill('SIGTERM')
    try {
      await exited
      for (let i = 0; i < 100 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 100))
      expect(pids.filter(alive), output).toEqual([])
    } finally {
      for (const p of pids.filter(alive)) process.kill(p, 'SIGKILL')
    }
    // It shut down, not just died: the SQLite store was closed (its WAL checkpointed and removed).
    expect(existsSync(join(dir, 'tailguard.db'))).toBe(true)
    expect(existsSync(join(dir, 'tailguard.db-wal'))).toBe(false)
  }, 90_000)
})

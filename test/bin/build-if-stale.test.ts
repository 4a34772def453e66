import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { packageRoot } from '../../collector/index.js'
import { CLI, assertBuilt } from '../helpers/cli.js'
import { useTempDirs } from '../helpers/temp-dirs.js'

// `npm start` builds only what is stale (bin/build-if-stale.mjs), so a second start with nothing changed is
// quick; `npm run build` still builds everything.

const ROOT = packageRoot()
const tempDir = useTempDirs('tg-stale-')

const INPUTS = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'collector/a.ts',
  'bin/tailguard.ts',
  'dashboard/src/main.tsx',
  'dashboard/index.html',
]
const TS_OUTPUTS = ['dist/collector/a.js', 'dist/bin/tailguard.js']
const DASHBOARD_OUTPUT = 'dist/dashboard/index.html'

/** A miniature package whose "tsc" and "vite" record that they ran and write the outputs the real ones do. */
function fakePackage() {
  const dir = tempDir()
  const write = (path: string, text: string) => {
    mkdirSync(join(dir, path, '..'), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  cpSync(join(ROOT, 'bin', 'build-if-stale.mjs'), join(dir, 'bin', 'build-if-stale.mjs'))
  const fake = (name: string, outputs: readonly string[]) =>
    `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'\n` +
    `import { dirname } from 'node:path'\n` +
    `appendFileSync('ran.log', '${name}\\n')\n` +
    `for (const o of ${JSON.stringify(outputs)}) {\n` +
    `  mkdirSync(dirname(o), { recursive: true })\n  writeFileSync(o, 'built')\n}\n`
  write('node_modules/typescript/bin/tsc', fake('tsc', TS_OUTPUTS))
  write('node_modules/vite/bin/vite.js', fake('vite', [DASHBOARD_OUTPUT]))
  write('package.json', '{ "type": "module" }\n')
  write('package-lock.json', '{}\n')
  write('tsconfig.json', '{}\n')
  write('collector/a.ts', 'export const a = 1\n')
  write('bin/tailguard.ts', 'export {}\n')
  write('dashboard/src/main.tsx', 'export {}\n')
  write('dashboard/index.html', '<div id="root"></div>\n')
  const age = (path: string, secondsAgo: number) => {
    const t = new Date(Date.now() - secondsAgo * 1000)
    utimesSync(join(dir, path), t, t)
  }
  for (const f of INPUTS) age(f, 120)
  const script = (args: string[] = []) =>
    spawnSync(process.execPath, ['bin/build-if-stale.mjs', ...args], { cwd: dir, encoding: 'utf8' })
  return {
    dir,
    /** Runs the script; returns which builds ran. */
    run(): string[] {
      rmSync(join(dir, 'ran.log'), { force: true })
      const r = script()
      expect(r.status, r.stderr).toBe(0)
      try {
        return readFileSync(join(dir, 'ran.log'), 'utf8').trim().split('\n')
      } catch {
        return []
      }
    },
    check: () => script(['--check']),
    /** The last builds finished a minute ago; `path` was edited 30 s ago. */
    editedSinceBuild(path: string) {
      for (const f of INPUTS) age(f, 120)
      for (const out of [...TS_OUTPUTS, DASHBOARD_OUTPUT]) age(out, 60)
      age(path, 30)
    },
  }
}

describe('bin/build-if-stale.mjs', () => {
  it('builds what has no output, then nothing until an input changes, then only that part', () => {
    const pkg = fakePackage()
    expect(pkg.run()).toEqual(['tsc', 'vite'])
    expect(pkg.run()).toEqual([])
    pkg.editedSinceBuild('collector/a.ts')
    expect(pkg.run()).toEqual(['tsc'])
    expect(pkg.run()).toEqual([])
    pkg.editedSinceBuild('tsconfig.json')
    expect(pkg.run()).toEqual(['tsc'])
    pkg.editedSinceBuild('dashboard/src/main.tsx')
    expect(pkg.run()).toEqual(['vite'])
    pkg.editedSinceBuild('package-lock.json')
    expect(pkg.run()).toEqual(['vite'])
    pkg.editedSinceBuild('package.json') // a version bump rebuilds nothing
    expect(pkg.run()).toEqual([])
    rmSync(join(pkg.dir, DASHBOARD_OUTPUT))
    expect(pkg.run()).toEqual(['vite'])
    rmSync(join(pkg.dir, 'dist/collector/a.js'))
    expect(pkg.run()).toEqual(['tsc'])
  })

  it('--check builds nothing and exits 1 naming what is stale', () => {
    const pkg = fakePackage()
    const stale = pkg.check()
    expect(stale.status).toBe(1)
    expect(stale.stderr).toContain('build: TypeScript (dist/')
    expect(stale.stderr).toContain(`build: dashboard (${DASHBOARD_OUTPUT} is missing)`)
    expect(pkg.run()).toEqual(['tsc', 'vite'])
    expect(pkg.check().status).toBe(0)
  })

  it('npm start with nothing changed skips the build: within 5 s of starting the CLI directly', async () => {
    assertBuilt()
    const check = spawnSync(process.execPath, ['bin/build-if-stale.mjs', '--check'], {
      cwd: ROOT,
      encoding: 'utf8',
    })
    // Rebuilding here would rewrite dist/ under the other tests' feet: the suite runs after `npm run build`.
    expect(check.status, `dist/ is stale, run npm run build first:\n${check.stderr}`).toBe(0)
    const dir = tempDir()
    const args = ['--data-dir', dir, '--port', '0', '--otlp-port', '0', '--no-demo']
    const timeToRunning = (cmd: string, argv: string[]) =>
      new Promise<{ ms: number; output: string }>((resolve, reject) => {
        const t0 = Date.now()
        // Its own process group, so that npm, its shell and tailguard all stop together.
        const child = spawn(cmd, argv, { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
        let output = ''
        let result: { ms: number; output: string } | Error | null = null
        const stop = (r: { ms: number; output: string } | Error) => {
          if (result) return
          result = r
          clearTimeout(timer)
          process.kill(-child.pid!, 'SIGTERM')
        }
        const onData = (d: Buffer) => {
          output += d.toString()
          if (/tailguard is running/.test(output)) stop({ ms: Date.now() - t0, output })
        }
        child.stdout.on('data', onData)
        child.stderr.on('data', onData)
        child.on('close', () =>
          result instanceof Error || result === null
            ? reject(result ?? new Error(`exited before running:\n${output}`))
            : resolve(result),
        )
        const timer = setTimeout(() => stop(new Error(`not running after 60 s:\n${output}`)), 60_000)
      })
    const direct = await timeToRunning(process.execPath, [CLI, 'start', ...args])
    const npmStart = await timeToRunning('npm', ['start', '--', ...args])
    console.log(`npm start: running after ${npmStart.ms} ms (the CLI alone: ${direct.ms} ms)`)
    expect(npmStart.output).not.toMatch(/^build: /m)
    expect(npmStart.ms).toBeLessThan(direct.ms + 5_000) // a build would take 30 s or more
  }, 150_000)
})

import { cpSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { run } from '../../../bin/tailguard.js'
import { packageRoot } from '../../../collector/index.js'
import type { CliIO } from '../../../collector/index.js'
import { AZURE_TRACE_ATTRIBUTION } from '../../../controller/index.js'
import { CLI, assertBuilt, runToEnd } from '../../helpers/cli.js'
import { useTempDirs } from '../../helpers/temp-dirs.js'

// `tailguard sim` on the trace the package ships (by path as the docs write it, and by default), and its
// output: headers that say each thing once, saturated rows in words, and where the report went.

const ROOT = packageRoot()
const tempDir = useTempDirs('tg-simcli-')
const runNode = async (args: readonly string[], cwd: string) => {
  const r = await runToEnd(process.execPath, args, { cwd })
  return { code: r.code, out: r.stdout, err: r.stderr }
}

function capture(): CliIO & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = []
  const stderr: string[] = []
  return {
    stdout,
    stderr,
    isTTY: false,
    out: (l) => void stdout.push(l),
    err: (l) => void stderr.push(l),
    errRaw: () => {},
  }
}
const sim = async (args: string[]) => {
  const io = capture()
  const code = await run(['node', 'tailguard', 'sim', ...args], io)
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') }
}

const TRACE_HEADER = /^trace azure-llm-2023-conv\.csv: 19,366 requests over 7\.3 min \(time scale ×8\)/m

describe('tailguard sim on the shipped trace', () => {
  it('--trace controller/sim/traces/azure-llm-2023-conv.csv runs as the docs write it', async () => {
    assertBuilt()
    const r = await runNode(
      [
        CLI,
        'sim',
        '--trace',
        'controller/sim/traces/azure-llm-2023-conv.csv',
        '--policy',
        'static',
        '--time-scale',
        '8',
      ],
      ROOT,
    )
    expect(r.err).toBe('')
    expect(r.code).toBe(0)
    expect(r.out).toMatch(TRACE_HEADER)
    expect(r.out).toContain('| static ')
    expect(r.out).toContain(`data: ${AZURE_TRACE_ATTRIBUTION}`)
  })

  it('replays the shipped trace by default, from any working directory (resolved from the package)', async () => {
    assertBuilt()
    const r = await runNode([CLI, 'sim', '--policy', 'static', '--time-scale', '8'], tempDir())
    expect(r.code).toBe(0)
    expect(r.out).toMatch(TRACE_HEADER)
  })

  it('fails loudly, never falling back, when the shipped trace is missing (sim and the start demo)', async () => {
    assertBuilt()
    // A copy of the package without controller/sim/traces/.
    const pkg = tempDir()
    cpSync(join(ROOT, 'package.json'), join(pkg, 'package.json'))
    for (const d of ['bin', 'collector', 'agent', 'controller', 'migrations'])
      cpSync(join(ROOT, 'dist', d), join(pkg, 'dist', d), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'))
    const cli = join(pkg, 'dist', 'bin', 'tailguard.js')
    const missing = join(pkg, 'controller', 'sim', 'traces', 'azure-llm-2023-conv.csv')

    const s = await runNode([cli, 'sim', '--policy', 'static'], pkg)
    expect(s.code).toBe(2)
    expect(s.err).toContain(`--trace ${missing}: cannot read the file (ENOENT)`)

    const data = join(pkg, 'data')
    const start = await runNode([cli, 'start', '--data-dir', data, '--port', '0', '--otlp-port', '0'], pkg)
    expect(start.code).toBe(2)
    expect(start.err.trim()).toBe(
      `tailguard: the demo trace shipped with tailguard is missing: ${missing} (ENOENT); restore it (git checkout -- controller/sim/traces), give --demo-trace FILE, or run with --no-demo`,
    )
  })
})

describe('the package reads only what it ships', () => {
  it('no product file refers to ../shared/traces (a clone does not have it)', () => {
    const offenders: string[] = []
    const visit = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name)
        if (statSync(path).isDirectory()) {
          if (name !== 'node_modules' && name !== 'dist') visit(path)
        } else if (!name.endsWith('.csv') && readFileSync(path, 'utf8').includes('shared/traces'))
          offenders.push(path)
      }
    }
    for (const part of ['agent', 'collector', 'controller', 'dashboard', 'bin']) visit(join(ROOT, part))
    expect(offenders).toEqual([])
  })
})

describe('tailguard sim output', () => {
  const small = ['--rps', '500', '--duration', '20', '--seed', '3', '--policy', 'static']

  it('headers name each workload once (no "step: step:")', async () => {
    for (const pattern of ['poisson', 'mmpp', 'diurnal', 'step']) {
      const r = await sim(['--pattern', pattern, ...small])
      expect(r.code).toBe(0)
      const header = r.out.split('\n')[0]!
      expect(header.startsWith(`${pattern}: `)).toBe(true)
      expect(header.toLowerCase().indexOf(pattern, pattern.length + 1), header).toBe(-1)
    }
    const step = await sim(['--pattern', 'step', ...small])
    expect(step.out).toMatch(/^step: 500 → 1500 req\/s at /)
  })

  it('--find-replicas prints saturated rows in words, not millions of ms', async () => {
    const r = await sim([
      '--pattern',
      'poisson',
      '--rps',
      '3000',
      '--duration',
      '20',
      '--find-replicas',
      '--slo-p99-ms',
      '40',
    ])
    expect(r.code).toBe(0)
    expect(r.out).toMatch(/^ {5}1 replicas: e2e p99 .*\(saturated\)/m)
    expect(r.out).not.toMatch(/\d{5,}(\.\d)? ms/)
    expect(r.out).toMatch(/→ \d+ replicas for e2e p99 ≤ 40 ms/)
  })

  it('says where the report went', async () => {
    const dir = tempDir()
    const file = join(dir, 'report.html')
    const r = await sim(['--pattern', 'poisson', ...small, '--report', file])
    expect(r.code).toBe(0)
    expect(r.err).toBe(`report written to ${file}`)
    expect(readFileSync(file, 'utf8')).toContain('<svg')
  })
})

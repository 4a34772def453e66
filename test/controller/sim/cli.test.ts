import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { run } from '../../../bin/tailguard.js'
import type { CliIO } from '../../../collector/index.js'

function capture(isTTY = false): CliIO & { stdout: string[]; stderr: string[]; raw: string[] } {
  const stdout: string[] = []
  const stderr: string[] = []
  const raw: string[] = []
  return {
    stdout,
    stderr,
    raw,
    isTTY,
    out: (l) => void stdout.push(l),
    err: (l) => void stderr.push(l),
    errRaw: (t) => void raw.push(t),
  }
}

const dir = mkdtempSync(join(tmpdir(), 'tg-sim-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const sim = (args: string[], io = capture()) =>
  run(['node', 'tailguard', 'sim', ...args], io).then((code) => ({ code, io }))

const small = ['--pattern', 'poisson', '--rps', '500', '--duration', '20', '--seed', '3']

describe('tailguard sim', () => {
  it('--help explains every flag', async () => {
    const { io } = await sim(['--help'])
    const help = io.stdout.join('\n')
    for (const flag of [
      '--trace',
      '--pattern',
      '--time-scale',
      '--rps',
      '--duration',
      '--model',
      '--service-ms',
      '--per-item-ms',
      '--noise',
      '--prefill-ms-per-token',
      '--decode-step-ms',
      '--kv-tokens',
      '--window-ms',
      '--max-batch',
      '--replicas',
      '--min-replicas',
      '--max-replicas',
      '--cold-start-s',
      '--warmup-s',
      '--classes',
      '--deadline-ms',
      '--max-queue',
      '--max-concurrency',
      '--slo-p99-ms',
      '--slo-ttft-ms',
      '--slo-tpot-ms',
      '--policy',
      '--seed',
      '--json',
      '--report',
      '--find-replicas',
      '--target-metric',
    ])
      expect(help).toContain(flag)
  })

  it('prints a comparison table for several policies', async () => {
    const { code, io } = await sim([...small, '--policy', 'static,hpa'])
    expect(code).toBe(0)
    const out = io.stdout.join('\n')
    expect(out).toContain('| static ')
    expect(out).toContain('| hpa ')
    expect(out).toContain('GPU-hours')
  })

  it('--json is machine-readable and deterministic for a seed', async () => {
    const a = await sim([...small, '--json'])
    const b = await sim([...small, '--json'])
    expect(a.code).toBe(0)
    const parsed = JSON.parse(a.io.stdout.join('\n')) as Array<{
      results: Array<{ policy: string; arrived: number }>
    }>
    expect(parsed[0]!.results[0]!.policy).toBe('static')
    expect(parsed[0]!.results[0]!.arrived).toBeGreaterThan(9000)
    expect(b.io.stdout.join('\n')).toBe(a.io.stdout.join('\n'))
  })

  it('--report writes a self-contained HTML file', async () => {
    const file = join(dir, 'r.html')
    const { code } = await sim([...small, '--policy', 'all', '--report', file])
    expect(code).toBe(0)
    const html = readFileSync(file, 'utf8')
    expect(html).toContain('<svg')
    expect(html).not.toMatch(/<script/i)
  })

  it('draws a progress bar on stderr only when it is a terminal', async () => {
    const tty = await sim([...small], capture(true))
    expect(tty.io.raw.join('')).toContain('%')
    const pipe = await sim([...small], capture(false))
    expect(pipe.io.raw).toEqual([])
  })

  it('names the file and line of a malformed trace', async () => {
    const file = join(dir, 'bad.csv')
    writeFileSync(
      file,
      'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n2023-11-16 18:15:47.00,abc,44\n',
    )
    const { code, io } = await sim(['--trace', file])
    expect(code).toBe(2)
    expect(io.stderr.join('\n')).toContain(`--trace ${file}:3: ContextTokens`)
  })

  it.each([
    [['--trace', '/nonexistent/x.csv'], '--trace /nonexistent/x.csv: cannot read'],
    [[...small, '--policy', 'magic'], '--policy: unknown policy "magic"'],
    [['--pattern', 'sawtooth'], '--pattern: unknown pattern "sawtooth"'],
    [[...small, '--rps', '-5'], '--rps: expected a number > 0'],
    [[...small, '--noise', 'pink'], '--noise: expected none, exponential or lognormal:CV'],
    [
      [...small, '--min-replicas', '5', '--max-replicas', '2'],
      '--min-replicas: 5 is more than --max-replicas 2',
    ],
    [[...small, '--policy', 'hpa', '--hpa-target', '7'], '--hpa-target: expected a number > 0 ≤ 1, got "7"'],
  ])('rejects bad input with a clear message (%#)', async (args, message) => {
    const { code, io } = await sim(args)
    expect(code).not.toBe(0)
    expect(io.stderr.join('\n')).toContain(message)
  })

  it('--find-replicas answers how many replicas meet the p99 target', async () => {
    const { code, io } = await sim([
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
    expect(code).toBe(0)
    const out = io.stdout.join('\n')
    expect(out).toMatch(/→ \d+ replicas for e2e p99 ≤ 40 ms/)
  })
})

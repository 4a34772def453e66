import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { run } from '../../../bin/tailguard.js'
import type { CliIO } from '../../../collector/index.js'

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

const dir = mkdtempSync(join(tmpdir(), 'tg-sim-tg-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const sim = async (args: string[]) => {
  const io = capture()
  const code = await run(['node', 'tailguard', 'sim', ...args], io)
  return { code, io }
}
const step = ['--pattern', 'step', '--rps', '500', '--duration', '300', '--seed', '2', '--no-progress']

describe('tailguard sim --policy tailguard', () => {
  it('runs beside the baselines in `all`, with its options from the config file and flags', async () => {
    const cfg = join(dir, 'tailguard.yaml')
    writeFileSync(cfg, 'policy:\n  tailguard:\n    nPlusOne: true\n    features: { admission: false }\n')
    const { code, io } = await sim([
      ...step,
      '--policy',
      'all',
      '--config',
      cfg,
      '--tg-headroom',
      '0.4',
      '--json',
    ])
    expect(code).toBe(0)
    const results = (
      JSON.parse(io.stdout.join('\n')) as Array<{
        results: Array<{ policy: string; decisions: Array<{ reason: string }> }>
      }>
    )[0]!.results
    expect(results.map((r) => r.policy)).toEqual(['static', 'hpa', 'keda', 'kpa', 'aimd', 'tailguard'])
    const tg = results.at(-1)!
    expect(tg.decisions.some((d) => /N\+1/.test(d.reason))).toBe(true)
    expect(tg.decisions.some((d) => /admission/.test(d.reason))).toBe(false)
    expect(tg.decisions.some((d) => /headroom (40|20)%/.test(d.reason))).toBe(true)
  })
  it('--tg-ablation adds a row per part turned off; --report marks its decisions on the timeline', async () => {
    const report = join(dir, 'r.html')
    const { code, io } = await sim([...step, '--policy', 'tailguard', '--tg-ablation', '--report', report])
    expect(code).toBe(0)
    const table = io.stdout.join('\n')
    for (const row of [
      'tailguard ',
      'tailguard -forecast',
      'tailguard -batching',
      'tailguard -admission',
      'tailguard -budget',
    ])
      expect(table).toContain(`| ${row}`)
    const html = readFileSync(report, 'utf8')
    expect(html).toContain('<polygon')
    expect(html).toMatch(/<details><summary>tailguard: \d+ decisions/)
  })
  it('names the file, line and field of a bad option, and the flag of a bad part', async () => {
    const cfg = join(dir, 'bad.yaml')
    writeFileSync(cfg, 'policy:\n  tailguard:\n    queueShare: 2\n')
    const bad = await sim([...step, '--policy', 'tailguard', '--config', cfg])
    expect(bad.code).not.toBe(0)
    expect(bad.io.stderr.join('\n')).toMatch(/bad\.yaml:3: policy\.tailguard\.queueShare/)
    const part = await sim([...step, '--policy', 'tailguard', '--tg-off', 'magic'])
    expect(part.code).not.toBe(0)
    expect(part.io.stderr.join('\n')).toContain('--tg-off: unknown part "magic"')
  })
})

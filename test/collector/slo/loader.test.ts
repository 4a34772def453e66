// Acceptance 5: OpenSLO documents import into the same SLOs as the equivalent tailguard YAML; invalid
// documents get errors naming the field and line.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadSloFiles, parseSloText, formatProblems } from '../../../collector/slo/loader.js'
import { sloToRaw, validateSlo } from '../../../collector/slo/definition.js'
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../../../collector/slo/math.js'

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures', 'slo')

describe('SLO files', () => {
  it('imports OpenSLO documents into the same SLOs as the tailguard YAML', async () => {
    const tg = await loadSloFiles(join(fixtures, 'tailguard.yaml'))
    const os = await loadSloFiles(join(fixtures, 'openslo.yaml'))
    if (!tg.ok) throw new Error(formatProblems(tg.problems))
    if (!os.ok) throw new Error(formatProblems(os.problems))
    const byName = (xs: readonly { name: string }[]) => [...xs].sort((a, b) => a.name.localeCompare(b.name))
    expect(byName(os.slos)).toEqual(byName(tg.slos))
    const latency = tg.slos.find((s) => s.name === 'chat-latency')!
    expect(latency.sli).toEqual({ kind: 'latency', metric: 'total', thresholdMs: 187 })
    expect(latency.selector).toEqual({ service: 'chat', model: 'llama3-8b', version: 'v2' })
    expect(latency.objective).toBe(0.99)
    const avail = tg.slos.find((s) => s.name === 'chat-availability')!
    expect(avail.sli).toEqual({ kind: 'availability', shedIsBad: false })
    expect(avail.window).toEqual({ kind: 'rolling', days: 28 })
    expect(avail.tiers[0]!.longWindowMs).toBe(56 * MINUTE_MS)
    const ttft = tg.slos.find((s) => s.name === 'chat-ttft')!
    expect(ttft.budgeting).toEqual({ kind: 'timeslices', sliceMs: 5 * MINUTE_MS, sliceTarget: 0.9 })
    expect(ttft.window).toEqual({ kind: 'calendar-month' })
  })

  it('loads a folder of both formats, told apart by content', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tg-slo-'))
    try {
      await writeFile(join(dir, 'a.yaml'), await readFile(join(fixtures, 'tailguard.yaml'), 'utf8'))
      const os = (await readFile(join(fixtures, 'openslo.yaml'), 'utf8'))
        .replaceAll('name: chat-', 'name: os-chat-')
        .replaceAll('indicatorRef: chat-', 'indicatorRef: os-chat-')
      await writeFile(join(dir, 'b.yml'), os)
      const r = await loadSloFiles(dir)
      if (!r.ok) throw new Error(formatProblems(r.problems))
      expect(r.slos.map((s) => s.name).sort()).toEqual([
        'chat-availability',
        'chat-latency',
        'chat-ttft',
        'os-chat-availability',
        'os-chat-latency',
        'os-chat-ttft',
      ])
      // The same names twice is an error naming both files.
      await writeFile(join(dir, 'c.yaml'), await readFile(join(fixtures, 'tailguard.yaml'), 'utf8'))
      const dup = await loadSloFiles(dir)
      expect(dup.ok).toBe(false)
      if (!dup.ok) expect(formatProblems(dup.problems)).toContain("SLO 'chat-latency' is defined 2 times")
    } finally {
      await rm(dir, { recursive: true })
    }
  })

  it('names file, line and field of every problem in an invalid OpenSLO document', async () => {
    const file = join(fixtures, 'invalid-openslo.yaml')
    const r = await loadSloFiles(file)
    expect(r.ok).toBe(false)
    if (r.ok) return
    const find = (field: string) => r.problems.find((p) => p.field === field)
    expect(find('spec.indicator.spec.thresholdMetric.metricSource.type')).toMatchObject({ file, line: 11 })
    expect(find('spec.timeWindow[0].duration')).toMatchObject({ file, line: 13 })
    expect(find('spec.objectives[0].op')).toMatchObject({ file, line: 16 })
    expect(find('spec.objectives[0].op')!.message).toContain('lte')
  })

  it('names file, line and field of every problem in an invalid tailguard file', async () => {
    const file = join(fixtures, 'invalid-tailguard.yaml')
    const r = await loadSloFiles(file)
    expect(r.ok).toBe(false)
    if (r.ok) return
    expect(r.problems.map((p) => `${p.line} ${p.field}`)).toEqual([
      '8 slos[1].phase',
      '9 slos[1].thresholdMs',
      '10 slos[1].objective',
    ])
  })

  it('reports YAML syntax errors with their line, and unknown formats and versions', () => {
    const bad = parseSloText('version: 1\nslos:\n  - name: x\n    kind: [unclosed\n', 'x.yaml')
    expect(bad.ok).toBe(false)
    if (!bad.ok) expect(bad.problems[0]!.field).toBe('(yaml)')
    const v2 = parseSloText('version: 2\nslos: []\n', 'v.yaml')
    expect(v2.ok).toBe(false)
    if (!v2.ok) expect(v2.problems[0]).toMatchObject({ line: 1, field: 'version' })
    const other = parseSloText('apiVersion: openslo/v2\nkind: SLO\n', 'o.yaml')
    expect(other.ok).toBe(false)
    const neither = parseSloText('hello: world\n', 'n.yaml')
    expect(neither.ok).toBe(false)
  })

  it('configures, scales and disables alert tiers per SLO', () => {
    const r = validateSlo({
      name: 'x',
      kind: 'availability',
      objective: 0.99,
      window: '7d',
      alerting: {
        minEvents: 50,
        for: '2m',
        tiers: {
          'ticket-3d': { enabled: false },
          'page-1h': { factor: 10 },
          fast: { factor: 20, long: '30m', short: '2m', severity: 'page' },
        },
      },
    })
    if (!r.ok) throw new Error(JSON.stringify(r.problems))
    expect(
      r.slo.tiers.map((t) => [t.id, t.factor, t.longWindowMs / MINUTE_MS, t.shortWindowMs / MINUTE_MS]),
    ).toEqual([
      ['page-1h', 10, 14, 1],
      ['page-6h', 6, 84, 7],
      ['ticket-1d', 3, 336, 28],
      ['fast', 20, 30, 2],
    ])
    expect(r.slo.minEvents).toBe(50)
    expect(r.slo.forMs).toBe(2 * MINUTE_MS)
    // The JSON form round-trips.
    const back = validateSlo(sloToRaw(r.slo))
    expect(back.ok && back.slo).toEqual(r.slo)
    expect(HOUR_MS * 24).toBe(DAY_MS)
  })
})

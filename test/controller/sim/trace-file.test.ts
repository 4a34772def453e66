import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  createArrivals,
  shippedTracePath,
  parseAzureTrace,
  scanTraceFile,
  TRACE_REORDER_ROWS,
} from '../../../controller/index.js'
import type { ArrivalDraft } from '../../../controller/index.js'

const HEADER = 'TIMESTAMP,ContextTokens,GeneratedTokens'
const dir = mkdtempSync(join(tmpdir(), 'tg-trace-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function file(name: string, text: string): string {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}

function replay(path: string, timeScale = 1): ArrivalDraft[] {
  const scan = scanTraceFile(path)
  if (!scan.ok) throw new Error(scan.error.message)
  const src = createArrivals({ kind: 'trace-file', path, stats: scan.stats, timeScale }, 1)
  const out: ArrivalDraft[] = []
  const d: ArrivalDraft = { timeMs: 0, inputTokens: 0, outputTokens: 0 }
  while (src.next(d)) out.push({ ...d })
  return out
}

const stamp = (ms: number) =>
  new Date(Date.UTC(2023, 10, 16, 18) + ms).toISOString().replace('T', ' ').replace('Z', '')

describe('streamed trace files', () => {
  it('replays the same requests as the in-memory parser, with time scaling', () => {
    const rows = Array.from(
      { length: 5000 },
      (_, i) => `${stamp(i * 137.5)},${100 + (i % 17)},${1 + (i % 5)}`,
    )
    const text = `${HEADER}\r\n${rows.join('\r\n')}\r\n\r\n`
    const p = file('same.csv', text)
    const mem = parseAzureTrace(text)
    if (!mem.ok) throw new Error(mem.error.message)
    const streamed = replay(p, 2)
    expect(streamed).toHaveLength(5000)
    streamed.forEach((d, i) => {
      expect(d.timeMs).toBeCloseTo(mem.trace.arrivalMs[i]! / 2, 6)
      expect(d.inputTokens).toBe(mem.trace.inputTokens[i])
      expect(d.outputTokens).toBe(mem.trace.outputTokens[i])
    })
    const scan = scanTraceFile(p)
    expect(scan.ok && scan.stats).toMatchObject({ requests: 5000, startEpochMs: mem.trace.startEpochMs })
    expect(scan.ok && scan.stats.durationMs).toBeCloseTo(mem.trace.durationMs, 6)
    // 137.5 ms apart: 437 requests start in the first minute (0 … 59,950 ms), the busiest.
    expect(scan.ok && scan.stats.peakPerMinute).toBe(437)
  })

  it('puts rows out of order within the reorder window back in order', () => {
    const p = file('shuffled.csv', `${HEADER}\n${stamp(2000)},1,1\n${stamp(0)},2,2\n${stamp(1000)},3,3\n`)
    expect(replay(p).map((d) => [d.timeMs, d.inputTokens])).toEqual([
      [0, 2],
      [1000, 3],
      [2000, 1],
    ])
  })

  it('names the line of disorder beyond the window, and of malformed rows, without throwing', () => {
    const late = [`${stamp(10_000_000)},1,1`]
    for (let i = 0; i < TRACE_REORDER_ROWS + 5; i++) late.push(`${stamp(10_000_000 + i)},1,1`)
    late.push(`${stamp(0)},1,1`)
    const far = scanTraceFile(file('far.csv', `${HEADER}\n${late.join('\n')}\n`))
    expect(far.ok).toBe(false)
    expect(!far.ok && far.error.line).toBe(late.length + 1)
    expect(!far.ok && far.error.message).toMatch(/out of time order .* sort the file by TIMESTAMP/)
    const cases: Array<[string, number, string]> = [
      ['time,a,b\n', 1, 'expected header'],
      [`${HEADER}\n${stamp(0)},1,1\nnot-a-time,1,2\n`, 3, 'TIMESTAMP'],
      [`${HEADER}\n${stamp(0)},-3,44\n`, 2, 'ContextTokens'],
      [`${HEADER}\n`, 2, 'no requests'],
    ]
    cases.forEach(([text, line, message], i) => {
      const r = scanTraceFile(file(`bad${i}.csv`, text))
      expect(r.ok).toBe(false)
      if (r.ok) return
      expect(r.error.line).toBe(line)
      expect(r.error.message).toContain(message)
    })
  })

  it('refuses impossible dates and a row past the longest span, naming its line, in both parsers', () => {
    const first = '2023-11-16 18:15:46.68,374,44'
    const cases: Array<[string, string]> = [
      ['2023-13-45 99:99:99,10,10', 'TIMESTAMP: not a time'],
      ['2023-04-31 10:00:00,10,10', 'TIMESTAMP: not a time'],
      ['2023-11-16 24:00:00,10,10', 'TIMESTAMP: not a time'],
      // The same minute as the row before (the parser's fast path), with 60 seconds.
      ['2023-11-16 18:15:60.5,10,10', 'TIMESTAMP: not a time'],
      [
        '2099-11-16 18:15:50.0,10,10',
        'TIMESTAMP: 27759 days after the first row (2023-11-16T18:15:46.680Z, line 2)',
      ],
    ]
    cases.forEach(([row, message], i) => {
      const text = `${HEADER}\n${first}\n${row}\n2023-11-16 18:15:52.0,100,10\n`
      const scanned = scanTraceFile(file(`impossible${i}.csv`, text))
      const parsed = parseAzureTrace(text)
      for (const r of [scanned, parsed]) {
        expect(r.ok, row).toBe(false)
        if (r.ok) continue
        expect(r.error.line).toBe(3)
        expect(r.error.message).toContain(message)
      }
    })
    // 90 days is the limit, and a trace within it is read.
    expect(parseAzureTrace(`${HEADER}\n${first}\n2024-02-14 18:15:46.68,1,1\n`).ok).toBe(true)
  })

  it('reads a file whose last line has no newline and lines that straddle read chunks', () => {
    // ~1.5 MiB: crosses the 1 MiB read buffer.
    const rows = Array.from({ length: 40_000 }, (_, i) => `${stamp(i * 10)},${i % 1000},${i % 7}`)
    const p = file('big.csv', `${HEADER}\n${rows.join('\n')}`)
    const r = replay(p)
    expect(r).toHaveLength(40_000)
    expect(r[39_999]).toEqual({ timeMs: 399_990, inputTokens: 999, outputTokens: 39_999 % 7 })
  })

  it('streams the Azure conversation trace exactly as it parses in memory', () => {
    const shared = shippedTracePath()
    const mem = parseAzureTrace(readFileSync(shared, 'utf8'))
    if (!mem.ok) throw new Error(mem.error.message)
    const r = replay(shared)
    expect(r).toHaveLength(mem.trace.arrivalMs.length)
    for (let i = 0; i < r.length; i += 97) expect(r[i]!.timeMs).toBeCloseTo(mem.trace.arrivalMs[i]!, 6)
  })
})

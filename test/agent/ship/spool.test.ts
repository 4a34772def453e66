import { mkdtempSync, readdirSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openSpool } from '../../../agent/index.js'
import type { IntervalReport } from '../../../collector/index.js'

const report = (seq: number, instance = 'i-1', pad = 0): IntervalReport => ({
  version: 1,
  agent: { id: 'a', instance, node: 'n' },
  seq,
  intervalStartMs: 1_700_000_000_000 + seq * 5000,
  intervalEndMs: 1_700_000_005_000 + seq * 5000,
  series: [],
  dropped: { pad: pad },
})

const dirs: string[] = []
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'tg-spool-'))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('spool', () => {
  it('keeps reports on disk across a reopen, oldest first', async () => {
    const dir = tmp()
    const a = openSpool({ dir, maxBytes: 1 << 20 })
    for (const seq of [3, 1, 2]) await a.add(report(seq))
    a.remove(a.pending()[0]!.key)
    const b = openSpool({ dir, maxBytes: 1 << 20 })
    expect(b.pending().map((p) => p.report.seq)).toEqual([2, 3])
    expect(b.pending().map((p) => p.body)).toEqual(a.pending().map((p) => p.body))
    expect(b.bytes).toBe(a.bytes)
    expect(readdirSync(dir).filter((f) => f.endsWith('.json'))).toHaveLength(2)
  })

  it('writes and fsyncs off the event loop, and holds a report as pending only once it is on disk', async () => {
    const dir = tmp()
    const spool = openSpool({ dir, maxBytes: 1 << 20 })
    const adding = spool.add(report(1, 'i-1', 1e6))
    // add() returned before the file was written (a synchronous write would have it on disk by now). A timer
    // ticking meanwhile proved the same, but not on a fast disk, where writing 1 MB and fsyncing took under the
    // timer's 1 ms (a flaky test).
    expect(spool.size).toBe(0)
    expect(readdirSync(dir).filter((f) => f.endsWith('.json'))).toEqual([])
    await adding
    expect(spool.size).toBe(1)
    expect(readdirSync(dir)).toEqual([`${spool.pending()[0]!.key}.json`])
    expect(JSON.parse(spool.pending()[0]!.body)).toEqual(report(1, 'i-1', 1e6))
  })

  it('drops the oldest reports past its size bound and says how many', async () => {
    const spool = openSpool({ dir: null, maxBytes: 600 })
    let dropped = 0
    for (let seq = 1; seq <= 10; seq++) dropped += (await spool.add(report(seq))).dropped
    expect(dropped).toBeGreaterThan(0)
    expect(spool.bytes).toBeLessThanOrEqual(600)
    const seqs = spool.pending().map((p) => p.report.seq)
    expect(seqs[seqs.length - 1]).toBe(10)
    expect(seqs.length + dropped).toBe(10)
  })

  it('moves an unreadable spool file aside instead of failing', () => {
    const dir = tmp()
    writeFileSync(join(dir, 'broken.json'), '{not json')
    writeFileSync(join(dir, 'half-written.tmp'), '{')
    const corrupt: string[] = []
    const spool = openSpool({ dir, maxBytes: 1 << 20, onCorrupt: (f) => corrupt.push(f) })
    expect(spool.size).toBe(0)
    expect(corrupt).toHaveLength(1)
    expect(readdirSync(dir).sort()).toEqual(['broken.json.corrupt'])
  })
})

import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { AZURE_TRACE_ATTRIBUTION, createArrivals, parseAzureTrace } from '../../../controller/index.js'
import type { ArrivalDraft } from '../../../controller/index.js'
import { shippedTracePath } from '../../../controller/index.js'

const HEADER = 'TIMESTAMP,ContextTokens,GeneratedTokens'

describe('Azure LLM trace CSV', () => {
  it('parses offsets from the first request, tokens, CRLF and blank lines', () => {
    const r = parseAzureTrace(
      `${HEADER}\r\n2023-11-16 18:15:46.6805900,374,44\r\n\r\n2023-11-16 18:15:50.9951690,396,109\r\n`,
    )
    expect(r.ok).toBe(true)
    if (!r.ok) return
    expect(Array.from(r.trace.arrivalMs)).toEqual([0, expect.closeTo(4314.579, 3)])
    expect(Array.from(r.trace.inputTokens)).toEqual([374, 396])
    expect(Array.from(r.trace.outputTokens)).toEqual([44, 109])
    expect(r.trace.startEpochMs).toBe(Date.UTC(2023, 10, 16, 18, 15, 46) + 680.59)
  })

  it('finds columns by header name and sorts unsorted input', () => {
    const r = parseAzureTrace(
      'GeneratedTokens,TIMESTAMP,ContextTokens\n5,2023-11-16 18:00:02,10\n7,2023-11-16 18:00:01,20\n',
    )
    expect(r.ok && Array.from(r.trace.outputTokens)).toEqual([7, 5])
  })

  it.each([
    ['time,a,b\n', 1, 'expected header'],
    [`${HEADER}\n2023-11-16 18:15:46.68,374,44\nnot-a-time,1,2\n`, 3, 'TIMESTAMP'],
    [`${HEADER}\n2023-11-16 18:15:46.68,374\n`, 2, 'expected 3 fields'],
    [`${HEADER}\n2023-11-16 18:15:46.68,-3,44\n`, 2, 'ContextTokens'],
    [`${HEADER}\n2023-11-16 18:15:46.68,3,4.5\n`, 2, 'GeneratedTokens'],
    [`${HEADER}\n`, 2, 'no requests'],
  ])('reports the line of a malformed input (%#)', (text, line, message) => {
    const r = parseAzureTrace(text)
    expect(r.ok).toBe(false)
    if (r.ok) return
    expect(r.error.line).toBe(line)
    expect(r.error.message).toContain(message)
  })

  it('replays with time scaling', () => {
    const r = parseAzureTrace(`${HEADER}\n2023-11-16 18:00:00,1,1\n2023-11-16 18:00:10,1,1\n`)
    if (!r.ok) throw new Error(r.error.message)
    const src = createArrivals({ kind: 'trace', trace: r.trace, timeScale: 2 }, 1)
    const d: ArrivalDraft = { timeMs: 0, inputTokens: 0, outputTokens: 0 }
    const times: number[] = []
    while (src.next(d)) times.push(d.timeMs)
    expect(times).toEqual([0, 5000])
  })

  const path = shippedTracePath()
  it('reads the shipped Azure conversation trace (one hour)', () => {
    const r = parseAzureTrace(readFileSync(path, 'utf8'))
    expect(r.ok).toBe(true)
    if (!r.ok) return
    expect(r.trace.arrivalMs.length).toBeGreaterThan(19_000)
    expect(r.trace.durationMs).toBeGreaterThan(55 * 60_000)
    expect(r.trace.durationMs).toBeLessThan(60 * 60_000)
    expect(AZURE_TRACE_ATTRIBUTION).toContain('CC-BY 4.0')
  })
})

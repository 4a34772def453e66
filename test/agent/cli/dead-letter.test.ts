import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDeadLetter } from '../../../agent/index.js'
import { CLI, api, assertBuilt, runToEnd, spawnCli } from '../../helpers/cli.js'
import { useTempDirs } from '../../helpers/temp-dirs.js'
import type { CliProcess } from '../../helpers/cli.js'
import { freePort } from '../../helpers/ports.js'
import { makeReport } from '../../helpers/reports.js'

// `tailguard dead-letter list|replay` against a real `tailguard collector` process: reports the collector
// once refused are sent again, delivered ones deleted, ones refused again kept, and a report replayed twice
// is stored once (the collector knows its agent instance and seq).

const API = 'api-token-dead-letter-0123456789'
const AGENT = 'agent-token-dead-letter-0123456789'
const tempDir = useTempDirs('tg-dead-letter-')

let collector: CliProcess
let base: string
beforeAll(async () => {
  assertBuilt()
  const port = await freePort()
  collector = spawnCli(
    ['collector', '--port', String(port), '--db', join(tempDir(), 'tg.db'), '--log-level', 'warn'],
    { TAILGUARD_API_TOKEN: API, TAILGUARD_AGENT_TOKEN: AGENT },
  )
  await collector.waitFor(/listening on http/)
  base = `http://127.0.0.1:${port}`
})
afterAll(() => collector?.kill('SIGTERM'))

const deadLetter = (...args: string[]) =>
  runToEnd(process.execPath, [CLI, 'dead-letter', ...args], { env: { TAILGUARD_AGENT_TOKEN: AGENT } })

describe('tailguard dead-letter', () => {
  it('lists, then replays: stores a fixed report once, keeps what is refused again, skips set-aside series', async () => {
    const dir = tempDir()
    const box = openDeadLetter({ dir, maxFiles: 100 })
    const startMs = Date.now() - 60_000
    const good = makeReport({
      instance: 'dl-1',
      seq: 7,
      startMs,
      series: [
        {
          labels: { service: 'dl' },
          ok: 40,
          samples: { total: Array.from({ length: 40 }, (_, i) => 1000 + i) },
        },
      ],
    })
    // Refused once (say, by a collector with a lower limit); valid for this one. Twice: a second copy is a
    // retry of the same (instance, seq), which must not count twice.
    box.add({ atMs: startMs, status: 422, reason: 'over the series limit', payload: good })
    box.add({ atMs: startMs + 1, status: 422, reason: 'over the series limit', payload: good })
    // Still bad: its interval ends before it starts.
    const bad = {
      ...makeReport({ instance: 'dl-1', seq: 8, startMs, series: [] }),
      intervalEndMs: startMs - 1,
    }
    box.add({
      atMs: startMs + 2,
      status: 400,
      reason: 'intervalEndMs is before intervalStartMs',
      payload: bad,
    })
    // A series the agent set aside as malformed: listed, never replayed.
    box.add({
      atMs: startMs + 3,
      status: 0,
      reason: 'series/labels/service: empty',
      payload: { series: { labels: { service: '' } } },
    })
    writeFileSync(join(dir, 'zzz-broken.json'), '{ not json')

    const listed = await deadLetter('list', '--dir', dir)
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain('5 dead letter(s)')
    expect(listed.stdout).toMatch(
      /report seq 7 of agent agent, 1 series, refused with HTTP 422: over the series limit/,
    )
    expect(listed.stdout).toMatch(/set aside by the agent: series\/labels\/service: empty/)
    expect(listed.stdout).toMatch(/zzz-broken\.json {2}unreadable: not readable as JSON/)
    const json = JSON.parse((await deadLetter('list', '--dir', dir, '--json')).stdout) as Array<{
      kind?: string
    }>
    expect(json.map((j) => j.kind)).toEqual(['report', 'report', 'report', 'series', undefined])

    const r = await deadLetter('replay', '--dir', dir, '--collector', base)
    expect(r.stdout).toContain('replaying 3 report(s)')
    expect(r.stdout).toMatch(/\[1\/3\] report seq 7 .*: stored/)
    expect(r.stdout).toMatch(/\[2\/3\] report seq 7 .*: already stored/)
    expect(r.stdout).toMatch(/\[3\/3\] report seq 8 .*: refused again, kept \(HTTP 400: intervalEndMs/)
    expect(r.stdout).toMatch(
      /done: 1 stored, 1 already stored, 1 refused again and kept; 2 file\(s\) not replayed/,
    )
    expect(r.stderr).toMatch(/1 report\(s\) refused again/)
    expect(r.code).toBe(1)
    // Kept: the bad report, the series, the broken file. Stored once: 40 requests, not 80.
    expect(readdirSync(dir).filter((f) => f.endsWith('.json'))).toHaveLength(3)
    const counts = await api<{ count: number }>(base, '/api/v1/latency?service=dl&from=-1h', API)
    expect(counts.status).toBe(200)
    expect(counts.body.count).toBe(40)
  }, 60_000)

  it('stops on a refused token or an absent collector, keeping every letter', async () => {
    const dir = tempDir()
    const box = openDeadLetter({ dir, maxFiles: 100 })
    const report = makeReport({ instance: 'dl-2', seq: 1, startMs: Date.now() - 30_000, series: [{ ok: 1 }] })
    box.add({ atMs: Date.now(), status: 422, reason: 'x', payload: report })

    const wrong = await runToEnd(
      process.execPath,
      [CLI, 'dead-letter', 'replay', '--dir', dir, '--collector', base],
      {
        env: { TAILGUARD_AGENT_TOKEN: 'wrong-token-0123456789abcdef' },
      },
    )
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toMatch(/refused the token \(HTTP 401.*check TAILGUARD_AGENT_TOKEN/)

    const gone = await deadLetter(
      'replay',
      '--dir',
      dir,
      '--collector',
      `http://127.0.0.1:${await freePort()}`,
    )
    expect(gone.code).toBe(1)
    expect(gone.stderr).toMatch(/is not answering .* 0 of 1 delivered, the rest kept/)

    const noToken = await runToEnd(
      process.execPath,
      [CLI, 'dead-letter', 'replay', '--dir', dir, '--collector', base],
      {
        env: { TAILGUARD_AGENT_TOKEN: '' },
      },
    )
    expect(noToken.code).toBe(2)
    expect(noToken.stderr).toMatch(/set TAILGUARD_AGENT_TOKEN/)
    expect(readdirSync(dir).filter((f) => f.endsWith('.json'))).toHaveLength(1)
  }, 60_000)

  it('reads an empty or absent folder as no letters', async () => {
    const dir = join(tempDir(), 'nothing-here')
    const r = await deadLetter('list', '--dir', dir)
    expect(r).toMatchObject({ code: 0 })
    expect(r.stdout).toContain('no dead letters in')
    expect(existsSync(dir)).toBe(false)
  })
})

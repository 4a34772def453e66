import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../../collector/app.js'
import { createStore } from '../../../collector/index.js'
import type { CliIO, Store } from '../../../collector/index.js'
import { createWhatifRoutes, shippedTracePath, WHATIF_MAX_REQUESTS } from '../../../controller/index.js'
import type { SimResult, WhatifAnswer } from '../../../controller/index.js'
import { run } from '../../../bin/tailguard.js'

const ADMIN = 'admin-token-0123456789abcdef'
const READ = 'read-token-0123456789abcdef'
const dir = mkdtempSync(join(tmpdir(), 'tg-whatif-'))
let store: Store
let app: FastifyInstance

beforeAll(async () => {
  store = await createStore({ url: join(dir, 'w.db') })
  await store.migrate()
  app = await buildCollector(
    {
      tokens: [
        { token: ADMIN, scope: 'admin' },
        { token: READ, scope: 'read' },
      ],
      reportBodyLimitBytes: 1 << 20,
      bodyLimitBytes: 64 * 1024,
    },
    { store, plugins: [createWhatifRoutes()] },
  )
})
afterAll(async () => {
  await app.close()
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

const post = (body: unknown, token = ADMIN) =>
  app.inject({
    method: 'POST',
    url: '/api/v1/whatif',
    headers: { authorization: `Bearer ${token}` },
    payload: body as object,
  })

/** `tailguard sim … --json` in process: the CLI's numbers for the same input. */
async function cliJson(args: string[]): Promise<Array<{ results: SimResult[] }>> {
  const stdout: string[] = []
  const io: CliIO = { isTTY: false, out: (l) => void stdout.push(l), err: () => {}, errRaw: () => {} }
  const code = await run(['node', 'tailguard', 'sim', ...args, '--json', '--no-progress'], io)
  expect(code).toBe(0)
  return JSON.parse(stdout.join('\n'))
}

function expectSameAsCli(answer: WhatifAnswer, cli: readonly SimResult[]): void {
  expect(answer.results.map((r) => r.policy)).toEqual(cli.map((r) => r.policy))
  answer.results.forEach((r, i) => {
    const c = cli[i]!
    expect(r.arrived).toBe(c.arrived)
    expect(r.attainment).toBe(c.attainment.overall)
    expect(r.p99Ms).toBe(c.latencyMs.e2e.p99)
    expect(r.p50Ms).toBe(c.latencyMs.e2e.p50)
    expect(r.gpuHours).toBe(c.gpuHours)
    expect(r.replicaChanges).toBe(c.scalingActions)
    expect(r.shed).toBe(c.shed)
    expect(r.sloViolationMinutes).toBe(c.sloViolationMinutes)
    expect(answer.timeline.series[i]!.replicas).toEqual(c.timeline.replicas)
  })
}

describe('POST /api/v1/whatif', () => {
  it('needs an admin token: none is 401, a read token is 403', async () => {
    const body = {
      workload: { kind: 'pattern', pattern: 'poisson', rps: 10, durationS: 60 },
      policies: ['static'],
    }
    expect((await app.inject({ method: 'POST', url: '/api/v1/whatif', payload: body })).statusCode).toBe(401)
    const res = await post(body, READ)
    expect(res.statusCode).toBe(403)
    expect(res.json().code).toBe('TG_ERR_FORBIDDEN')
  })

  it.each([
    [
      { workload: { kind: 'pattern', pattern: 'sawtooth', rps: 10, durationS: 60 }, policies: ['static'] },
      'workload',
    ],
    [
      { workload: { kind: 'pattern', pattern: 'step', rps: -1, durationS: 60 }, policies: ['static'] },
      'workload',
    ],
    [
      { workload: { kind: 'pattern', pattern: 'step', rps: 10, durationS: 60 }, policies: ['nope'] },
      'policies',
    ],
    [{ workload: { kind: 'pattern', pattern: 'step', rps: 10, durationS: 60 }, policies: [] }, 'policies'],
    [
      {
        workload: { kind: 'pattern', pattern: 'step', rps: 10, durationS: 60 },
        policies: ['static'],
        sloP99Ms: 0,
      },
      'sloP99Ms',
    ],
    [
      {
        workload: { kind: 'pattern', pattern: 'step', rps: 10, durationS: 60 },
        policies: ['static'],
        objective: 1,
      },
      'objective',
    ],
    [{ policies: ['static'] }, 'workload'],
  ])('bad input is a 400 naming the field (%#)', async (body, field) => {
    const res = await post(body)
    expect(res.statusCode).toBe(400)
    expect(res.json().code).toBe('TG_ERR_BAD_REQUEST')
    expect(res.json().message).toContain(field)
  })

  it('refuses more work than its limits before running anything', async () => {
    const res = await post({
      workload: { kind: 'pattern', pattern: 'poisson', rps: 1000, durationS: 3600 },
      policies: ['static'],
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().message).toMatch(/^workload\.rps: .*limit is 300,000/)
    expect(WHATIF_MAX_REQUESTS).toBe(300_000)
    const tooLong = await post({
      workload: { kind: 'pattern', pattern: 'poisson', rps: 1, durationS: 7 * 3600 },
      policies: ['static'],
    })
    expect(tooLong.statusCode).toBe(400)
    expect(tooLong.json().message).toContain('durationS')
  })

  it('a bad trace CSV is a 400 with its line', async () => {
    const res = await post({
      workload: {
        kind: 'trace',
        csv: 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,x\n',
      },
      policies: ['static'],
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().message).toMatch(/^workload\.csv: line 2: /)
  })

  it('a pattern run answers the same numbers as `tailguard sim` for the same input', async () => {
    const t0 = performance.now()
    const res = await post({
      workload: { kind: 'pattern', pattern: 'step', rps: 40, durationS: 600 },
      policies: ['static', 'hpa', 'aimd'],
      sloP99Ms: 50,
      seed: 7,
    })
    const wall = performance.now() - t0
    expect(res.statusCode).toBe(200)
    const answer = res.json() as WhatifAnswer
    const [cli] = await cliJson([
      '--pattern',
      'step',
      '--rps',
      '40',
      '--duration',
      '600',
      '--policy',
      'static,hpa,aimd',
      '--slo-p99-ms',
      '50',
      '--seed',
      '7',
    ])
    expectSameAsCli(answer, cli!.results)
    expect(answer.timeline.minute.length).toBe(10)
    expect(answer.simulatedRequests).toBe(answer.results.reduce((n, r) => n + r.arrived, 0))
    // Identical series are named, not hidden: each group lists policies whose replica and p99 lines coincide.
    for (const g of answer.coincide) {
      const series = g.map((p) => answer.timeline.series.find((s) => s.policy === p)!)
      for (const s of series) expect(s.replicas).toEqual(series[0]!.replicas)
    }
    console.log(
      `what-if step 40 req/s × 600 s × 3 policies: ${wall.toFixed(0)} ms wall, ${answer.elapsedMs.toFixed(0)} ms simulating`,
    )
  })

  it('an uploaded trace answers the same numbers as `tailguard sim --trace` on that file', async () => {
    const csv = readFileSync(shippedTracePath(), 'utf8').split('\n').slice(0, 801).join('\n') + '\n'
    const file = join(dir, 'small.csv')
    writeFileSync(file, csv)
    const res = await post({ workload: { kind: 'trace', csv, timeScale: 2 }, policies: ['static', 'keda'] })
    expect(res.statusCode).toBe(200)
    const answer = res.json() as WhatifAnswer
    expect(answer.results[0]!.arrived).toBe(800)
    const [cli] = await cliJson(['--trace', file, '--time-scale', '2', '--policy', 'static,keda'])
    expectSameAsCli(answer, cli!.results)
  })

  it('runs one what-if at a time: a second one meanwhile is 429', async () => {
    const body = {
      workload: { kind: 'pattern', pattern: 'poisson', rps: 100, durationS: 1200 },
      policies: ['static'],
    }
    const [a, b] = await Promise.all([post(body), post(body)])
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 429])
    expect((a.statusCode === 429 ? a : b).json().code).toBe('TG_ERR_WHATIF_BUSY')
  })

  it('stops a run past its time limit: 503 TG_ERR_WHATIF_TIMEOUT, and the next run is served', async () => {
    const slow = await buildCollector(
      {
        tokens: [{ token: ADMIN, scope: 'admin' }],
        reportBodyLimitBytes: 1 << 20,
        bodyLimitBytes: 64 * 1024,
      },
      { store, plugins: [createWhatifRoutes({ timeoutMs: 50 })] },
    )
    try {
      const body = {
        workload: { kind: 'pattern', pattern: 'poisson', rps: 200, durationS: 1200 },
        policies: ['static', 'hpa', 'keda'],
      }
      const res = await slow.inject({
        method: 'POST',
        url: '/api/v1/whatif',
        headers: { authorization: `Bearer ${ADMIN}` },
        payload: body,
      })
      expect(res.statusCode).toBe(503)
      expect(res.json().code).toBe('TG_ERR_WHATIF_TIMEOUT')
      // The limit freed the slot: another run is not refused as busy.
      const again = await slow.inject({
        method: 'POST',
        url: '/api/v1/whatif',
        headers: { authorization: `Bearer ${ADMIN}` },
        payload: { ...body, workload: { ...body.workload, durationS: 1 } },
      })
      expect(again.json().code).not.toBe('TG_ERR_WHATIF_BUSY')
    } finally {
      await slow.close()
    }
  })
})

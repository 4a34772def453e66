// Ingest workers (collector/ingest): a report body prepared on a worker thread gets the answer it gets when
// prepared on the collector's thread, whatever the body; a worker that dies fails only what it held.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { seededRandom } from '../../../agent/demo/fleet.js'
import { buildCollector } from '../../../collector/app.js'
import { createStore } from '../../../collector/index.js'
import type { Store } from '../../../collector/index.js'
import { prepareBody } from '../../../collector/ingest/body.js'
import { IngestPool, resolveIngestWorkers } from '../../../collector/ingest/pool.js'
import { packageRoot } from '../../../collector/paths.js'
import { assertBuilt, spawnCli } from '../../helpers/cli.js'
import { freePort } from '../../helpers/ports.js'
import { AGENT, HOSTILE_NOW, hostileReport, mutateJsonText } from '../../helpers/hostile.js'
import { latenciesUs, makeReport, rng } from '../../helpers/reports.js'

/** The compiled worker (`npm test` builds it first): a worker thread cannot load the TypeScript sources. */
const WORKER = pathToFileURL(join(packageRoot(), 'dist', 'collector', 'ingest', 'worker.js'))

interface Side {
  readonly app: FastifyInstance
  readonly store: Store
}

async function side(dir: string, name: string, pool: IngestPool | undefined): Promise<Side> {
  const store = await createStore({ url: `sqlite:${join(dir, `${name}.db`)}` })
  const app = await buildCollector(
    { tokens: [{ token: AGENT, scope: 'agent' }], reportBodyLimitBytes: 8 << 20, bodyLimitBytes: 1 << 20 },
    { store, clock: () => HOSTILE_NOW, ...(pool ? { ingestPool: pool } : {}) },
  )
  return { app, store }
}

const post = (s: Side, payload: string, contentType = 'application/json') =>
  s.app.inject({
    method: 'POST',
    url: '/api/v1/reports',
    headers: { authorization: `Bearer ${AGENT}`, 'content-type': contentType },
    payload,
  })

describe('ingest workers', () => {
  let dir: string
  let inPlace: Side
  let onWorker: Side
  beforeAll(async () => {
    assertBuilt()
    dir = mkdtempSync(join(tmpdir(), 'tg-ingest-pool-'))
    inPlace = await side(dir, 'in-place', undefined)
    // Every body goes to a worker, however small.
    const pool = new IngestPool({ threads: 2, minBytes: 0, workerUrl: WORKER })
    expect(pool.threads).toBe(2)
    onWorker = await side(dir, 'worker', pool)
  })
  afterAll(async () => {
    for (const s of [inPlace, onWorker]) {
      await s.app.close()
      await s.store.close()
    }
    rmSync(dir, { recursive: true, force: true })
  })

  it('answers 3,000 mutated report bodies exactly as the collector thread does, and counts the same', async () => {
    const rand = seededRandom(20261127)
    const statuses = new Set<number>()
    const bodies = [
      '',
      '{',
      'null',
      '[]',
      '{"__proto__":{"x":1}}',
      '{"constructor":{"prototype":{"x":1}}}',
      '\ufeff' + JSON.stringify(hostileReport(1, 'bom')),
      ...Array.from({ length: 3000 }, (_, i) =>
        mutateJsonText(JSON.stringify(hostileReport(10 + i, 'mutated', 'fuzzed')), rand),
      ),
    ]
    for (const [i, text] of bodies.entries()) {
      const [a, b] = await Promise.all([post(inPlace, text), post(onWorker, text)])
      expect({ status: b.statusCode, body: b.json() }, `body ${i}: ${text.slice(0, 160)}`).toEqual({
        status: a.statusCode,
        body: a.json(),
      })
      statuses.add(a.statusCode)
    }
    // The mutations reach both outcomes.
    expect([...statuses].sort()).toEqual([200, 400])
    const all = { fromMs: 0, toMs: HOSTILE_NOW + 3_600_000 }
    expect(await onWorker.store.counts({ service: 'fuzzed' }, all)).toEqual(
      await inPlace.store.counts({ service: 'fuzzed' }, all),
    )
  }, 120_000)

  it('stores a 5,000-series report prepared on a worker as the one prepared in place', async () => {
    const next = rng(3)
    const report = makeReport({
      instance: 'large',
      seq: 1,
      startMs: HOSTILE_NOW - 60_000,
      series: Array.from({ length: 5000 }, (_, i) => ({
        labels: { service: `svc${i % 5}`, replica: `r${i}` },
        samples: { total: latenciesUs(next, 10, 40_000), queue: latenciesUs(next, 10, 2000) },
        ok: 10,
        error: i % 7 === 0 ? 1 : 0,
        errorClasses: (i % 7 === 0 ? { timeout: 1 } : {}) as Record<string, number>,
      })),
    })
    const text = JSON.stringify(report)
    expect((await post(onWorker, text)).json()).toEqual({ status: 'stored', seq: 1 })
    expect((await post(inPlace, text)).json()).toEqual({ status: 'stored', seq: 1 })
    expect((await post(onWorker, text)).json()).toEqual({ status: 'duplicate', seq: 1 })
    const all = { fromMs: 0, toMs: HOSTILE_NOW + 3_600_000 }
    for (const service of ['svc0', 'svc3']) {
      expect(await onWorker.store.counts({ service }, all)).toEqual(
        await inPlace.store.counts({ service }, all),
      )
      const [a, b] = await Promise.all(
        [inPlace, onWorker].map((s) => s.store.histograms({ service }, all, ['total', 'queue'])),
      )
      expect(b!.get('total')!.totalCount).toBe(10_000)
      for (const m of ['total', 'queue'] as const)
        expect(b!.get(m)!.getValueAtPercentile(99)).toBe(a!.get(m)!.getValueAtPercentile(99))
    }
    expect((await onWorker.store.services()).filter((s) => s.service === 'svc2').length).toBe(1000)
  }, 60_000)

  it("copies a small body out of Node's shared Buffer pool instead of moving the pool", async () => {
    const pool = new IngestPool({ threads: 1, minBytes: 0, workerUrl: WORKER })
    try {
      const neighbour = Buffer.from('a neighbour in the same pool')
      const body = Buffer.from(JSON.stringify(hostileReport(1)))
      expect(body.buffer).toBe(neighbour.buffer)
      expect((await pool.prepare(body, HOSTILE_NOW, 10_000)).ok).toBe(true)
      expect(neighbour.toString()).toBe('a neighbour in the same pool')
      expect(JSON.parse(body.toString()).seq).toBe(1)
    } finally {
      await pool.close()
    }
  })

  it('fails what a dying worker held, replaces it, and stops replacing one that dies as it starts', async () => {
    const crashDir = mkdtempSync(join(tmpdir(), 'tg-ingest-crash-'))
    // A worker that dies on its first job, and one that cannot even load.
    const crash = join(crashDir, 'crash.mjs')
    writeFileSync(
      crash,
      "import { parentPort } from 'node:worker_threads'\nparentPort.on('message', () => process.exit(3))\n",
    )
    const broken = join(crashDir, 'broken.mjs')
    writeFileSync(broken, "throw new Error('cannot load')\n")
    const body = () => Buffer.from(JSON.stringify(hostileReport(1)))
    // How long a worker must live to be replaced is set per pool, so that neither case hangs on how fast this
    // machine loads a worker: 0 (every death is past it) and a minute (every death here is before it).
    const replacing = new IngestPool({
      threads: 1,
      minBytes: 0,
      workerUrl: pathToFileURL(crash),
      eager: true,
      minWorkerLifeMs: 0,
    })
    const young = new IngestPool({
      threads: 1,
      minBytes: 0,
      workerUrl: pathToFileURL(crash),
      eager: true,
      minWorkerLifeMs: 60_000,
    })
    try {
      // A worker that dies is replaced, and fails what it held.
      await expect(replacing.prepare(body(), HOSTILE_NOW, 10_000)).rejects.toThrow(
        /ingest worker exited \(code 3\)/,
      )
      expect(replacing.running).toBe(1)
      await expect(replacing.prepare(body(), HOSTILE_NOW, 10_000)).rejects.toThrow(/exited/)
      expect(replacing.running).toBe(1)
      // One that dies as it starts is not replaced; bodies are then prepared in place.
      await expect(young.prepare(body(), HOSTILE_NOW, 10_000)).rejects.toThrow(/exited/)
      expect(young.running).toBe(0)
      expect((await young.prepare(body(), HOSTILE_NOW, 10_000)).ok).toBe(true)
      // Workers that cannot load die as they start and are not started again.
      const unloadable = new IngestPool({
        threads: 2,
        minBytes: 0,
        workerUrl: pathToFileURL(broken),
        eager: true,
        minWorkerLifeMs: 60_000,
      })
      await expect.poll(() => unloadable.running, { timeout: 15_000 }).toBe(0)
      expect((await unloadable.prepare(body(), HOSTILE_NOW, 10_000)).ok).toBe(true)
      await unloadable.close()
      // Bodies under the size floor never reach a worker.
      const small = new IngestPool({ threads: 1, minBytes: 1 << 20, workerUrl: pathToFileURL(crash) })
      expect((await small.prepare(body(), HOSTILE_NOW, 10_000)).ok).toBe(true)
      await small.close()
    } finally {
      await replacing.close()
      await young.close()
      rmSync(crashDir, { recursive: true, force: true })
    }
  })

  it('prepares in place when there is no compiled worker (the project run from its sources)', async () => {
    const pool = new IngestPool({
      threads: 2,
      minBytes: 0,
      workerUrl: new URL('file:///nonexistent/worker.js'),
    })
    expect(pool.threads).toBe(0)
    const answer = await pool.prepare(Buffer.from('{'), HOSTILE_NOW, 10_000)
    expect(answer).toEqual({ ok: false, problem: { kind: 'invalid-json' } })
    await pool.close()
  })

  it('starts its workers with the first large body, not before', async () => {
    const pool = new IngestPool({ threads: 2, minBytes: 4096, workerUrl: WORKER })
    try {
      expect(pool.running).toBe(0)
      const small = Buffer.from(JSON.stringify(hostileReport(1)))
      expect(small.length).toBeLessThan(4096)
      expect((await pool.prepare(small, HOSTILE_NOW, 10_000)).ok).toBe(true)
      expect(pool.running).toBe(0)
      const next = rng(11)
      const text = JSON.stringify(
        makeReport({
          instance: 'lazy',
          seq: 2,
          startMs: HOSTILE_NOW - 60_000,
          series: Array.from({ length: 40 }, (_, i) => ({
            labels: { service: 'lazy', replica: `r${i}` },
            samples: { total: latenciesUs(next, 20, 40_000) },
            ok: 20,
          })),
        }),
      )
      expect(text.length).toBeGreaterThan(4096)
      const inPlace = prepareBody(Buffer.from(text), HOSTILE_NOW, 10_000)
      const answer = await pool.prepare(Buffer.from(text), HOSTILE_NOW, 10_000)
      expect(pool.running).toBe(2)
      expect(answer.ok).toBe(true)
      expect(answer).toEqual(inPlace)
    } finally {
      await pool.close()
    }
  })

  it("takes 'auto' as up to 4 workers leaving 2 cores, none below 4 cores", () => {
    expect([1, 2, 3, 4, 5, 6, 8, 16, 64].map((cores) => resolveIngestWorkers('auto', cores))).toEqual([
      0, 0, 0, 2, 3, 4, 4, 4, 4,
    ])
    expect(resolveIngestWorkers(0, 16)).toBe(0)
    expect(resolveIngestWorkers(7, 2)).toBe(7)
  })

  it('tailguard collector --ingest-workers 2 starts two workers and stores a large report through them', async () => {
    const port = await freePort()
    const cli = spawnCli(
      ['collector', '--port', String(port), '--db', join(dir, 'cli.db'), '--ingest-workers', '2'],
      { TAILGUARD_AGENT_TOKEN: AGENT, TAILGUARD_API_TOKEN: 'api-token-ingest-workers-0123' },
    )
    try {
      await cli.waitFor(/listening on http/, 30_000)
      await cli.waitFor(/ingest workers: 2\b/)
      const next = rng(5)
      const report = makeReport({
        instance: 'cli-large',
        seq: 1,
        startMs: Date.now() - 60_000,
        series: Array.from({ length: 2000 }, (_, i) => ({
          labels: { service: 'cli-svc', replica: `r${i}` },
          samples: { total: latenciesUs(next, 10, 40_000) },
          ok: 10,
        })),
      })
      const body = JSON.stringify(report)
      // Over the 256 KiB floor: the body goes to a worker.
      expect(body.length).toBeGreaterThan(256 * 1024)
      const send = (text: string) =>
        fetch(`http://127.0.0.1:${port}/api/v1/reports`, {
          method: 'POST',
          headers: { authorization: `Bearer ${AGENT}`, 'content-type': 'application/json' },
          body: text,
        }).then(async (r) => ({ status: r.status, body: await r.json() }))
      expect(await send(body)).toEqual({ status: 200, body: { status: 'stored', seq: 1 } })
      expect(await send(body)).toEqual({ status: 200, body: { status: 'duplicate', seq: 1 } })
      expect((await send(body.slice(0, body.length - 10))).status).toBe(400)
    } finally {
      expect(await cli.kill()).toBe(0)
    }
  }, 60_000)
})

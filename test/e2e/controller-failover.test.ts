import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { DecisionRecord } from '../../collector/index.js'
import {
  createControllerStore,
  createStore,
  SIGNATURE_HEADER,
  verifySignature,
} from '../../collector/index.js'
import { spawnCli } from '../helpers/cli.js'
import type { CliProcess } from '../helpers/cli.js'
import { startServer } from '../helpers/contract-servers.js'
import { tempPgDatabase } from '../helpers/pg.js'
import { makeReport } from '../helpers/reports.js'

// 4 s rather than 2: the takeover bound (lease TTL 1.5 intervals + a quarter-interval round) leaves a quarter of an
// interval of slack for scheduling (500 ms at 2 s, which a loaded 2-core runner ate once in four runs).
const INTERVAL_MS = 4000
const SECRET = 'failover-webhook-secret-0123'
const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

// Acceptance of issue #15: kill -9 of the active controller on PostgreSQL; a standby takes over within
// 2 intervals, and no action is applied twice (fencing).
describe('postgres: two tailguard controller processes, the leader killed with SIGKILL', () => {
  it('the standby takes over within 2 intervals and continues from the stored setpoints, applying nothing twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-failover-'))
    dirs.push(dir)
    const pgdb = await tempPgDatabase()
    const store = await createStore({ url: pgdb.url })
    await store.migrate()
    // The actuator: a signed webhook that moves the batcher; it records what each decision asked for.
    const applied: Array<{ decisionId: number; fencingToken: number; maxBatch: number; at: number }> = []
    const hook = await startServer((r, res) => {
      const ok = verifySignature(SECRET, r.headers[SIGNATURE_HEADER] as string, r.body, Date.now() / 1000)
      if (ok) {
        const b = JSON.parse(r.body) as {
          decisionId: number
          fencingToken: number
          change: { batching: { maxBatch: number } }
        }
        applied.push({
          decisionId: b.decisionId,
          fencingToken: b.fencingToken,
          maxBatch: b.change.batching.maxBatch,
          at: Date.now(),
        })
      }
      // Answer a little late, as a real actuator would: the hook has seen a decision before its controller can
      // mark it applied.
      setTimeout(() => {
        res.writeHead(ok ? 204 : 401)
        res.end()
      }, 150)
    })
    const cfgFile = join(dir, 'tailguard.yaml')
    writeFileSync(
      cfgFile,
      `controller:
  intervalMs: ${INTERVAL_MS}
controllers:
  - name: chat
    service: chat
    slos: []
    objective: { thresholdMs: 100 }
    mode: enforce
    policy: aimd
    knobs: [batching]
    bounds: { minReplicas: 1, maxReplicas: 4 }
    initial: { replicas: 1, windowMs: 5, maxBatch: 32, admission: [{ maxQueue: 64, maxConcurrency: 16 }] }
    actuators:
      - type: webhook
        url: ${hook.url}/batching
        secret: ${SECRET}
`,
    )
    // Fresh reports every second: the batch service time (kernel) p99 is 200 ms, over the 100 ms objective,
    // so AIMD cuts the max batch by 10% every interval: 32 → 28 → 25 → 22 → 19 → 17 → …
    let seq = 1
    const feed = setInterval(() => {
      const now = Date.now()
      void store.ingest(
        makeReport({
          seq: seq++,
          startMs: now - 1000,
          series: [
            {
              labels: { service: 'chat' },
              samples: { kernel: Array(20).fill(200_000), total: Array(20).fill(250_000) },
              ok: 20,
            },
          ],
        }),
        now,
      )
    }, 1000)
    const procs: CliProcess[] = []
    try {
      const start = (holder: string) => {
        const p = spawnCli([
          'controller',
          '-c',
          cfgFile,
          '--db',
          pgdb.url,
          '--holder',
          holder,
          '--log-level',
          'warn',
        ])
        procs.push(p)
        return p
      }
      const a = start('ctl-a')
      await a.waitFor(/tailguard controller ctl-a: 1 target/)
      const cs = createControllerStore(store)
      await expect
        .poll(async () => (await cs.get('chat'))?.leaseHolder, { timeout: 30_000, interval: 200 })
        .toBe('ctl-a')
      const b = start('ctl-b')
      await b.waitFor(/tailguard controller ctl-b: 1 target/)
      await expect.poll(() => applied.length, { timeout: 40_000, interval: 200 }).toBeGreaterThanOrEqual(3)
      a.child.kill('SIGKILL')
      const killedAt = Date.now()
      await a.exited
      await expect
        .poll(async () => (await cs.get('chat'))?.leaseHolder, { timeout: 20_000, interval: 100 })
        .toBe('ctl-b')
      // When b took the lease: it set the expiry to (its clock at acquisition) + the TTL of 1.5 intervals; the
      // first expiry b wrote is the takeover time (read before b renews, within half an interval).
      const row = (await cs.get('chat'))!
      const takeoverMs = row.leaseExpiresMs - 1.5 * INTERVAL_MS - killedAt
      expect(takeoverMs, `standby took over ${takeoverMs} ms after the kill`).toBeLessThanOrEqual(
        2 * INTERVAL_MS,
      )
      const before = applied.length
      await expect
        .poll(() => applied.length, { timeout: 30_000, interval: 200 })
        .toBeGreaterThanOrEqual(before + 2)

      // No action applied twice: the max batch falls strictly, one step per decision, across the takeover;
      // each decision reached the actuator once; tokens never go down, and the new leader has a higher one.
      const seqOfBatches = applied.map((x) => x.maxBatch)
      for (let i = 1; i < seqOfBatches.length; i++)
        expect(seqOfBatches[i]!).toBeLessThan(seqOfBatches[i - 1]!)
      expect(new Set(applied.map((x) => x.decisionId)).size).toBe(applied.length)
      for (let i = 1; i < applied.length; i++)
        expect(applied[i]!.fencingToken).toBeGreaterThanOrEqual(applied[i - 1]!.fencingToken)
      expect(applied.at(-1)!.fencingToken).toBeGreaterThan(applied[0]!.fencingToken)
      // A controller records "applied" once the webhook has answered, so the decision the hook saw last may not be
      // marked yet: wait for it. Only the killed leader may leave one it sent unmarked (killed between the two):
      // "pending" until the survivor takes over, then marked by it as stopped before recording the outcome.
      const allDecisions = () => cs.decisions({ target: 'chat', fromMs: 0, toMs: Date.now() + 1, limit: 100 })
      const orphaned = (d: DecisionRecord) =>
        d.holder === 'ctl-a' &&
        (d.outcome === 'pending' ||
          (d.outcome === 'unknown' &&
            /^the leader ctl-a stopped before recording the outcome/.test(d.outcomeDetail ?? '')))
      const unmarked = async () => {
        const byId = new Map((await allDecisions()).map((d) => [d.id, d]))
        return applied
          .map((x) => byId.get(x.decisionId))
          .filter((d) => !d || !(d.outcome === 'applied' || orphaned(d)))
          .map((d) => `${d?.id} ${d?.holder} ${d?.outcome}`)
      }
      await expect.poll(unmarked, { timeout: 10_000, interval: 100 }).toEqual([])
      const ds = await allDecisions()
      expect(ds.filter(orphaned).length).toBeLessThanOrEqual(1)
      expect(new Set(ds.map((d) => d.holder))).toEqual(new Set(['ctl-a', 'ctl-b']))
      // Every action is the policy's; a controller that starts (or takes over) before it has read the
      // target's data records one skipped "frozen" decision, which changes nothing.
      for (const d of ds)
        if (d.outcome === 'skipped') expect(d.reason).toMatch(/^frozen: /)
        else expect(d.reason).toMatch(/aimd: batch p99 200\.\d ms ≥ 100 ms/)
    } finally {
      clearInterval(feed)
      for (const p of procs) await p.kill('SIGTERM')
      await hook.close()
      await store.close()
      await pgdb.drop()
    }
  }, 120_000)
})

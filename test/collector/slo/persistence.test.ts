// The SLO tables on real SQLite and PostgreSQL (random schema per run): definitions, alert state,
// silences and the outbox, including bigint times and idempotent enqueue.
import { afterEach, describe, expect, it } from 'vitest'
import { createSloPersistence } from '../../../collector/slo/persistence.js'
import type { AlertRecord } from '../../../collector/slo/alerts.js'
import { down } from '../../../migrations/2026-11-21T2200_slo.js'
import type { Kysely } from 'kysely'
import { openDb, testDialects } from './helpers.js'
import type { TestDb } from './helpers.js'

const T = Date.UTC(2026, 10, 21, 22) // beyond 2^31 s in ms: needs bigint columns

for (const dialect of testDialects()) {
  describe(`${dialect}: SLO persistence`, () => {
    let tdb: TestDb | undefined
    afterEach(async () => {
      await tdb?.drop()
      tdb = undefined
    })

    it('stores, replaces and deletes API SLO definitions', async () => {
      tdb = await openDb(dialect)
      const p = createSloPersistence(tdb.db)
      expect(await p.saveDefinition('a', '{"name":"a"}', T)).toEqual({ created: true })
      expect(await p.saveDefinition('a', '{"name":"a","x":1}', T + 1)).toEqual({ created: false })
      expect(await p.listDefinitions()).toEqual([
        { name: 'a', spec: '{"name":"a","x":1}', createdMs: T, updatedMs: T + 1 },
      ])
      expect(await p.deleteDefinition('a')).toBe(true)
      expect(await p.deleteDefinition('a')).toBe(false)
    })

    it('upserts alert state together with its notifications, once per idempotency key', async () => {
      tdb = await openDb(dialect)
      const p = createSloPersistence(tdb.db)
      const firing: AlertRecord = {
        slo: 's',
        tier: 'page-1h',
        state: 'firing',
        activeSinceMs: T,
        firedAtMs: T,
        resolvedAtMs: null,
        notifiedFiring: true,
        silenceId: null,
        updatedMs: T,
      }
      await p.commitCycle(
        [firing],
        [{ receiver: 'ops', idempotencyKey: 's/page-1h/1/firing', body: '{}' }],
        T,
      )
      const resolved = {
        ...firing,
        state: 'resolved' as const,
        resolvedAtMs: T + 60_000,
        updatedMs: T + 60_000,
      }
      await p.commitCycle(
        [resolved],
        [
          { receiver: 'ops', idempotencyKey: 's/page-1h/1/firing', body: '{"again":true}' },
          { receiver: 'ops', idempotencyKey: 's/page-1h/1/resolved', body: '{}' },
          { receiver: 'chat', idempotencyKey: 's/page-1h/1/resolved', body: '{}' },
        ],
        T + 60_000,
      )
      expect(await p.listAlerts()).toEqual([resolved])
      const out = await p.listOutbox()
      expect(out.map((r) => [r.seq, r.receiver, r.idempotencyKey, r.body])).toEqual([
        [1, 'ops', 's/page-1h/1/firing', '{}'],
        [2, 'ops', 's/page-1h/1/resolved', '{}'],
        [3, 'chat', 's/page-1h/1/resolved', '{}'],
      ])
      expect((await p.nextPending('ops'))!.seq).toBe(1)
      await p.markRetry(1, 1, T + 5000, 'HTTP 503')
      expect(await p.nextPending('ops')).toMatchObject({
        seq: 1,
        attempts: 1,
        nextAttemptMs: T + 5000,
        lastError: 'HTTP 503',
      })
      await p.markDelivered(1, T + 6000, 2)
      expect((await p.nextPending('ops'))!.seq).toBe(2)
      await p.markFailed(2, T + 7000, 'gave up')
      expect(await p.nextPending('ops')).toBeUndefined()
      expect((await p.nextPending('chat'))!.seq).toBe(3)
    })

    it('stores silences with their matchers and expiry', async () => {
      tdb = await openDb(dialect)
      const p = createSloPersistence(tdb.db)
      const s = {
        id: 'x1',
        matchers: { slo: 's', severity: 'page' as const },
        startsAtMs: T,
        endsAtMs: T + 3_600_000,
        createdBy: 'ana',
        comment: 'deploy',
        createdMs: T,
      }
      await p.saveSilence(s)
      await p.saveSilence({ ...s, endsAtMs: T + 10 })
      expect(await p.listSilences()).toEqual([{ ...s, endsAtMs: T + 10 }])
    })

    it('the migration goes down cleanly', async () => {
      tdb = await openDb(dialect)
      await down(tdb.db as unknown as Kysely<unknown>)
      await expect(createSloPersistence(tdb.db).listAlerts()).rejects.toThrow()
    })
  })
}

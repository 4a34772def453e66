import { describe, expect, it } from 'vitest'
import { BadRequest } from '../../../collector/errors.js'
import { sql } from 'kysely'
import { createStore } from '../../../collector/index.js'
import { storeDatabase } from '../../../collector/store/index.js'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { makeGpuReport } from '../../helpers/gpu-reports.js'
import { fingerprint, histogramOf, labels, makeReport } from '../../helpers/reports.js'

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0)
const ALL = { fromMs: T0 - 3600_000, toMs: T0 + 3600_000 }

for (const dialect of testDialects())
  describe(`${dialect}: store ingest`, () => {
    const db = useTestStore(dialect)

    it('stores a report once; a retry is a duplicate and changes no count', async () => {
      const report = makeReport({
        seq: 1,
        startMs: T0,
        series: [
          {
            samples: { total: [1000, 2000, 3000], ttft: [500] },
            ok: 3,
            error: 1,
            errorClasses: { timeout: 1 },
            outputTokens: 42,
          },
        ],
      })
      expect(await db.store.ingest(report, T0 + 6000)).toEqual({ kind: 'stored' })
      expect(await db.store.ingest(report, T0 + 7000)).toEqual({ kind: 'duplicate' })
      expect(await db.store.ingest(report, T0 + 8000)).toEqual({ kind: 'duplicate' })
      expect(await db.store.counts({}, ALL)).toEqual({
        ok: 3,
        error: 1,
        shed: 0,
        errorClasses: { timeout: 1 },
        outputTokens: 42,
      })
      const h = await db.store.histograms({ service: 'chat' }, ALL, ['total', 'ttft', 'kernel'])
      expect(h.get('total')!.totalCount).toBe(3)
      expect(h.get('ttft')!.totalCount).toBe(1)
      expect(h.get('kernel')!.totalCount).toBe(0)
      // Same seq from another agent instance is a different report.
      expect(
        await db.store.ingest({ ...report, agent: { ...report.agent, instance: 'inst-b' } }, T0),
      ).toEqual({
        kind: 'stored',
      })
      expect((await db.store.counts({}, ALL)).ok).toBe(6)
    })

    it('rejects an undecodable histogram with BadRequest and writes nothing', async () => {
      const good = makeReport({ seq: 1, startMs: T0, series: [{ samples: { total: [1000] }, ok: 1 }] })
      const bad = {
        ...good,
        series: [
          good.series[0]!,
          {
            ...good.series[0]!,
            labels: labels({ replica: 'r9' }),
            histograms: { kernel: 'HISTFAAAnot-a-histogram' },
          },
        ],
      }
      const err = await db.store.ingest(bad, T0).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err).toBeInstanceOf(BadRequest)
      expect((err as BadRequest).code).toBe('TG_ERR_BAD_REQUEST')
      expect((err as BadRequest).message).toMatch(/series\[1\]\.histograms\.kernel/)
      expect(await db.store.services()).toEqual([])
      expect(await db.store.counts({}, ALL)).toEqual({
        ok: 0,
        error: 0,
        shed: 0,
        errorClasses: {},
        outputTokens: 0,
      })
      // The seq was not burnt: the corrected report is stored.
      expect(await db.store.ingest(good, T0)).toEqual({ kind: 'stored' })
      expect((await db.store.counts({}, ALL)).ok).toBe(1)
    })

    it('answers StoreUnavailable (503) when the database is gone', async () => {
      const closed = await createStore({ url: db.url })
      await closed.close()
      const report = makeReport({ seq: 1, startMs: T0, series: [{ ok: 1 }] })
      await expect(closed.ingest(report, T0)).rejects.toMatchObject({
        code: 'TG_ERR_STORE_UNAVAILABLE',
        statusCode: 503,
      })
      await expect(closed.counts({}, ALL)).rejects.toMatchObject({ code: 'TG_ERR_STORE_UNAVAILABLE' })
      await expect(closed.services()).rejects.toMatchObject({ code: 'TG_ERR_STORE_UNAVAILABLE' })
    })

    it('writes reports that arrive together in shared transactions: each stored once, duplicates told apart', async () => {
      // 40 reports from 8 agents at once, every one sent twice: the first is written at once, the rest wait and
      // go together; a retry in the same batch as its original is a duplicate, as it is in a later one.
      const reports = Array.from({ length: 40 }, (_, i) =>
        makeReport({
          instance: `agent-${i % 8}`,
          seq: Math.floor(i / 8) + 1,
          startMs: T0 + Math.floor(i / 8) * 5000,
          series: [
            {
              labels: { replica: `r${i % 8}` },
              samples: { total: [1000 + i, 2000 + i] },
              ok: 2,
              outputTokens: i,
            },
            { labels: { service: 'embed', replica: `r${i % 8}` }, samples: { queue: [10 + i] }, error: 1 },
          ],
        }),
      )
      const outcomes = await Promise.all(
        [...reports, ...reports].map((r, i) => db.store.ingest(r, T0 + 30_000 + i)),
      )
      // Each report stored once. SQLite has one writer, so the copy that arrived first is the one stored;
      // PostgreSQL's writers run side by side, and either copy may take the key.
      for (let i = 0; i < 40; i++)
        expect([outcomes[i]!.kind, outcomes[i + 40]!.kind].sort()).toEqual(['duplicate', 'stored'])
      if (dialect === 'sqlite') expect(outcomes.slice(0, 40).every((o) => o.kind === 'stored')).toBe(true)
      expect(await db.store.counts({ service: 'chat' }, ALL)).toMatchObject({ ok: 80, outputTokens: 780 })
      expect(await db.store.counts({ service: 'embed' }, ALL)).toMatchObject({ ok: 0, error: 40 })
      expect((await db.store.histograms({ service: 'chat' }, ALL, ['total'])).get('total')!.totalCount).toBe(
        80,
      )
      expect(
        (await db.store.histograms({ replica: 'r3' }, ALL, ['total', 'queue'])).get('queue')!.totalCount,
      ).toBe(5)
      const services = await db.store.services()
      expect(services.length).toBe(16)
      // A series held by several reports of one transaction is seen from the earliest to the latest of them.
      expect(services.find((s) => s.service === 'chat' && s.replica === 'r3')).toMatchObject({
        firstSeenMs: T0 + 5000,
        lastSeenMs: T0 + 25_000,
      })
    })

    it('writers side by side take rows in one order: no deadlock, whatever order reports and retries come in', async () => {
      // Agents share replicas' series, and retries come back in the reverse order: a writer that took report
      // keys and series rows report by report could hold a series another writer needs while waiting for a
      // report key that writer holds (PostgreSQL found the cycle and one transaction was written again).
      const lines: string[] = []
      const store = await createStore({ url: db.url, logger: (l) => lines.push(l) })
      try {
        for (let round = 0; round < 10; round++) {
          const reports = Array.from({ length: 48 }, (_, i) =>
            makeGpuReport({
              instance: `agent-${i % 12}`,
              node: `n${i % 3}`,
              seq: round * 10 + Math.floor(i / 12) + 1,
              startMs: T0 + (round * 4 + Math.floor(i / 12)) * 5000,
              series: [
                { labels: { replica: `r${i % 6}` }, samples: { total: [1000 + i] }, ok: 1 },
                { labels: { replica: `r${(i + 3) % 6}` }, samples: { total: [2000 + i] }, ok: 1 },
                { labels: { service: 'embed', replica: `r${i % 4}` }, error: 1 },
              ],
              gpus: [{ uuid: `GPU-${i % 2}`, index: i % 2, utilPct: [40 + i] }],
            }),
          )
          const outcomes = await Promise.all(
            [...reports, ...reports.slice().reverse()].map((r, i) => store.ingest(r, T0 + 60_000 + i)),
          )
          expect(outcomes.filter((o) => o.kind === 'stored').length).toBe(48)
        }
        expect(lines.filter((l) => l.includes('retrying'))).toEqual([])
        expect(await store.counts({ service: 'chat' }, ALL)).toMatchObject({ ok: 10 * 48 * 2 })
        expect(await store.counts({ service: 'embed' }, ALL)).toMatchObject({ error: 10 * 48 })
      } finally {
        await store.close()
      }
    })

    it('fails only the report whose write fails when it shared a transaction with others', async () => {
      // A trigger refuses one agent's reports inside the database: a failure no check before the write can see.
      const kdb = storeDatabase(db.store)!
      if (dialect === 'sqlite')
        await sql`create trigger tg_test_poison before insert on tg_report when new.agent_instance = 'poison'
          begin select raise(abort, 'poisoned report'); end`.execute(kdb)
      else {
        await sql`create function tg_test_poison() returns trigger language plpgsql as $$
          begin if new.agent_instance = 'poison' then raise exception 'poisoned report'; end if; return new; end $$`.execute(
          kdb,
        )
        await sql`create trigger tg_test_poison before insert on tg_report for each row execute function tg_test_poison()`.execute(
          kdb,
        )
      }
      const report = (instance: string, seq: number) =>
        makeReport({
          instance,
          seq,
          startMs: T0,
          series: [{ labels: { replica: instance }, samples: { total: [1000] }, ok: 1 }],
        })
      const sent = [
        report('first', 1),
        ...Array.from({ length: 10 }, (_, i) => report(`good-${i}`, 1)),
        report('poison', 1),
        ...Array.from({ length: 10 }, (_, i) => report(`more-${i}`, 1)),
      ]
      const settled = await Promise.allSettled(sent.map((r) => db.store.ingest(r, T0 + 6000)))
      const poisoned = settled[11]!
      expect(poisoned.status).toBe('rejected')
      expect((poisoned as PromiseRejectedResult).reason).toMatchObject({
        code: 'TG_ERR_STORE_UNAVAILABLE',
        message: expect.stringMatching(/poisoned report/),
      })
      settled.forEach((s, i) => {
        if (i !== 11) expect(s).toEqual({ status: 'fulfilled', value: { kind: 'stored' } })
      })
      expect((await db.store.counts({}, ALL)).ok).toBe(21)
      expect((await db.store.services()).map((s) => s.replica)).not.toContain('poison')
    })

    it('lists series with first and last seen times: the data’s time, never later than its arrival', async () => {
      // A series is seen at the end of the interval its data covers (to within one 10 s step).
      await db.store.ingest(
        makeReport({ seq: 1, startMs: T0, series: [{ samples: { total: [1] } }] }),
        T0 + 5000,
      )
      await db.store.ingest(makeReport({ seq: 2, startMs: T0, series: [{ ok: 1 }] }), T0 + 9000)
      await db.store.ingest(
        makeReport({
          seq: 3,
          startMs: T0 + 20_000,
          series: [{ samples: { total: [1] } }, { labels: { service: 'embed', replica: 'r1' }, ok: 1 }],
        }),
        // Sent late (from a spool after an outage): the data is still from T0 + 20 s.
        T0 + 100_000,
      )
      expect(await db.store.services()).toEqual([
        { ...labels(), firstSeenMs: T0 + 5000, lastSeenMs: T0 + 25_000 },
        {
          ...labels({ service: 'embed', replica: 'r1' }),
          firstSeenMs: T0 + 25_000,
          lastSeenMs: T0 + 25_000,
        },
      ])
      // A report whose interval ends after its arrival (clock skew) is seen at its arrival, not in the future.
      await db.store.ingest(makeReport({ seq: 4, startMs: T0 + 60_000, series: [{ ok: 1 }] }), T0 + 61_000)
      expect((await db.store.services())[0]!.lastSeenMs).toBe(T0 + 61_000)
      // Another collector receives an older report late: first seen moves back, last seen does not.
      const other = await createStore({ url: db.url })
      try {
        await other.ingest(
          makeReport({ instance: 'old', seq: 1, startMs: T0 - 5000, series: [{ ok: 1 }] }),
          T0 + 1000,
        )
      } finally {
        await other.close()
      }
      expect((await db.store.services())[0]).toEqual({
        ...labels(),
        firstSeenMs: T0,
        lastSeenMs: T0 + 61_000,
      })
      // A known series is refreshed by id: it moves forward, and never back past what another collector wrote.
      const ahead = await createStore({ url: db.url })
      try {
        await ahead.ingest(
          makeReport({ instance: 'ahead', seq: 1, startMs: T0 + 200_000, series: [{ ok: 1 }] }),
          T0 + 300_000,
        )
      } finally {
        await ahead.close()
      }
      await db.store.ingest(makeReport({ seq: 5, startMs: T0 + 120_000, series: [{ ok: 1 }] }), T0 + 130_000)
      expect((await db.store.services())[0]!.lastSeenMs).toBe(T0 + 205_000)
      await db.store.ingest(makeReport({ seq: 6, startMs: T0 + 400_000, series: [{ ok: 1 }] }), T0 + 410_000)
      expect((await db.store.services())[0]).toEqual({
        ...labels(),
        firstSeenMs: T0,
        lastSeenMs: T0 + 405_000,
      })
    })

    it('selects series by any subset of labels', async () => {
      await db.store.ingest(
        makeReport({
          seq: 1,
          startMs: T0,
          series: [
            { labels: { replica: 'r0' }, samples: { total: [1000] }, ok: 1 },
            { labels: { replica: 'r1' }, samples: { total: [2000, 3000] }, ok: 2 },
            { labels: { service: 'embed', replica: 'r1' }, samples: { total: [4000] }, ok: 4 },
          ],
        }),
        T0,
      )
      expect((await db.store.counts({ service: 'chat' }, ALL)).ok).toBe(3)
      expect((await db.store.counts({ replica: 'r1' }, ALL)).ok).toBe(6)
      expect((await db.store.counts({ service: 'chat', replica: 'r1' }, ALL)).ok).toBe(2)
      expect((await db.store.counts({ model: 'nope' }, ALL)).ok).toBe(0)
      const h = await db.store.histograms({ replica: 'r1' }, ALL, ['total'])
      expect(fingerprint(h.get('total')!)).toBe(fingerprint(histogramOf([2000, 3000, 4000])))
    })

    if (dialect === 'sqlite')
      it('keeps everything in a reopened SQLite file', async () => {
        for (let seq = 1; seq <= 5; seq++)
          await db.store.ingest(
            makeReport({
              seq,
              startMs: T0 + seq * 5000,
              series: [{ samples: { total: [seq * 1000] }, ok: 1 }],
            }),
            T0 + seq * 5000,
          )
        await db.reopen()
        expect((await db.store.counts({}, ALL)).ok).toBe(5)
        const h = (await db.store.histograms({}, ALL, ['total'])).get('total')!
        expect(fingerprint(h)).toBe(fingerprint(histogramOf([1000, 2000, 3000, 4000, 5000])))
        expect(await db.store.ingest(makeReport({ seq: 5, startMs: T0, series: [{ ok: 1 }] }), T0)).toEqual({
          kind: 'duplicate',
        })
      })

    if (dialect === 'postgres')
      it('loses nothing when two stores on one database ingest from 4 loops each', async () => {
        const other = await createStore({ url: db.url })
        try {
          const perLoop = 25
          const loops = [db.store, other].flatMap((s, si) =>
            [0, 1, 2, 3].map(async (loop) => {
              for (let i = 0; i < perLoop; i++) {
                const report = makeReport({
                  instance: `agent-${loop}`,
                  seq: i + 1,
                  startMs: T0 + i * 5000,
                  series: [
                    {
                      labels: { replica: `r${loop % 2}` },
                      samples: { total: [1000 + i] },
                      ok: 1,
                      errorClasses: { e: 1 },
                    },
                    { labels: { replica: 'shared' }, samples: { total: [2000 + i] }, ok: 1 },
                  ],
                })
                // Both stores send every report: exactly one of the two is stored.
                const outcome = await s.ingest(report, T0 + i * 5000)
                if (outcome.kind === 'stored') stored[si]++
              }
            }),
          )
          const stored = [0, 0]
          await Promise.all(loops)
          expect(stored[0]! + stored[1]!).toBe(4 * perLoop)
          const c = await db.store.counts({}, ALL)
          expect(c.ok).toBe(4 * perLoop * 2)
          expect(c.errorClasses).toEqual({ e: 4 * perLoop })
          const h = (await other.histograms({ replica: 'shared' }, ALL, ['total'])).get('total')!
          expect(h.totalCount).toBe(4 * perLoop)
          expect((await db.store.services()).map((s) => s.replica)).toEqual(['r0', 'r1', 'shared'])
        } finally {
          await other.close()
        }
      })
  })

import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createStore } from '../../../collector/store/index.js'
import {
  CHECKPOINT_EVERY_ROWS,
  FALLBACK_AUTOCHECKPOINT_PAGES,
  SqliteCheckpointer,
} from '../../../collector/store/sqlite-checkpointer.js'
import { sqliteDriver } from '../../../collector/store/sqlite-driver.js'
import { eventually } from '../../helpers/cli.js'
import { makeReport } from '../../helpers/reports.js'

// SQLite's WAL is copied into the database file by a worker thread (SqliteCheckpointer), not inside the
// writer's commits. These tests read the effect from outside: the database file grows while the writing
// connection stays under its own (much higher) checkpoint mark, and the WAL's frames all reach the file.

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tg-checkpoint-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

describe('the background checkpoint', () => {
  it('copies every committed WAL frame into the database file when poked, off the writing thread', async () => {
    const path = join(dir, 'cp.db')
    const driver = sqliteDriver()
    const db = new driver.Database(path)
    db.pragma('journal_mode = WAL')
    db.pragma('wal_autocheckpoint = 0') // the writer never checkpoints: only the thread can
    db.exec('create table t (k integer primary key, v text)')
    const insert = db.prepare('insert into t (v) values (?)')
    db.transaction(() => {
      for (let i = 0; i < 5000; i++) insert.run('x'.repeat(200))
    })()
    const before = statSync(path).size
    const lines: string[] = []
    const cp = new SqliteCheckpointer(path, driver.path, (l) => lines.push(l))
    cp.poke(CHECKPOINT_EVERY_ROWS)
    await eventually(async () => cp.stats.runs > 0, 10_000, 20)
    expect(cp.stats.lastLog).toBeGreaterThan(100)
    expect(cp.stats.lastCheckpointed).toBe(cp.stats.lastLog)
    expect(statSync(path).size).toBeGreaterThan(before + 1_000_000)
    await cp.stop()
    cp.poke(CHECKPOINT_EVERY_ROWS) // after stop: nothing, no thread
    expect(lines).toEqual([])
    // The database file alone (WAL ignored) holds every row: open it read-only without the WAL's content.
    db.close()
    const reopened = new driver.Database(path, { readonly: true })
    expect(reopened.prepare('select count(*) as n from t').get()).toEqual({ n: 5000 })
    reopened.close()
  })

  it('says once, without crashing, when the thread cannot start, and stops asking', async () => {
    const path = join(dir, 'missing-driver.db')
    const driver = sqliteDriver()
    new driver.Database(path).close()
    const lines: string[] = []
    const cp = new SqliteCheckpointer(path, join(dir, 'no-such-driver.js'), (l) => lines.push(l))
    cp.poke(1)
    await eventually(async () => lines.length > 0, 10_000, 20)
    expect(lines[0]).toMatch(/checkpoint thread stopped: .*no-such-driver.*the writer checkpoints by itself/)
    cp.poke(CHECKPOINT_EVERY_ROWS)
    await cp.stop()
    expect(lines).toHaveLength(1)
  })

  it('is what a SQLite file store uses: ingest grows the database file while the writer stays under its mark', async () => {
    const path = join(dir, 'store.db')
    const store = await createStore({ url: `sqlite:${path}` })
    try {
      const before = statSync(path).size
      const t0 = Date.UTC(2026, 10, 27, 0, 0, 0)
      const series = Array.from({ length: 2000 }, (_, i) => ({
        labels: { service: `svc-${i % 4}`, replica: `r${i}` },
        samples: { total: [1000 + i, 2000 + i, 3000 + i] },
        ok: 3,
      }))
      for (let seq = 1; seq <= 20; seq++)
        expect(
          (await store.ingest(makeReport({ seq, startMs: t0 + seq * 10_000, series }), t0 + 300_000)).kind,
        ).toBe('stored')
      const walPages = statSync(`${path}-wal`).size / 4096
      expect(walPages).toBeLessThan(FALLBACK_AUTOCHECKPOINT_PAGES) // so the writer never checkpointed by itself
      await eventually(async () => statSync(path).size > before + 500_000, 10_000, 20)
    } finally {
      await store.close()
    }
    // close() ended the thread and then the writer's connection, which removes the WAL.
    expect(() => statSync(`${path}-wal`)).toThrow()
  })
})

import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createStore } from '../../collector/index.js'
import { storeInternals } from '../../collector/store/sql-store.js'
import { TEST_PG_URL, createTestDatabase, testDialects } from '../helpers/dialects.js'

// CI failed with `migration (migrator) failed: relation "tg_….tg_report" does not exist`: kysely's Migrator
// asks the stock PostgreSQL introspector whether its tables exist, which lists every table of every schema
// and calls pg_get_serial_sequence('schema.table', …) on each, so a schema dropped by another client during
// that query failed this store's migration. The store's dialect now introspects its current schema only.

const pgOnly = testDialects().includes('postgres') ? describe : describe.skip

pgOnly('postgres: migrating while other clients drop schemas', () => {
  it('never fails a migration because of another schema', async () => {
    const admin = new pg.Client({ connectionString: TEST_PG_URL })
    await admin.connect()
    let churning = true
    // Other clients: schemas with a few tables each, created and dropped as fast as the server allows.
    const churn = (async () => {
      while (churning) {
        const s = `tg_churn_${randomBytes(5).toString('hex')}`
        await admin.query(
          `create schema ${s}; create table ${s}.a (id serial primary key, v text);` +
            `create table ${s}.b (id serial primary key, w int); create table ${s}.c (x int)`,
        )
        await admin.query(`drop schema ${s} cascade`)
      }
    })()
    const failures: string[] = []
    try {
      for (let i = 0; i < 8; i++) {
        const tdb = await createTestDatabase('postgres')
        try {
          const store = await createStore({ url: tdb.url })
          await store.close()
        } catch (err) {
          failures.push((err as Error).message)
        } finally {
          await tdb.drop()
        }
      }
    } finally {
      churning = false
      await churn
      await admin.end()
    }
    expect(failures).toEqual([])
  }, 120_000)

  it("introspects the store's own schema, with its columns", async () => {
    const tdb = await createTestDatabase('postgres')
    const store = await createStore({ url: tdb.url })
    try {
      const db = storeInternals(store)!.db
      const tables = await db.introspection.getTables({ withInternalKyselyTables: true })
      const schema = tdb.url.match(/search_path%3D(\w+)/)![1]
      expect(new Set(tables.map((t) => t.schema))).toEqual(new Set([schema]))
      const names = tables.map((t) => t.name)
      expect(names).toEqual(
        expect.arrayContaining(['tg_migration', 'tg_migration_lock', 'tg_report', 'tg_hist']),
      )
      const report = tables.find((t) => t.name === 'tg_report')!
      expect(report.columns.map((c) => c.name)).toContain('received_at_ms')
    } finally {
      await store.close()
      await tdb.drop()
    }
  })
})

import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createStore } from '../../../collector/index.js'
import { MIGRATION_NAMES, migrationProvider } from '../../../migrations/index.js'
import { storeInternals } from '../../../collector/store/sql-store.js'
import { Migrator, NO_MIGRATIONS, sql } from 'kysely'
import { createTestDatabase, testDialects } from '../../helpers/dialects.js'
import type { TestDatabase } from '../../helpers/dialects.js'

for (const dialect of testDialects())
  describe(`${dialect}: store migrations`, () => {
    let tdb: TestDatabase
    beforeEach(async () => {
      tdb = await createTestDatabase(dialect)
    })
    afterEach(async () => {
      await tdb.drop()
    })

    it('applies every migration once; a second run applies none', async () => {
      const store = await createStore({ url: tdb.url, migrate: false })
      try {
        expect(store.dialect).toBe(dialect)
        const first = await store.migrate()
        expect(first).toEqual({ kind: 'ok', applied: MIGRATION_NAMES })
        const second = await store.migrate()
        expect(second).toEqual({ kind: 'ok', applied: [] })
        expect(await store.ping()).toBe(true)
        expect(await store.services()).toEqual([])
      } finally {
        await store.close()
      }
    })

    it('migrates down to nothing and up again', async () => {
      const store = await createStore({ url: tdb.url })
      try {
        const db = storeInternals(store)!.db
        const schema =
          dialect === 'postgres'
            ? (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]!.s
            : undefined
        const migrator = new Migrator({
          db,
          provider: migrationProvider,
          migrationTableName: 'tg_migration',
          migrationLockTableName: 'tg_migration_lock',
          ...(schema === undefined ? {} : { migrationTableSchema: schema }),
        })
        const down = await migrator.migrateTo(NO_MIGRATIONS)
        expect(down.error).toBeUndefined()
        expect(down.results?.map((r) => r.migrationName)).toEqual([...MIGRATION_NAMES].reverse())
        await expect(store.services()).rejects.toThrow()
        expect(await store.migrate()).toEqual({ kind: 'ok', applied: MIGRATION_NAMES })
        expect(await store.services()).toEqual([])
      } finally {
        await store.close()
      }
    })

    it('returns a failed migration as a value, and createStore refuses to start', async () => {
      const store = await createStore({ url: tdb.url, migrate: false })
      try {
        await sql`create table tg_series (unrelated integer)`.execute(storeInternals(store)!.db)
        const result = await store.migrate()
        expect(result).toMatchObject({ kind: 'failed', migration: MIGRATION_NAMES[0] })
        expect(result.kind === 'failed' && result.error.length > 0).toBe(true)
      } finally {
        await store.close()
      }
      await expect(createStore({ url: tdb.url })).rejects.toMatchObject({ code: 'TG_ERR_STORE_UNAVAILABLE' })
    })

    it('opens an already migrated database without applying anything', async () => {
      const lines: string[] = []
      const a = await createStore({ url: tdb.url, logger: (l) => lines.push(l) })
      await a.close()
      expect(lines.filter((l) => l.includes('applied migration'))).toHaveLength(MIGRATION_NAMES.length)
      const b = await createStore({ url: tdb.url, logger: (l) => lines.push(l) })
      try {
        expect(lines.filter((l) => l.includes('applied migration'))).toHaveLength(MIGRATION_NAMES.length)
        expect(await b.migrate()).toEqual({ kind: 'ok', applied: [] })
      } finally {
        await b.close()
      }
    })
  })

describe('store url', () => {
  it('rejects invalid rollups with every problem listed', async () => {
    await expect(
      createStore({
        url: ':memory:',
        rollups: [
          { name: 'a', stepMs: 10_000, retentionMs: null },
          { name: 'b', stepMs: 15_000, retentionMs: -1 },
        ],
        retention: { zz: 1 },
      }),
    ).rejects.toMatchObject({
      code: 'TG_ERR_CONFIG_INVALID',
      message: expect.stringMatching(/zz.*multiple of 10000.*retention of b/),
    })
  })

  it('reports ping false after close', async () => {
    const store = await createStore({ url: ':memory:' })
    expect(await store.ping()).toBe(true)
    await store.close()
    expect(await store.ping()).toBe(false)
  })
})

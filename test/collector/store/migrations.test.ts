import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createStore } from '../../../collector/index.js'
import { MIGRATION_NAMES } from '../../../migrations/index.js'
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

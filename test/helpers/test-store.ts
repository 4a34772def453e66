import { afterEach, beforeEach } from 'vitest'
import { createStore } from '../../collector/index.js'
import type { Store } from '../../collector/index.js'
import { createTestDatabase } from './dialects.js'
import type { TestDatabase, TestDialect } from './dialects.js'

// Apart from dialects.ts, which the benchmarks import outside vitest.

/**
 * A fresh store on a throwaway database of `dialect` for each test of the enclosing `describe` (opened in
 * `beforeEach`, closed and dropped in `afterEach`). Read `store` and `url` inside the tests.
 *
 * @example
 * ```ts
 * for (const dialect of testDialects())
 *   describe(`${dialect}: …`, () => {
 *     const db = useTestStore(dialect)
 *     it('…', async () => { await db.store.ingest(report, now) })
 *   })
 * ```
 */
export function useTestStore(dialect: TestDialect): {
  readonly store: Store
  readonly url: string
  /** Closes the store and opens a new one on the same database (what a restarted collector sees). */
  reopen(): Promise<Store>
} {
  let tdb: TestDatabase | undefined
  let store: Store | undefined
  beforeEach(async () => {
    tdb = await createTestDatabase(dialect)
    store = await createStore({ url: tdb.url })
  })
  afterEach(async () => {
    await store?.close()
    await tdb?.drop()
  })
  return {
    get store() {
      return store!
    },
    get url() {
      return tdb!.url
    },
    async reopen() {
      await store!.close()
      store = await createStore({ url: tdb!.url })
      return store
    },
  }
}

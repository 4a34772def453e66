/**
 * Which kysely handle is behind a store, kept apart from the store's code so that modules that only look
 * the handle up (the controller tables) do not load kysely and the database drivers with it.
 */
import type { Kysely } from 'kysely'
import type { DB } from './schema.js'
import type { Store } from './types.js'

const DATABASES = new WeakMap<Store, Kysely<DB>>()

/**
 * Records the handle a store was made over (the SQL store's constructor calls it).
 *
 * @example attachDatabase(this, opts.db)
 */
export function attachDatabase(store: Store, db: Kysely<DB>): void {
  DATABASES.set(store, db)
}

/**
 * The kysely handle behind a store made by `createStore`, for components that keep their own tables
 * in the same database through the same migrations (the SLO engine). `undefined` for any other Store.
 *
 * @example const db = storeDatabase(store) // Kysely<DB>
 */
export function storeDatabase(store: Store): Kysely<DB> | undefined {
  return DATABASES.get(store)
}

import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'

/** The better-sqlite3 constructor (the same API in releases 12 and 13). */
export type SqliteConstructor = typeof BetterSqlite3

/** Which better-sqlite3 release the store runs on, and why. */
export interface SqliteDriver {
  readonly Database: SqliteConstructor
  /** `better-sqlite3` (release 12, compiled at install) or `better-sqlite3-napi` (release 13, Node-API). */
  readonly module: 'better-sqlite3' | 'better-sqlite3-napi'
  readonly version: string
  /** The module's resolved entry file, for loading the same driver in a worker thread. */
  readonly path: string
}

const require = createRequire(import.meta.url)
let loaded: SqliteDriver | undefined

/**
 * Loads the SQLite driver that is safe on this Node.js. better-sqlite3 12 wraps its objects in Node's raw
 * `ObjectWrap`, which Node 24.19+ aborts on when a statement is garbage-collected outside a JavaScript
 * context (`Assertion failed: (env) != nullptr`, during idle GC or at exit); release 13 uses Node-API and
 * has no such destructor, but needs Node 22 (it fails to load on Node 20). package.json therefore carries
 * both: release 12 as `better-sqlite3` and release 13 as the optional `better-sqlite3-napi`, which npm
 * installs only where its engines allow (Node ≥ 22). Node ≥ 22 uses 13, Node 20 uses 12. On Node 24 without
 * release 13 installed this throws rather than run into an abort later.
 *
 * @example
 * ```ts
 * const { Database } = sqliteDriver()
 * const db = new Database(':memory:')
 * ```
 */
export function sqliteDriver(): SqliteDriver {
  if (loaded) return loaded
  const major = Number(process.versions.node.split('.')[0])
  if (major >= 22) {
    try {
      const Database = require('better-sqlite3-napi') as SqliteConstructor
      const version = (require('better-sqlite3-napi/package.json') as { version: string }).version
      const path = require.resolve('better-sqlite3-napi')
      return (loaded = { Database, module: 'better-sqlite3-napi', version, path })
    } catch (err) {
      if (major >= 24)
        throw new Error(
          `Node ${process.versions.node} needs better-sqlite3 13 (the optional dependency better-sqlite3-napi), ` +
            `which is not installed here (${(err as Error).message.split('\n')[0]}); run npm ci with this Node`,
        )
    }
  }
  const Database = require('better-sqlite3') as SqliteConstructor
  const version = (require('better-sqlite3/package.json') as { version: string }).version
  return (loaded = { Database, module: 'better-sqlite3', version, path: require.resolve('better-sqlite3') })
}

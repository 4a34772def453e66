import { resolve as resolvePath } from 'node:path'
import type BetterSqlite3 from 'better-sqlite3'
import pg from 'pg'
import { Kysely, SqliteDialect, sql } from 'kysely'
import { ConfigInvalid, StoreUnavailable } from '../errors.js'
import { DEFAULT_ROLLUPS, resolveRollups } from './levels.js'
import { CurrentSchemaPostgresDialect } from './pg-dialect.js'
import { withBulkStatementCache } from './sqlite-bulk.js'
import {
  FALLBACK_AUTOCHECKPOINT_PAGES,
  SqliteCheckpointer,
  WAL_SIZE_LIMIT_BYTES,
} from './sqlite-checkpointer.js'
import { sqliteDriver } from './sqlite-driver.js'
import { createSqlStore } from './sql-store.js'
import type { DB } from './schema.js'
import type { RollupLevel, Store } from './types.js'

/** Options of {@link createStore}. */
export interface StoreOptions {
  /**
   * Where the data lives. `postgres://…` or `postgresql://…` selects PostgreSQL (a `search_path` can be
   * passed as `?options=-c%20search_path%3Dmy_schema`); anything else is SQLite: a file path,
   * `sqlite:path`, or `:memory:`. SQLite takes `?synchronous=full` to fsync every commit (default `normal`).
   */
  readonly url: string
  /** Milliseconds since the epoch; used only to time log lines. Default `Date.now`. */
  readonly clock?: () => number
  /** Rollup levels, finest first (each step a multiple of the previous). Default {@link DEFAULT_ROLLUPS}. */
  readonly rollups?: readonly RollupLevel[]
  /** Retention overrides by level name, in ms (`null` keeps forever), e.g. `{ '10s': 6 * 3600_000 }`. */
  readonly retention?: Readonly<Record<string, number | null>>
  /** Where the store's few log lines go (migrations applied, compactions). Default: nowhere. */
  readonly logger?: (line: string) => void
  /** Apply pending migrations before returning. Default true. */
  readonly migrate?: boolean
}

const INT8_OID = 20

/**
 * Opens the store, the only place that knows SQLite from PostgreSQL, and applies pending migrations.
 * Throws `ConfigInvalid` for bad options and `StoreUnavailable` when the database cannot be opened or a
 * migration fails (boot-time errors; nothing after boot throws for an expected failure).
 *
 * SQLite runs in WAL mode with `synchronous=NORMAL`: a commit survives the process being killed (kill -9),
 * and only a power loss or OS crash can lose the last commits; `?synchronous=full` closes that gap at the
 * cost of one fsync per report.
 *
 * @example
 * ```ts
 * const store = await createStore({ url: 'sqlite:./tailguard.db' })
 * const fleet = await createStore({ url: 'postgres://tailguard@db:5432/tailguard', logger: (l) => log.info(l) })
 * ```
 */
export async function createStore(opts: StoreOptions): Promise<Store> {
  const resolved = resolveRollups(opts.rollups ?? DEFAULT_ROLLUPS, opts.retention)
  if (!resolved.ok) throw new ConfigInvalid(resolved.problems.join('; '))
  const logger = opts.logger ?? (() => {})
  const clock = opts.clock ?? Date.now

  let db: Kysely<DB>
  let dialect: 'sqlite' | 'postgres'
  let migrationSchema: string | undefined
  let checkpointer: SqliteCheckpointer | undefined
  try {
    if (/^postgres(ql)?:\/\//i.test(opts.url)) {
      dialect = 'postgres'
      const pool = new pg.Pool({
        connectionString: opts.url,
        types: {
          // int8 columns hold epoch ms and counts, all below 2^53: read them as numbers.
          getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
            oid === INT8_OID && format !== 'binary'
              ? (v: string) => Number(v)
              : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
        },
      })
      // An idle client losing its connection must not crash the process: queries fail and ping() says so.
      pool.on('error', (err) => logger(`store: PostgreSQL connection error: ${err.message}`))
      // The store's reads are many small index scans; PostgreSQL's parallel plans for them spent most of their time
      // starting workers (a 30-day service query of the fleet bench: 66 ms under a Gather, 9-16 ms without one).
      pool.on('connect', (client) => {
        client
          .query('set max_parallel_workers_per_gather = 0')
          .catch((err: Error) => logger(`store: PostgreSQL session setting failed: ${err.message}`))
      })
      db = new Kysely<DB>({ dialect: new CurrentSchemaPostgresDialect({ pool }) })
      const row = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)
      migrationSchema = row.rows[0]?.schema ?? undefined
      if (migrationSchema === undefined) {
        await db.destroy()
        throw new StoreUnavailable('PostgreSQL: no current schema (check search_path)')
      }
    } else {
      dialect = 'sqlite'
      const opened = openSqlite(opts.url)
      if (opened.path !== ':memory:')
        // An absolute path: the thread opens the file itself, whatever the working directory is by then.
        checkpointer = new SqliteCheckpointer(resolvePath(opened.path), sqliteDriver().path, logger)
      db = new Kysely<DB>({
        dialect: new SqliteDialect({ database: withBulkStatementCache(opened.database) }),
      })
    }
  } catch (err) {
    if (err instanceof StoreUnavailable || err instanceof ConfigInvalid) throw err
    throw new StoreUnavailable(`cannot open store ${redact(opts.url)}: ${(err as Error).message}`)
  }

  const store = createSqlStore({
    db,
    dialect,
    levels: resolved.levels,
    migrationSchema,
    clock,
    logger,
    ...(checkpointer === undefined
      ? {}
      : { wrote: (rows: number) => checkpointer.poke(rows), closing: () => checkpointer.stop() }),
  })
  if (opts.migrate !== false) {
    const result = await store.migrate()
    if (result.kind === 'failed') {
      await store.close()
      throw new StoreUnavailable(`migration ${result.migration} failed: ${result.error}`)
    }
  }
  return store
}

function openSqlite(url: string): { database: BetterSqlite3.Database; path: string } {
  const raw = url.startsWith('sqlite://') ? url.slice(9) : url.startsWith('sqlite:') ? url.slice(7) : url
  const q = raw.indexOf('?')
  const path = q < 0 ? raw : raw.slice(0, q)
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1))
  const synchronous = (params.get('synchronous') ?? 'normal').toLowerCase()
  if (!['normal', 'full', 'extra'].includes(synchronous))
    throw new ConfigInvalid(`store url: synchronous must be normal, full or extra, got "${synchronous}"`)
  if (path === '') throw new ConfigInvalid('store url: empty SQLite path')
  const { Database } = sqliteDriver()
  const database = new Database(path)
  if (path !== ':memory:') {
    database.pragma('journal_mode = WAL')
    // Checkpoints run on their own thread (SqliteCheckpointer); this connection checkpoints only past a far
    // higher mark, should that thread fall behind.
    database.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`)
    database.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`)
  }
  database.pragma(`synchronous = ${synchronous}`)
  database.pragma('busy_timeout = 5000')
  database.pragma('foreign_keys = ON')
  return { database, path }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@')
}

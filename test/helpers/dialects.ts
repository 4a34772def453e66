import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import pg from 'pg'

/** The dialects every store test runs on, from `TG_TEST_DIALECTS=sqlite,postgres` (default both). */
export type TestDialect = 'sqlite' | 'postgres'

/** Base URL of the shared test PostgreSQL (`TG_TEST_PG_URL`). */
export const TEST_PG_URL = process.env.TG_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/**
 * The dialects to test, kysely-style: `for (const dialect of testDialects()) describe(dialect, …)`.
 *
 * @example TG_TEST_DIALECTS=sqlite npx vitest run test/collector/store
 */
export function testDialects(): TestDialect[] {
  const raw = process.env.TG_TEST_DIALECTS ?? 'sqlite,postgres'
  const out: TestDialect[] = []
  for (const d of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (d !== 'sqlite' && d !== 'postgres') throw new Error(`TG_TEST_DIALECTS: unknown dialect "${d}"`)
    out.push(d)
  }
  return out
}

/** A private database for one test: a temp SQLite file, or a random PostgreSQL schema. */
export interface TestDatabase {
  readonly dialect: TestDialect
  /** A store URL (`createStore({ url })`); PostgreSQL URLs set `search_path` to the private schema. */
  readonly url: string
  /** Removes the file or drops the schema. */
  drop(): Promise<void>
}

/**
 * Creates a private database. PostgreSQL gets `create schema tg_<random>` on the shared test database
 * (several engineers test against it at once), dropped with `cascade` by {@link TestDatabase.drop}.
 *
 * @example
 * ```ts
 * const tdb = await createTestDatabase('postgres')
 * const store = await createStore({ url: tdb.url })
 * // …
 * await store.close(); await tdb.drop()
 * ```
 */
export async function createTestDatabase(dialect: TestDialect): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tg-store-'))
    return {
      dialect,
      url: `sqlite:${join(dir, 'tailguard.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    }
  }
  const schema = `tg_${randomBytes(6).toString('hex')}`
  await adminQuery(`create schema ${schema}`)
  const sep = TEST_PG_URL.includes('?') ? '&' : '?'
  return {
    dialect,
    url: `${TEST_PG_URL}${sep}options=${encodeURIComponent(`-c search_path=${schema}`)}`,
    drop: () => adminQuery(`drop schema if exists ${schema} cascade`),
  }
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_PG_URL })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

import { randomBytes } from 'node:crypto'
import pg from 'pg'

export const PG_ADMIN_URL = process.env.TG_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/**
 * Creates a throwaway PostgreSQL database (for tests that run whole collector processes, which own their
 * connection settings) and returns its URL and a drop function.
 *
 * @example const db = await tempPgDatabase(); … await db.drop()
 */
export async function tempPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `tg_e2e_${randomBytes(5).toString('hex')}`
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(PG_ADMIN_URL)
  url.pathname = `/${name}`
  return {
    url: url.href,
    async drop() {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    },
  }
}

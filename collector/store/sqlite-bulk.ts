import type { SqliteDatabase, SqliteStatement } from 'kysely'

/**
 * The comment that starts a bulk INSERT's text ({@link bulkInsertSql}): the SQLite connection keeps such statements
 * prepared ({@link withBulkStatementCache}), every other query is prepared anew as kysely does.
 */
export const BULK_MARK = '/* tg-bulk */'

/** Bound values per bulk statement at most (SQLite's default limit is 32,766). */
const MAX_VALUES_PER_STATEMENT = 4000
/** Row counts of the statements a remainder is cut into, largest first; with the full size, the only sizes used. */
const REMAINDER_ROWS = [256, 64, 16, 4, 1] as const

/**
 * How many rows each statement carries to insert `rows` rows of `columns` columns: full statements of the largest
 * size that keeps the bound values under the limit, then the rest in a few fixed smaller sizes, so that the texts
 * (and so the prepared statements kept) are few whatever the row count.
 *
 * @example statementSizes(1000, 6) // [666, 256, 64, 4, 4, 4, 1, 1]
 */
export function statementSizes(rows: number, columns: number): number[] {
  const full = Math.max(1, Math.floor(MAX_VALUES_PER_STATEMENT / columns))
  const out: number[] = []
  let left = rows
  while (left >= full) {
    out.push(full)
    left -= full
  }
  for (const size of REMAINDER_ROWS)
    while (size < full && left >= size) {
      out.push(size)
      left -= size
    }
  while (left > 0) {
    out.push(1)
    left--
  }
  return out
}

/**
 * The text of a multi-row INSERT of `rows` rows into `table`, positional parameters row by row. Table and column
 * names are the store's own (never input), quoted all the same.
 *
 * @example bulkInsertSql('tg_hist', ['step_ms', 'histogram'], 2) // '/* tg-bulk *\/ insert into "tg_hist" ("step_ms", "histogram") values (?, ?), (?, ?)'
 */
export function bulkInsertSql(table: string, columns: readonly string[], rows: number): string {
  const quote = (name: string) => `"${name.replaceAll('"', '""')}"`
  const tuple = `(${columns.map(() => '?').join(', ')})`
  return `${BULK_MARK} insert into ${quote(table)} (${columns.map(quote).join(', ')}) values ${Array(rows).fill(tuple).join(', ')}`
}

/**
 * The better-sqlite3 database as kysely's SQLite dialect takes it, keeping the prepared statement of each bulk
 * INSERT text ({@link BULK_MARK}) for reuse: preparing a 4,000-value INSERT costs about as much as running it, and
 * ingest runs the same few texts for every report. Everything else is prepared per query, as kysely does (a
 * statement that is being iterated cannot run again until it is done, and reads are not worth caching). The texts
 * kept are bounded by {@link statementSizes}: a few per table.
 *
 * @example new SqliteDialect({ database: withBulkStatementCache(new Database(path)) })
 */
export function withBulkStatementCache(db: SqliteDatabase): SqliteDatabase {
  const kept = new Map<string, SqliteStatement>()
  return {
    close: () => db.close(),
    prepare(text: string): SqliteStatement {
      if (!text.startsWith(BULK_MARK)) return db.prepare(text)
      let stmt = kept.get(text)
      if (stmt === undefined) kept.set(text, (stmt = db.prepare(text)))
      return stmt
    },
  }
}

// The SQLite bulk INSERT helpers (collector/store/sqlite-bulk.ts): few statement texts whatever the row count, every
// row in exactly one statement, and only bulk texts kept prepared. The store's own tests cover the rows that land.
import { describe, expect, it } from 'vitest'
import {
  BULK_MARK,
  bulkInsertSql,
  statementSizes,
  withBulkStatementCache,
} from '../../../collector/store/sqlite-bulk.js'
import { sqliteDriver } from '../../../collector/store/sqlite-driver.js'

describe('statementSizes', () => {
  it('covers every row once, with values under the limit and at most a handful of distinct sizes', () => {
    const sizesSeen = new Set<number>()
    for (const columns of [1, 6, 9])
      for (let rows = 0; rows <= 3000; rows += rows < 50 ? 1 : 37) {
        const sizes = statementSizes(rows, columns)
        expect(sizes.reduce((a, b) => a + b, 0)).toBe(rows)
        for (const s of sizes) {
          expect(s * columns).toBeLessThanOrEqual(4000)
          sizesSeen.add(columns * 100_000 + s)
        }
      }
    // Per column count: the full size and the five remainder sizes at most.
    expect(sizesSeen.size).toBeLessThanOrEqual(3 * 6)
  })
})

describe('withBulkStatementCache', () => {
  it('keeps bulk statements prepared and inserts through them; other texts are prepared anew', () => {
    const raw = new (sqliteDriver().Database)(':memory:')
    const db = withBulkStatementCache(raw)
    db.prepare('create table t (a integer, "b c" text)').run([])
    const text = bulkInsertSql('t', ['a', 'b c'], 2)
    expect(text.startsWith(BULK_MARK)).toBe(true)
    expect(db.prepare(text)).toBe(db.prepare(text))
    db.prepare(text).run([1, 'x', 2, 'y'])
    db.prepare(text).run([3, 'z', 4, "it's"])
    const read = 'select a, "b c" as b from t order by a'
    expect(db.prepare(read)).not.toBe(db.prepare(read))
    expect(db.prepare(read).all([])).toEqual([
      { a: 1, b: 'x' },
      { a: 2, b: 'y' },
      { a: 3, b: 'z' },
      { a: 4, b: "it's" },
    ])
    db.close()
  })
})

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ERROR_CLASSES } from '../../collector/errors.js'
import { packageRoot } from '../../collector/paths.js'

// STYLE.md section 4: every coded error is documented in the error table of docs/errors.md, with its HTTP status.
describe('error codes', () => {
  const TABLE_FILE = 'docs/errors.md'
  const doc = readFileSync(join(packageRoot(), TABLE_FILE), 'utf8')
  const table = new Map<string, number>()
  for (const m of doc.matchAll(/^\| `(TG_ERR_[A-Z_]+)` \| (\d{3}) \|/gm)) table.set(m[1]!, Number(m[2]))

  it('lists every error class with its status', () => {
    for (const Cls of ERROR_CLASSES) {
      const e = new Cls('x')
      expect(
        table.get(e.code),
        `the error table in ${TABLE_FILE} lacks ${e.code}: add a row | \`${e.code}\` | ${e.statusCode} | when … |`,
      ).toBe(e.statusCode)
    }
    expect(table.get('TG_ERR_INTERNAL')).toBe(500)
  })

  it('documents no code that does not exist', () => {
    const known = new Set<string>([...ERROR_CLASSES.map((C) => new C('x').code), 'TG_ERR_INTERNAL'])
    for (const code of table.keys())
      expect(
        known.has(code),
        `${code} is in the error table of ${TABLE_FILE} but not defined in collector/errors.ts`,
      ).toBe(true)
  })

  it('codes are unique', () => {
    const codes = ERROR_CLASSES.map((C) => new C('x').code)
    expect(new Set(codes).size).toBe(codes.length)
  })
})

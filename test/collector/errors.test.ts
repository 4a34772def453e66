import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ERROR_CLASSES } from '../../collector/errors.js'
import { packageRoot } from '../../collector/paths.js'

// STYLE.md section 4: every coded error is documented in the README's error table, with its HTTP status.
describe('error codes', () => {
  const readme = readFileSync(join(packageRoot(), 'README.md'), 'utf8')
  const table = new Map<string, number>()
  for (const m of readme.matchAll(/^\| `(TG_ERR_[A-Z_]+)` \| (\d{3}) \|/gm)) table.set(m[1]!, Number(m[2]))

  it('lists every error class with its status', () => {
    for (const Cls of ERROR_CLASSES) {
      const e = new Cls('x')
      expect(table.get(e.code), `README error table lacks ${e.code}`).toBe(e.statusCode)
    }
    expect(table.get('TG_ERR_INTERNAL')).toBe(500)
  })

  it('documents no code that does not exist', () => {
    const known = new Set<string>([...ERROR_CLASSES.map((C) => new C('x').code), 'TG_ERR_INTERNAL'])
    for (const code of table.keys())
      expect(known.has(code), `${code} is documented but not defined`).toBe(true)
  })

  it('codes are unique', () => {
    const codes = ERROR_CLASSES.map((C) => new C('x').code)
    expect(new Set(codes).size).toBe(codes.length)
  })
})

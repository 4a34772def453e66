import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { sqliteDriver } from '../../../collector/store/sqlite-driver.js'

// better-sqlite3 12 aborts processes on Node 24 (`Assertion failed: (env) != nullptr` when a statement is
// collected outside JavaScript), release 13 does not load on Node 20: the store picks per Node major.
// `.ci/node-versions.sh` runs this file on Node 20, 22 and 24.

const major = Number(process.versions.node.split('.')[0])

describe('the SQLite driver', () => {
  it('is better-sqlite3 13 (Node-API) on Node ≥ 22 and 12 on Node 20', () => {
    const d = sqliteDriver()
    if (major >= 22) {
      expect(d.module).toBe('better-sqlite3-napi')
      expect(d.version).toMatch(/^13\./)
    } else {
      expect(d.module).toBe('better-sqlite3')
      expect(d.version).toMatch(/^12\./)
    }
    const db = new d.Database(':memory:')
    expect(db.prepare('select 1 + 1 as two').get()).toEqual({ two: 2 })
    db.close()
  })

  it('lets a process that churned thousands of statements through the store exit 0', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-driver-'))
    const storeModule = fileURLToPath(new URL('../../../dist/collector/store/index.js', import.meta.url))
    const script = `
      const { createStore } = await import(${JSON.stringify(storeModule)})
      const store = await createStore({ url: 'sqlite:' + ${JSON.stringify(join(dir, 'tg.db'))} })
      for (let i = 0; i < 3000; i++) await store.services()
      globalThis.gc()
      await new Promise((r) => setTimeout(r, 200))
      globalThis.gc()
      await store.close()
      console.log('done')`
    try {
      const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
        encoding: 'utf8',
        timeout: 60_000,
      })
      expect(r.stderr).not.toMatch(/Assertion failed|FATAL ERROR/)
      expect({ status: r.status, stdout: r.stdout.trim() }).toEqual({ status: 0, stdout: 'done' })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

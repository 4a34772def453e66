import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'

// Apart from cli.ts, which the benchmarks import outside vitest.

/**
 * Temporary folders for one test file, removed after its tests: call the returned function for each.
 *
 * @example const tempDir = useTempDirs('tg-cli-'); const dir = tempDir()
 */
export function useTempDirs(prefix: string): () => string {
  const dirs: string[] = []
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })
  return () => {
    const d = mkdtempSync(join(tmpdir(), prefix))
    dirs.push(d)
    return d
  }
}

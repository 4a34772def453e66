import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The repository (package) root: the nearest folder above this file with a package.json. Works both from
 * the TypeScript sources (vitest) and from the compiled `dist/`.
 *
 * @example join(packageRoot(), 'dist', 'dashboard')
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir
    const up = dirname(dir)
    if (up === dir) return process.cwd()
    dir = up
  }
}

/** Where `npm run build` puts the dashboard. */
export const dashboardDistDir = (): string => join(packageRoot(), 'dist', 'dashboard')

/**
 * The package's version, from its package.json (read once).
 *
 * @example packageVersion() // '0.1.0'
 */
export function packageVersion(): string {
  cachedVersion ??= (
    JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }
  ).version
  return cachedVersion
}
let cachedVersion: string | undefined

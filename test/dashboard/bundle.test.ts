/**
 * The built dashboard (dist/dashboard; `npm run build` first) stays small: its JavaScript and CSS together are at
 * most 500 KB gzipped, measured with zlib at its default level over every file in dist/dashboard/assets.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'

const ASSETS = fileURLToPath(new URL('../../dist/dashboard/assets/', import.meta.url))
/** The budget from issue #17, in bytes. */
const BUDGET_BYTES = 500 * 1000

describe('dashboard bundle size', () => {
  it('is at most 500 KB of JS and CSS gzipped', () => {
    if (!existsSync(ASSETS)) throw new Error(`${ASSETS} is missing: run npm run build before this test`)
    const files = readdirSync(ASSETS).filter((f) => /\.(js|css)$/.test(f))
    expect(files.some((f) => f.endsWith('.js'))).toBe(true)
    let raw = 0
    let gzipped = 0
    for (const f of files) {
      const bytes = readFileSync(join(ASSETS, f))
      raw += bytes.length
      gzipped += gzipSync(bytes).length
    }
    console.info(
      `dashboard bundle: ${files.length} JS/CSS files, ${(raw / 1000).toFixed(1)} KB raw, ${(gzipped / 1000).toFixed(1)} KB gzipped (budget ${BUDGET_BYTES / 1000} KB)`,
    )
    expect(gzipped).toBeLessThanOrEqual(BUDGET_BYTES)
  })

  it("is React's production build, whatever NODE_ENV the build ran with", () => {
    // A build started with NODE_ENV=test (vitest's) once bundled React's development runtime: 1.1 MB, and the
    // fleet page's first load took twice as long. dashboard/vite.config.ts forces production for builds.
    const js = readdirSync(ASSETS)
      .filter((f) => f.endsWith('.js'))
      .map((f) => readFileSync(join(ASSETS, f), 'utf8'))
      .join('\n')
    expect(js).not.toContain('jsxDEV')
  })
})

#!/usr/bin/env node
// `npm start` runs this before the CLI: it compiles the TypeScript and builds the dashboard only when an input
// is newer than what the last build left in dist/, so a second `npm start` with nothing changed skips both
// (`npm run build` always builds everything). `--check` builds nothing: it exits 1 naming what is stale.
// `--touch` (run by `npm run build` right after tsc) only marks tsc's outputs current and the binary executable.
// Plain JavaScript on purpose: it must run before anything is built.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, readdirSync, statSync, utimesSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

/**
 * The two builds, the same commands as `npm run build`. TypeScript emits one .js per source into dist/ (only
 * the changed ones, as tsconfig is incremental), so each source is compared with its own output; vite rewrites
 * all of dist/dashboard, so its index.html says when it last ran.
 */
export const TARGETS = [
  {
    name: 'TypeScript',
    sources: ['bin', 'collector', 'agent', 'controller', 'migrations', 'test'],
    outDir: 'dist',
    config: 'tsconfig.json',
    command: ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'],
  },
  {
    name: 'dashboard',
    inputs: ['dashboard', 'package-lock.json'],
    output: 'dist/dashboard/index.html',
    command: [
      'node_modules/vite/bin/vite.js',
      'build',
      '--config',
      'dashboard/vite.config.ts',
      '--logLevel',
      'warn',
    ],
  },
]

const TS_SOURCE = /\.(ts|tsx|mts|cts)$/
const JS_OF = { ts: 'js', tsx: 'js', mts: 'mjs', cts: 'cjs' }

/** Every file under `paths` (relative to `root`), skipping node_modules, dist and build info. */
function filesUnder(root, paths) {
  const out = []
  const visit = (abs) => {
    let st
    try {
      st = statSync(abs)
    } catch {
      return
    }
    if (st.isDirectory()) {
      for (const name of readdirSync(abs))
        if (name !== 'node_modules' && name !== 'dist') visit(join(abs, name))
    } else if (!abs.endsWith('.tsbuildinfo')) out.push({ path: abs, mtimeMs: st.mtimeMs })
  }
  for (const p of paths) visit(join(root, p))
  return out
}

const mtime = (path) => (existsSync(path) ? statSync(path).mtimeMs : -1)

/** Each TypeScript source of `target` with the .js file tsc emits for it. */
function sourcesAndOutputs(root, target) {
  return filesUnder(root, target.sources)
    .filter((src) => TS_SOURCE.test(src.path) && !src.path.endsWith('.d.ts'))
    .map((src) => {
      const rel = relative(root, src.path)
      return {
        ...src,
        rel,
        out: join(
          root,
          target.outDir,
          rel.replace(TS_SOURCE, (_, ext) => `.${JS_OF[ext]}`),
        ),
      }
    })
}

/** Why `target` must be rebuilt in `root`, or null when its outputs are newer than every input. */
export function staleReason(root, target) {
  if (target.sources) {
    let newestOutput = 0
    for (const { rel, out, mtimeMs } of sourcesAndOutputs(root, target)) {
      const built = mtime(out)
      if (built < 0) return `${relative(root, out)} is missing`
      if (mtimeMs > built) return `${rel} changed`
      newestOutput = Math.max(newestOutput, built)
    }
    if (mtime(join(root, target.config)) > newestOutput) return `${target.config} changed`
    return null
  }
  const built = mtime(join(root, target.output))
  if (built < 0) return `${target.output} is missing`
  for (const input of filesUnder(root, target.inputs))
    if (input.mtimeMs > built) return `${relative(root, input.path)} changed`
  return null
}

/**
 * tsc skips sources whose text did not change (a touch, a checkout, a merge): mark their outputs current so
 * that the next `npm start` does not rebuild for nothing, and make the binary executable (npm link and global
 * installs run it through a symlink).
 */
function markCurrent(target) {
  const now = new Date()
  for (const { out, mtimeMs } of sourcesAndOutputs(ROOT, target))
    if (existsSync(out) && mtimeMs > mtime(out)) utimesSync(out, now, now)
  const bin = join(ROOT, 'dist', 'bin', 'tailguard.js')
  if (existsSync(bin)) chmodSync(bin, 0o755)
}

function main(check) {
  if (process.argv.includes('--touch')) {
    markCurrent(TARGETS[0])
    return
  }
  let stale = false
  for (const target of TARGETS) {
    const reason = staleReason(ROOT, target)
    if (reason === null) continue
    stale = true
    process.stderr.write(`build: ${target.name} (${reason})\n`)
    if (check) continue
    const r = spawnSync(process.execPath, target.command, { cwd: ROOT, stdio: 'inherit' })
    if (r.status !== 0) process.exit(r.status ?? 1)
    if (target.sources) markCurrent(target)
  }
  if (check && stale) process.exit(1)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1])
  main(process.argv.includes('--check'))

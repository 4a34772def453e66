import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import { ConfigInvalid } from '../../collector/errors.js'
import { parseConfigText, resolveConfig } from '../../collector/config/index.js'
import { formatProblems, parseSloText } from '../../collector/slo/index.js'
import { packageRoot } from '../../collector/paths.js'
import { assertBuilt, CLI } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'
import type { DocBlock } from './blocks.js'
import {
  DOC_PORTS,
  headingAnchors,
  parseLinks,
  SHELL_LANGS,
  docFiles,
  mapPorts,
  parseBlocks,
  readDocBlocks,
  startsServer,
  yamlKind,
} from './blocks.js'
import { installShim, PREAMBLE } from './shim.js'

// Every example in README.md and docs/*.md is executed (see docs/testing.md, "The docs are tested"):
// ```sh blocks run in bash against the built CLI, ```yaml blocks go through the config or SLO loader,
// ```json blocks must parse. A block opts out only with `<!-- not-run: reason -->` right above it; those
// are listed below as skipped tests, with their reasons.

const ROOT = packageRoot()
const { blocks, problems } = readDocBlocks(ROOT)
const where = (b: DocBlock) => `${b.file}:${b.line}`

describe('docs: block markers', () => {
  it('every not-run marker sits right above a fenced block and gives a reason', () => {
    expect(problems.map((p) => `${p.file}:${p.line}: ${p.message}`)).toEqual([])
  })
  it('README.md and docs/ have shell examples to run', () => {
    expect(docFiles(ROOT)).toContain('README.md')
    expect(blocks.filter((b) => SHELL_LANGS.has(b.lang) && !b.notRun).length).toBeGreaterThan(10)
  })
  for (const b of blocks.filter((b) => b.notRun))
    it.skip(`${where(b)} (${b.lang}) not run: ${b.notRun}`, () => {})
})

describe('docs: links', () => {
  const links = docFiles(ROOT).flatMap((f) => parseLinks(f, readFileSync(join(ROOT, f), 'utf8')))
  // Pages other parts are writing (the README's table links them ahead): listed, not failed, until they land.
  const pending = links.filter((l) => !existsSync(join(ROOT, l.target)) && /^docs\/[^/]+\.md$/.test(l.target))
  for (const target of [...new Set(pending.map((l) => l.target))])
    it.skip(`${target} is linked but not written yet`, () => {})
  it('every other relative link points at a file that exists, and at a heading that exists', () => {
    const broken: string[] = []
    for (const l of links) {
      if (pending.includes(l)) continue
      const path = join(ROOT, l.target)
      if (!existsSync(path)) broken.push(`${l.file}:${l.line}: ${l.target} does not exist`)
      else if (l.anchor && l.target.endsWith('.md')) {
        if (!headingAnchors(readFileSync(path, 'utf8')).has(l.anchor))
          broken.push(`${l.file}:${l.line}: ${l.target} has no heading #${l.anchor}`)
      }
    }
    expect(broken).toEqual([])
  })
  it('reads links and anchors as GitHub does', () => {
    expect(parseLinks('docs/a.md', 'x [b](b.md#y) [r](../README.md) [s](#z) [w](https://x.org)')).toEqual([
      { file: 'docs/a.md', line: 1, target: 'docs/b.md', anchor: 'y' },
      { file: 'docs/a.md', line: 1, target: 'README.md', anchor: null },
      { file: 'docs/a.md', line: 1, target: 'docs/a.md', anchor: 'z' },
    ])
    expect([...headingAnchors('## API (read scope)\n## Durability: acknowledged = committed\n')]).toEqual([
      'api-read-scope',
      'durability-acknowledged--committed',
    ])
  })
})

describe('docs: yaml examples load', () => {
  for (const b of blocks.filter((b) => (b.lang === 'yaml' || b.lang === 'yml') && !b.notRun)) {
    const kind = yamlKind(b.text)
    const what = {
      config: 'config file',
      slo: 'SLO file',
      kubernetes: 'Kubernetes manifest',
      'prometheus-rules': 'Prometheus rule file',
    }[kind]
    it(`${where(b)} is a valid ${what}`, () => {
      if (kind === 'prometheus-rules') {
        // Prometheus's rule file shape: named groups of rules, each an alert or a recording rule with an expr.
        const v = parseAllDocuments(b.text)[0]!.toJS() as {
          groups?: Array<{ name?: unknown; rules?: Array<Record<string, unknown>> }>
        }
        expect(v.groups?.length).toBeGreaterThan(0)
        for (const g of v.groups!) {
          expect(typeof g.name).toBe('string')
          for (const r of g.rules ?? []) {
            expect(typeof (r.alert ?? r.record)).toBe('string')
            expect(typeof r.expr).toBe('string')
            expect(
              Object.keys(r).filter(
                (k) =>
                  !['alert', 'record', 'expr', 'for', 'labels', 'annotations', 'keep_firing_for'].includes(k),
              ),
            ).toEqual([])
          }
        }
      } else if (kind === 'kubernetes') {
        // Not ours to load: it must parse, and every document must name its apiVersion and kind.
        for (const doc of parseAllDocuments(b.text)) {
          expect(doc.errors.map(String)).toEqual([])
          const v = doc.toJS() as { apiVersion?: unknown; kind?: unknown } | null
          expect(typeof v?.apiVersion === 'string' && typeof v.kind === 'string').toBe(true)
        }
      } else if (kind === 'slo') {
        const r = parseSloText(b.text, where(b))
        expect(r.ok ? '' : formatProblems(r.problems)).toBe('')
      } else {
        try {
          resolveConfig({ file: parseConfigText(b.text, where(b)), fileName: where(b), env: {} })
        } catch (err) {
          if (err instanceof ConfigInvalid) expect.fail(`${where(b)}: ${err.message}`)
          throw err
        }
      }
    })
  }
})

describe('docs: json examples parse', () => {
  for (const b of blocks.filter((b) => b.lang === 'json' && !b.notRun))
    it(`${where(b)} parses`, () => {
      expect(() => JSON.parse(b.text)).not.toThrow()
    })
})

describe('docs: parsing', () => {
  it('finds blocks, their language, line and marker', () => {
    const md = 'x\n<!-- not-run: needs a GPU -->\n```sh\nnvidia-smi\n```\n\n```yaml\na: 1\n```\n'
    const r = parseBlocks('t.md', md)
    expect(r.problems).toEqual([])
    expect(r.blocks.map((b) => [b.lang, b.line, b.notRun, b.text])).toEqual([
      ['sh', 3, 'needs a GPU', 'nvidia-smi\n'],
      ['yaml', 7, null, 'a: 1\n'],
    ])
    expect(parseBlocks('t.md', '<!-- not-run -->\n```sh\nx\n```\n').problems[0]!.message).toMatch(
      /without a reason/,
    )
    expect(parseBlocks('t.md', '<!-- not-run: r -->\n\n```sh\nx\n```\n').problems[0]!.message).toMatch(
      /not directly above/,
    )
  })
  it('decides the yaml loader by content, maps ports, spots servers', () => {
    expect(yamlKind('apiVersion: openslo/v1\nkind: SLO\n')).toBe('slo')
    expect(yamlKind('version: 1\nslos:\n  - name: a\n')).toBe('slo')
    expect(yamlKind('version: 1\ncollector: { port: 7070 }\n')).toBe('config')
    expect(yamlKind('groups:\n  - name: a\n    rules: []\n')).toBe('prometheus-rules')
    expect(mapPorts('a :7070 b 4318 c 17070', { 7070: 1, 4318: 2 })).toBe('a :1 b 2 c 17070')
    expect(startsServer('npx tailguard start\n')).toBe(true)
    expect(startsServer('node dist/bin/tailguard.js collector --db x\n')).toBe(true)
    expect(startsServer('tailguard sim --trace t.csv\n# tailguard start\n')).toBe(false)
  })
})

interface PageRun {
  readonly dir: string
  readonly pids: string
  readonly ports: Record<number, number>
}

const pages = [...new Set(blocks.map((b) => b.file))].filter((f) =>
  blocks.some((b) => b.file === f && SHELL_LANGS.has(b.lang) && !b.notRun),
)

describe('docs: shell examples run', () => {
  let base = ''
  let bin = ''
  let grpc = false
  let keda: string[] = []
  const runs: PageRun[] = []

  beforeAll(() => {
    assertBuilt()
    base = mkdtempSync(join(tmpdir(), 'tg-docs-'))
    bin = join(base, 'bin')
    installShim(bin)
    const help = spawnSync(process.execPath, [CLI, 'agent', '--help'], { encoding: 'utf8' })
    grpc = help.stdout.includes('--otlp-grpc-port')
    keda = ['start', 'collector'].filter((c) =>
      spawnSync(process.execPath, [CLI, c, '--help'], { encoding: 'utf8' }).stdout.includes('--keda-port'),
    )
  })

  afterAll(async () => {
    for (const r of runs) await stopAll(r.pids)
    if (base) rmSync(base, { recursive: true, force: true })
  })

  for (const page of pages) {
    it.concurrent(`${page}: every sh block runs`, { timeout: 300_000 }, async () => {
      const dir = join(base, page.replace(/[/.]/g, '_'))
      mkdirSync(dir)
      for (const link of ['dist', 'node_modules', 'controller', 'test', 'deploy'])
        symlinkSync(join(ROOT, link), join(dir, link))
      const ports: Record<number, number> = {}
      for (const p of DOC_PORTS) ports[p] = await freePort()
      const run: PageRun = { dir, pids: join(dir, '.pids'), ports }
      runs.push(run)
      writeFileSync(run.pids, '')
      // Only what the docs set themselves: no token or database from the developer's shell.
      const inherited = Object.fromEntries(
        Object.entries(process.env).filter(([k]) => !k.startsWith('TAILGUARD_')),
      )
      const env = {
        ...inherited,
        TG_DOCS_BIN: bin,
        TG_DOCS_CLI: CLI,
        TG_DOCS_DIR: dir,
        TG_DOCS_PIDS: run.pids,
        TG_DOCS_STATE: join(dir, '.state'),
        TG_DOCS_PORTS: JSON.stringify({ ...ports, grpc, keda }),
      }
      const mine = blocks.filter((b) => b.file === page && SHELL_LANGS.has(b.lang) && !b.notRun)
      try {
        // A page that talks to a collector or an agent without starting one gets `tailguard start`.
        const text = mine.map((b) => b.text).join('\n')
        if (!startsServer(text) && DOC_PORTS.some((p) => text.includes(`:${p}`)))
          await runBash(`tailguard start --no-demo`, env, dir, `${page} (collector for the page)`)
        for (const b of mine) await runBash(mapPorts(shellOf(b), ports), env, dir, where(b))
      } finally {
        await stopAll(run.pids)
      }
    })
  }
})

/** The commands of a block: `$ ` prompt lines only when the block shows a session with output. */
function shellOf(b: DocBlock): string {
  const lines = b.text.split('\n')
  if (!lines.some((l) => l.startsWith('$ '))) return b.text
  return lines
    .filter((l) => l.startsWith('$ '))
    .map((l) => l.slice(2))
    .join('\n')
}

function runBash(script: string, env: NodeJS.ProcessEnv, cwd: string, label: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', PREAMBLE + '\n' + script], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), 150_000)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve()
      else
        reject(
          new Error(
            `${label}: the example failed (exit ${code ?? signal}).\n--- block ---\n${script}\n--- output ---\n${out.slice(-4000)}`,
          ),
        )
    })
  })
}

/** Stops the long-running commands a page started (SIGTERM, then SIGKILL after 5 s), by pid. */
async function stopAll(pidsFile: string): Promise<void> {
  if (!existsSync(pidsFile)) return
  const pids = readFileSync(pidsFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => Number(l.split(' ')[0]))
  writeFileSync(pidsFile, '')
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0)
      return true
    } catch {
      return false
    }
  }
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGTERM')
  const end = Date.now() + 5000
  while (pids.some(alive) && Date.now() < end) await new Promise((r) => setTimeout(r, 100))
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL')
}

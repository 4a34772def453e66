import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** One fenced code block of a Markdown file. */
export interface DocBlock {
  /** Path relative to the package root, e.g. `docs/otlp.md`. */
  readonly file: string
  /** 1-based line of the opening fence. */
  readonly line: number
  /** The info string's first word (`sh`, `yaml`, `json`, `ts`, …); '' when none. */
  readonly lang: string
  readonly text: string
  /** The reason of a `<!-- not-run: reason -->` marker on the line above the fence, else null. */
  readonly notRun: string | null
}

/** A marker that does not sit right above a fence, or has no reason. */
export interface MarkerProblem {
  readonly file: string
  readonly line: number
  readonly message: string
}

const MARKER = /^<!--\s*not-run\b:?\s*(.*?)\s*-->\s*$/

/**
 * Splits Markdown into its fenced blocks (fences at the start of a line, ``` only), with the not-run
 * marker of each.
 *
 * @example parseBlocks('docs/x.md', '```sh\ntailguard --version\n```\n') // [{ lang: 'sh', line: 1, … }]
 */
export function parseBlocks(
  file: string,
  markdown: string,
): { blocks: DocBlock[]; problems: MarkerProblem[] } {
  const lines = markdown.split('\n')
  const blocks: DocBlock[] = []
  const problems: MarkerProblem[] = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const marker = MARKER.exec(line)
    if (marker) {
      if (!marker[1]) problems.push({ file, line: i + 1, message: 'not-run marker without a reason' })
      if (!lines[i + 1]?.startsWith('```'))
        problems.push({ file, line: i + 1, message: 'not-run marker not directly above a fenced block' })
      continue
    }
    const open = /^```(\S*)/.exec(line)
    if (!open) continue
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) body.push(lines[i]!)
    const above = start > 0 ? MARKER.exec(lines[start - 1]!) : null
    blocks.push({
      file,
      line: start + 1,
      lang: open[1]!.toLowerCase(),
      text: body.join('\n') + '\n',
      notRun: above ? above[1] || '(no reason)' : null,
    })
  }
  return { blocks, problems }
}

/** README.md and every docs/*.md, relative to `root`, in a stable order. */
export function docFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`)
  return ['README.md', ...docs]
}

/**
 * Every block of README.md and docs/*.md.
 *
 * @example const { blocks } = readDocBlocks(packageRoot())
 */
export function readDocBlocks(root: string): { blocks: DocBlock[]; problems: MarkerProblem[] } {
  const blocks: DocBlock[] = []
  const problems: MarkerProblem[] = []
  for (const file of docFiles(root)) {
    const r = parseBlocks(file, readFileSync(join(root, file), 'utf8'))
    blocks.push(...r.blocks)
    problems.push(...r.problems)
  }
  return { blocks, problems }
}

/** Shell languages whose blocks are run. */
export const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'console'])

/** Commands of the CLI that keep running until stopped (started, waited on until ready, then stopped). */
export const LONG_RUNNING = ['start', 'collector', 'agent', 'serve-model', 'scrape', 'controller']

/** The port numbers the docs use, replaced by free ones when a page runs. */
export const DOC_PORTS = [7070, 4318, 4317] as const

/**
 * Which YAML loader a block is for, decided by its content: SLO files (tailguard `slos:` or OpenSLO)
 * or the config file.
 *
 * @example yamlKind('version: 1\nslos: []\n') // 'slo'
 */
export function yamlKind(text: string): 'slo' | 'config' | 'kubernetes' | 'prometheus-rules' {
  if (/^apiVersion:\s*openslo\//m.test(text) || /^slos:/m.test(text)) return 'slo'
  if (/^groups:/m.test(text)) return 'prometheus-rules'
  if (/^apiVersion:/m.test(text) && /^kind:/m.test(text)) return 'kubernetes'
  return 'config'
}

/**
 * Replaces the docs' well-known ports with the given ones (whole numbers only).
 *
 * @example mapPorts('curl http://127.0.0.1:7070/x', { 7070: 41000 }) // 'curl http://127.0.0.1:41000/x'
 */
export function mapPorts(text: string, ports: Readonly<Record<number, number>>): string {
  return text.replace(/\b(\d{4,5})\b/g, (m) => String(ports[Number(m)] ?? m))
}

/**
 * True when a page's runnable shell text starts one of the long-running commands itself.
 *
 * @example startsServer('npx tailguard start\n') // true
 */
export function startsServer(shellText: string): boolean {
  const re = new RegExp(
    `(^|[\\s;&|(])(npx\\s+)?(tailguard|node\\s+dist/bin/tailguard\\.js)\\s+(${LONG_RUNNING.join('|')})\\b`,
    'm',
  )
  return shellText.split('\n').some((l) => !l.trimStart().startsWith('#') && re.test(l))
}

/** A relative Markdown link of a doc file. */
export interface DocLink {
  readonly file: string
  readonly line: number
  /** The target path, relative to the package root (empty for a link within the same file). */
  readonly target: string
  readonly anchor: string | null
}

/**
 * The relative links (`[text](path#anchor)`) of a Markdown file outside its code blocks, with targets
 * resolved against the file's folder.
 *
 * @example parseLinks('docs/a.md', 'see [b](b.md#x)') // [{ target: 'docs/b.md', anchor: 'x', … }]
 */
export function parseLinks(file: string, markdown: string): DocLink[] {
  const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : ''
  const out: DocLink[] = []
  let fence = false
  markdown.split('\n').forEach((line, i) => {
    if (line.startsWith('```')) fence = !fence
    if (fence) return
    for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const href = m[1]!
      if (/^[a-z]+:/i.test(href)) continue
      const [path, anchor] = href.split('#') as [string, string | undefined]
      const parts = (path ? dir + path : file).split('/')
      const norm: string[] = []
      for (const p of parts) {
        if (p === '..') norm.pop()
        else if (p !== '.') norm.push(p)
      }
      out.push({ file, line: i + 1, target: norm.join('/'), anchor: anchor ?? null })
    }
  })
  return out
}

/**
 * GitHub's anchors of a Markdown file's headings (lowercase, punctuation dropped, spaces to hyphens).
 *
 * @example headingAnchors('## API (read scope)') // Set { 'api-read-scope' }
 */
export function headingAnchors(markdown: string): Set<string> {
  const out = new Set<string>()
  let fence = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fence = !fence
    const m = fence ? null : /^#{1,6}\s+(.*)$/.exec(line)
    if (!m) continue
    out.add(
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    )
  }
  return out
}

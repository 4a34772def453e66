/**
 * Reads SLO definitions from files: tailguard's own YAML (`version: 1` + `slos:`) and OpenSLO
 * (`apiVersion: openslo/v1`, kinds SLO and SLI), told apart by content. Every problem names its file,
 * line and field; nothing here throws for bad input.
 */
import { readFile, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { LineCounter, parseAllDocuments } from 'yaml'
import type { Document } from 'yaml'
import { validateSlo } from './definition.js'
import type { FieldProblem, RawSlo, SloDefinition } from './definition.js'

/** One problem in an SLO file. `line` is 1-based; `field` is a dotted path such as `slos[1].thresholdMs`. */
export interface SloFileProblem {
  readonly file: string
  readonly line: number
  readonly field: string
  readonly message: string
}

export type SloLoadResult =
  | { readonly ok: true; readonly slos: readonly SloDefinition[]; readonly files: readonly string[] }
  | { readonly ok: false; readonly problems: readonly SloFileProblem[] }

/** The tailguard SLO file format version this build reads. */
export const SLO_FILE_VERSION = 1

type Path = readonly (string | number)[]

/**
 * Formats a field path for problems.
 *
 * @example fieldText(['slos', 1, 'selector', 'service']) // 'slos[1].selector.service'
 */
export const fieldText = (path: Path): string =>
  path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '') ||
  '(document)'

/**
 * Formats problems one per line, `file:line: field: message`, for logs and the CLI.
 *
 * @example formatProblems(result.problems) // 'slos.yaml:7: slos[0].thresholdMs: must be a number …'
 */
export const formatProblems = (problems: readonly SloFileProblem[]): string =>
  problems.map((p) => `${p.file}:${p.line}: ${p.field}: ${p.message}`).join('\n')

interface ParsedDoc {
  readonly file: string
  readonly doc: Document.Parsed
  readonly lines: LineCounter
  readonly value: unknown
}

function lineOf(d: ParsedDoc, path: Path): number {
  for (let n = path.length; n >= 0; n--) {
    const node = d.doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined
    if (node && typeof node === 'object' && node.range) return d.lines.linePos(node.range[0]).line
    if (n === 0 && d.doc.contents?.range) return d.lines.linePos(d.doc.contents.range[0]).line
  }
  return 1
}

function toFileProblem(d: ParsedDoc, p: FieldProblem): SloFileProblem {
  return { file: d.file, line: lineOf(d, p.path), field: fieldText(p.path), message: p.message }
}

/**
 * Parses SLO definitions from the text of one file (either format). `file` is only used in problems.
 * OpenSLO SLOs may refer to SLIs in `extraSlis` (from other files of the same folder).
 *
 * @example
 * ```ts
 * const r = parseSloText(await readFile('slos.yaml', 'utf8'), 'slos.yaml')
 * if (!r.ok) logger.error(formatProblems(r.problems))
 * ```
 */
export function parseSloText(text: string, file: string): SloLoadResult {
  return parseDocs(splitDocs(text, file))
}

/** Most alias expansions one YAML document may make (the `yaml` package's guard against alias bombs). */
const YAML_MAX_ALIAS_COUNT = 100

/** Why a YAML document could not be turned into values: an unresolved alias or too many alias expansions. */
function yamlValueError(err: unknown): string {
  const m = err instanceof Error ? err.message.split('\n')[0]! : String(err)
  if (/alias count/i.test(m))
    return `YAML aliases expand too far (more than ${YAML_MAX_ALIAS_COUNT} expansions): refused as an alias bomb`
  if (/unresolved alias|alias/i.test(m)) return `YAML alias: ${m}`
  return `YAML: ${m}`
}

function splitDocs(text: string, file: string): { docs: ParsedDoc[]; problems: SloFileProblem[] } {
  const lines = new LineCounter()
  const docs: ParsedDoc[] = []
  const problems: SloFileProblem[] = []
  for (const doc of parseAllDocuments(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true })) {
    if (doc.errors.length > 0) {
      for (const e of doc.errors)
        problems.push({
          file,
          line: lines.linePos(e.pos[0]).line,
          field: '(yaml)',
          message: e.message.split('\n')[0] ?? 'invalid YAML',
        })
      continue
    }
    if (doc.contents === null) continue
    let value: unknown
    try {
      // Undefined aliases and alias bombs (aliases expanding past maxAliasCount) throw here.
      value = doc.toJS({ maxAliasCount: YAML_MAX_ALIAS_COUNT })
    } catch (err) {
      problems.push({
        file,
        line: doc.range ? lines.linePos(doc.range[0]).line : 1,
        field: '(yaml)',
        message: yamlValueError(err),
      })
      continue
    }
    docs.push({ file, doc, lines, value })
  }
  return { docs, problems }
}

function parseDocs(input: { docs: ParsedDoc[]; problems: SloFileProblem[] }): SloLoadResult {
  const problems = [...input.problems]
  const slos: SloDefinition[] = []
  const openSlos: ParsedDoc[] = []
  const slis = new Map<string, ParsedDoc>()
  const files = new Set<string>()
  for (const d of input.docs) {
    files.add(d.file)
    const v = d.value as Record<string, unknown> | null
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      problems.push(
        toFileProblem(d, { path: [], message: 'expected a mapping (tailguard `slos:` or OpenSLO document)' }),
      )
      continue
    }
    const api = v['apiVersion']
    if (typeof api === 'string' && api.startsWith('openslo/')) {
      if (api !== 'openslo/v1') {
        problems.push(
          toFileProblem(d, {
            path: ['apiVersion'],
            message: `unsupported OpenSLO version '${api}' (expected openslo/v1)`,
          }),
        )
        continue
      }
      if (v['kind'] === 'SLO') openSlos.push(d)
      else if (v['kind'] === 'SLI') {
        const name = (v['metadata'] as Record<string, unknown> | undefined)?.['name']
        if (typeof name !== 'string')
          problems.push(toFileProblem(d, { path: ['metadata', 'name'], message: 'is required' }))
        else slis.set(name, d)
      }
      // Other OpenSLO kinds (Service, DataSource, AlertPolicy…) carry nothing tailguard evaluates.
      continue
    }
    if ('slos' in v || 'version' in v) {
      const r = parseTailguardDoc(d)
      slos.push(...r.slos)
      problems.push(...r.problems)
      continue
    }
    problems.push(
      toFileProblem(d, {
        path: [],
        message:
          'neither a tailguard SLO file (version: 1, slos: […]) nor an OpenSLO document (apiVersion: openslo/v1)',
      }),
    )
  }
  for (const d of openSlos) {
    const r = convertOpenSlo(d, slis)
    if (r.ok) {
      const v = validateSlo(r.raw)
      if (v.ok) slos.push(v.slo)
      else
        problems.push(
          ...v.problems.map((p) => toFileProblem(d, { path: mapBack(p.path, r.paths), message: p.message })),
        )
    } else problems.push(...r.problems)
  }
  const seen = new Map<string, number>()
  for (const s of slos) seen.set(s.name, (seen.get(s.name) ?? 0) + 1)
  for (const [name, n] of seen)
    if (n > 1)
      problems.push({
        file: [...files].join(', '),
        line: 1,
        field: 'name',
        message: `SLO '${name}' is defined ${n} times`,
      })
  if (problems.length > 0) return { ok: false, problems }
  return { ok: true, slos, files: [...files] }
}

function parseTailguardDoc(d: ParsedDoc): { slos: SloDefinition[]; problems: SloFileProblem[] } {
  const v = d.value as Record<string, unknown>
  const problems: SloFileProblem[] = []
  const slos: SloDefinition[] = []
  if (v['version'] !== SLO_FILE_VERSION) {
    problems.push(
      toFileProblem(d, {
        path: ['version'],
        message: `unsupported tailguard SLO file version '${String(v['version'])}' (this build reads version ${SLO_FILE_VERSION})`,
      }),
    )
    return { slos, problems }
  }
  for (const k of Object.keys(v))
    if (k !== 'version' && k !== 'slos')
      problems.push(toFileProblem(d, { path: [k], message: 'unknown field (expected version, slos)' }))
  const list = v['slos']
  if (!Array.isArray(list)) {
    problems.push(toFileProblem(d, { path: ['slos'], message: 'must be a list of SLOs' }))
    return { slos, problems }
  }
  list.forEach((entry, i) => {
    const r = validateSlo(entry, ['slos', i])
    if (r.ok) slos.push(r.slo)
    else problems.push(...r.problems.map((p) => toFileProblem(d, p)))
  })
  return { slos, problems }
}

type Rec = Record<string, unknown>
const rec = (v: unknown): Rec | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Rec) : undefined

/** Where each tailguard field came from in the OpenSLO document, for problems found after conversion. */
type PathMap = Map<string, Path>

function mapBack(path: Path, paths: PathMap): Path {
  for (let n = path.length; n > 0; n--) {
    const hit = paths.get(path.slice(0, n).join('.'))
    if (hit) return hit
  }
  return ['spec']
}

const OPENSLO_WINDOWS: Readonly<Record<string, string>> = {
  '7d': '7d',
  '1w': '7d',
  '28d': '28d',
  '4w': '28d',
  '30d': '30d',
}

function convertOpenSlo(
  d: ParsedDoc,
  slis: Map<string, ParsedDoc>,
): { ok: true; raw: RawSlo; paths: PathMap } | { ok: false; problems: SloFileProblem[] } {
  const problems: SloFileProblem[] = []
  const bad = (doc: ParsedDoc, path: Path, message: string) =>
    problems.push(toFileProblem(doc, { path, message }))
  const v = d.value as Rec
  const meta = rec(v['metadata'])
  const spec = rec(v['spec'])
  const paths: PathMap = new Map<string, Path>([['name', ['metadata', 'name']]])
  const raw: Rec = {}
  if (!meta || typeof meta['name'] !== 'string') bad(d, ['metadata', 'name'], 'is required')
  else raw['name'] = meta['name']
  if (!spec) {
    bad(d, ['spec'], 'is required')
    return { ok: false, problems }
  }
  const description = spec['description'] ?? meta?.['displayName']
  if (typeof description === 'string') raw['description'] = description
  if (meta && rec(meta['labels'])) {
    const labels: Rec = {}
    for (const [k, val] of Object.entries(rec(meta['labels'])!))
      labels[k] = Array.isArray(val) ? val.map(String).join(',') : String(val)
    raw['labels'] = labels
    paths.set('labels', ['metadata', 'labels'])
  }

  // Indicator: inline or by reference.
  let sliDoc: ParsedDoc = d
  let sliBase: Path = ['spec', 'indicator', 'spec']
  let sliSpec: Rec | undefined
  if (spec['indicatorRef'] !== undefined) {
    const ref = spec['indicatorRef']
    const target = typeof ref === 'string' ? slis.get(ref) : undefined
    if (!target) bad(d, ['spec', 'indicatorRef'], `no SLI named '${String(ref)}' in the loaded files`)
    else {
      sliDoc = target
      sliBase = ['spec']
      sliSpec = rec((target.value as Rec)['spec'])
      if (!sliSpec) bad(target, ['spec'], 'is required')
    }
  } else if (rec(spec['indicator'])) {
    sliSpec = rec(rec(spec['indicator'])!['spec'])
    if (!sliSpec) bad(d, ['spec', 'indicator', 'spec'], 'is required')
  } else bad(d, ['spec', 'indicator'], 'is required (an inline SLI, or indicatorRef)')

  // Objective (tailguard evaluates one objective per SLO).
  const objectives = spec['objectives']
  let objective: Rec | undefined
  if (!Array.isArray(objectives) || objectives.length === 0)
    bad(d, ['spec', 'objectives'], 'must be a list with one objective')
  else {
    if (objectives.length > 1)
      bad(
        d,
        ['spec', 'objectives', 1],
        'tailguard evaluates one objective per SLO; split this into several SLOs',
      )
    objective = rec(objectives[0])
    if (!objective) bad(d, ['spec', 'objectives', 0], 'must be a mapping')
  }
  if (objective) {
    const target =
      objective['target'] ??
      (typeof objective['targetPercent'] === 'number' ? objective['targetPercent'] / 100 : undefined)
    raw['objective'] = target
    paths.set('objective', [
      'spec',
      'objectives',
      0,
      objective['target'] !== undefined ? 'target' : 'targetPercent',
    ])
    if (target === undefined) bad(d, ['spec', 'objectives', 0, 'target'], 'is required (a ratio in (0, 1))')
  }

  // Window.
  const tw = spec['timeWindow']
  const w = Array.isArray(tw) ? rec(tw[0]) : undefined
  if (!w) bad(d, ['spec', 'timeWindow'], 'must be a list with one time window')
  else {
    paths.set('window', ['spec', 'timeWindow', 0, 'duration'])
    const duration = String(w['duration'] ?? '')
    if (w['isRolling'] === false || (w['isRolling'] === undefined && w['calendar'] !== undefined)) {
      if (duration !== '1M')
        bad(
          d,
          ['spec', 'timeWindow', 0, 'duration'],
          `calendar windows must be 1M (a calendar month), got '${duration}'`,
        )
      const tz = rec(w['calendar'])?.['timeZone']
      if (tz !== undefined && tz !== 'UTC' && tz !== 'Etc/UTC')
        bad(
          d,
          ['spec', 'timeWindow', 0, 'calendar', 'timeZone'],
          `tailguard evaluates calendar months in UTC, got '${String(tz)}'`,
        )
      raw['window'] = 'calendar-month'
    } else {
      const mapped = OPENSLO_WINDOWS[duration]
      if (!mapped)
        bad(
          d,
          ['spec', 'timeWindow', 0, 'duration'],
          `rolling windows must be 7d, 28d or 30d (or 1w, 4w), got '${duration}'`,
        )
      else raw['window'] = mapped
    }
  }

  // Budgeting.
  const method = spec['budgetingMethod'] ?? 'Occurrences'
  if (method === 'Timeslices') {
    raw['budgeting'] = 'timeslices'
    raw['timeslice'] = {
      window: objective?.['timeSliceWindow'] ?? '1m',
      target: objective?.['timeSliceTarget'],
    }
    paths.set('timeslice.target', ['spec', 'objectives', 0, 'timeSliceTarget'])
    paths.set('timeslice.window', ['spec', 'objectives', 0, 'timeSliceWindow'])
    paths.set('timeslice', ['spec', 'objectives', 0])
    if (objective?.['timeSliceTarget'] === undefined)
      bad(d, ['spec', 'objectives', 0, 'timeSliceTarget'], 'is required with budgetingMethod: Timeslices')
  } else if (method !== 'Occurrences')
    bad(d, ['spec', 'budgetingMethod'], `must be Occurrences or Timeslices, got '${String(method)}'`)

  // Indicator body.
  if (sliSpec) {
    const threshold = rec(sliSpec['thresholdMetric'])
    const ratio = rec(sliSpec['ratioMetric'])
    const selector: Rec = {}
    const setSelector = (src: Rec, base: Path) => {
      for (const k of ['service', 'model', 'version'] as const)
        if (src[k] !== undefined) {
          selector[k] = src[k]
          paths.set(`selector.${k}`, [...base, k])
        }
    }
    const source = (m: Rec | undefined, base: Path): Rec | undefined => {
      const ms = rec(m?.['metricSource'])
      if (!ms) return void bad(sliDoc, [...base, 'metricSource'], 'is required')
      if (ms['type'] !== 'tailguard')
        return void bad(
          sliDoc,
          [...base, 'metricSource', 'type'],
          `tailguard reads only its own data (type: tailguard), got '${String(ms['type'])}'`,
        )
      const s = rec(ms['spec'])
      if (!s)
        return void bad(
          sliDoc,
          [...base, 'metricSource', 'spec'],
          'is required (service, model, version, phase)',
        )
      return s
    }
    if (threshold) {
      const base = [...sliBase, 'thresholdMetric']
      const s = source(threshold, base)
      if (s) {
        setSelector(s, [...base, 'metricSource', 'spec'])
        const phase = String(s['phase'] ?? 'total')
        raw['kind'] = phase === 'ttft' || phase === 'tpot' ? 'llm' : 'latency'
        raw[raw['kind'] === 'llm' ? 'metric' : 'phase'] = phase
        paths.set('phase', [...base, 'metricSource', 'spec', 'phase'])
        paths.set('metric', [...base, 'metricSource', 'spec', 'phase'])
      }
      if (objective) {
        const op = objective['op']
        if (op !== 'lte' && op !== 'lt')
          bad(
            d,
            ['spec', 'objectives', 0, 'op'],
            `latency objectives count values at or under the threshold: use lte (or lt), got '${String(op)}'`,
          )
        raw['thresholdMs'] = objective['value']
        paths.set('thresholdMs', ['spec', 'objectives', 0, 'value'])
      }
    } else if (ratio) {
      const base = [...sliBase, 'ratioMetric']
      raw['kind'] = 'availability'
      const statuses = (m: unknown, p: Path, dflt: string[]): string[] | undefined => {
        const s = source(rec(m), p)
        if (!s) return undefined
        setSelector(s, [...p, 'metricSource', 'spec'])
        const st = s['status'] ?? dflt
        const list = Array.isArray(st) ? st.map(String) : [String(st)]
        for (const x of list)
          if (x !== 'ok' && x !== 'error' && x !== 'shed')
            bad(
              sliDoc,
              [...p, 'metricSource', 'spec', 'status'],
              `must be ok, error or shed (or a list), got '${x}'`,
            )
        return list
      }
      const total = statuses(ratio['total'], [...base, 'total'], ['ok', 'error', 'shed'])
      if (ratio['good'] !== undefined) {
        const good = statuses(ratio['good'], [...base, 'good'], ['ok'])
        if (good && (good.length !== 1 || good[0] !== 'ok'))
          bad(
            sliDoc,
            [...base, 'good', 'metricSource', 'spec', 'status'],
            'good events are requests with status ok',
          )
      } else if (ratio['bad'] !== undefined) {
        statuses(ratio['bad'], [...base, 'bad'], ['error', 'shed'])
      } else bad(sliDoc, [...base, 'good'], 'is required (or bad)')
      if (total) {
        if (!total.includes('ok') || !total.includes('error'))
          bad(sliDoc, [...base, 'total', 'metricSource', 'spec', 'status'], 'total must include ok and error')
        raw['shedIsBad'] = total.includes('shed')
      }
    } else bad(sliDoc, sliBase, 'needs thresholdMetric or ratioMetric')
    if (selector['service'] === undefined && typeof spec['service'] === 'string') {
      selector['service'] = spec['service']
      paths.set('selector.service', ['spec', 'service'])
    }
    raw['selector'] = selector
  }
  if (problems.length > 0) return { ok: false, problems }
  return { ok: true, raw, paths }
}

/**
 * Loads every SLO from a file or a folder (`*.yaml`, `*.yml`, `*.json`, not recursive), in either format,
 * each file told apart by content. Returns the definitions, or every problem with file, line and field.
 *
 * @example
 * ```ts
 * const r = await loadSloFiles('./slos')
 * if (!r.ok) throw new ConfigInvalid(formatProblems(r.problems))
 * ```
 */
export async function loadSloFiles(path: string): Promise<SloLoadResult> {
  let files: string[]
  try {
    const s = await stat(path)
    files = s.isDirectory()
      ? (await readdir(path))
          .filter((f) => /\.(ya?ml|json)$/i.test(f))
          .sort()
          .map((f) => join(path, f))
      : [path]
  } catch (err) {
    return {
      ok: false,
      problems: [{ file: path, line: 1, field: '(file)', message: (err as Error).message }],
    }
  }
  const docs: ParsedDoc[] = []
  const problems: SloFileProblem[] = []
  for (const f of files) {
    let text: string
    try {
      text = await readFile(f, 'utf8')
    } catch (err) {
      problems.push({ file: f, line: 1, field: '(file)', message: (err as Error).message })
      continue
    }
    const split = splitDocs(text, f)
    docs.push(...split.docs)
    problems.push(...split.problems)
  }
  const r = parseDocs({ docs, problems })
  if (r.ok) return { ok: true, slos: r.slos, files }
  return r
}

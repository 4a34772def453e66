/**
 * The normalised SLO definition every format (tailguard YAML, OpenSLO, the API) turns into, and its
 * validation. Validation never throws: it returns the definition or every problem with its field path.
 */
import { METRICS, isMetric } from '../report/index.js'
import type { Metric } from '../report/index.js'
import { parseDurationMs } from '../time.js'
import { DAY_MS, DEFAULT_BURN_TIERS, MINUTE_MS, alertTiers } from './math.js'
import type { BurnTier, Severity } from './math.js'

/** Which series an SLO covers; a label left out matches every value. */
export interface SloSelector {
  readonly service?: string
  readonly model?: string
  readonly version?: string
}

/** What counts as a good event. */
export type Sli =
  /** A request whose `metric` (a phase, or `ttft`/`tpot` for LLM SLOs) is at or under `thresholdMs`. */
  | { readonly kind: 'latency'; readonly metric: Metric; readonly thresholdMs: number }
  /** A request that did not fail; shed requests are bad unless `shedIsBad` is false (then not counted). */
  | { readonly kind: 'availability'; readonly shedIsBad: boolean }

/** A rolling window of a whole number of days, or the current calendar month (UTC). */
export type SloWindow =
  { readonly kind: 'rolling'; readonly days: number } | { readonly kind: 'calendar-month' }

/** How the budget is counted: per event, or per time slice that met `sliceTarget`. */
export type Budgeting =
  | { readonly kind: 'occurrences' }
  | { readonly kind: 'timeslices'; readonly sliceMs: number; readonly sliceTarget: number }

/** One SLO, normalised. */
export interface SloDefinition {
  readonly name: string
  readonly description: string
  readonly selector: SloSelector
  readonly sli: Sli
  /** Target good ratio, 0..1 (0.999 for 99.9%). */
  readonly objective: number
  readonly window: SloWindow
  readonly budgeting: Budgeting
  /** The alert tiers in force (already scaled for the window, disabled tiers removed). */
  readonly tiers: readonly BurnTier[]
  /** No tier fires while its long window holds fewer events than this (low-traffic guard). */
  readonly minEvents: number
  /** How long a tier's condition must hold before it fires (pending until then). */
  readonly forMs: number
  /** Extra labels put on every alert of this SLO. */
  readonly labels: Readonly<Record<string, string>>
}

/** One validation problem: a dotted field path and a message (the loaders add file and line). */
export interface FieldProblem {
  readonly path: readonly (string | number)[]
  readonly message: string
}

/** The windows tailguard accepts. */
export const SLO_WINDOWS = ['7d', '28d', '30d', 'calendar-month'] as const

/** Slice lengths that divide an hour, so time slices fit the hourly rollups. */
const SLICE_MINUTES = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60]

/**
 * The window's length in ms at `nowMs` (a calendar month's length depends on the month).
 *
 * @example windowLengthMs({ kind: 'calendar-month' }, Date.UTC(2026, 1, 10)) // 2419200000 (28 days)
 */
export function windowLengthMs(w: SloWindow, nowMs: number): number {
  if (w.kind === 'rolling') return w.days * DAY_MS
  const d = new Date(nowMs)
  return (
    Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) - Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
  )
}

/**
 * Start of the window that ends at `endMs`.
 *
 * @example windowStartMs({ kind: 'calendar-month' }, Date.UTC(2026, 1, 10)) // Date.UTC(2026, 1, 1)
 */
export function windowStartMs(w: SloWindow, endMs: number): number {
  if (w.kind === 'rolling') return endMs - w.days * DAY_MS
  const d = new Date(endMs - 1)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}

/**
 * Text form of a window, as the API shows it.
 *
 * @example windowText({ kind: 'rolling', days: 30 }) // '30d'
 */
export const windowText = (w: SloWindow): string => (w.kind === 'rolling' ? `${w.days}d` : 'calendar-month')

/** Plain JSON form of a tailguard SLO (one entry of a YAML file's `slos:` list, or an API body). */
export type RawSlo = Record<string, unknown>

const NAME_RE = /^[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?$/

type Path = readonly (string | number)[]

class Checker {
  readonly problems: FieldProblem[] = []
  constructor(readonly base: Path) {}
  bad(path: Path, message: string): undefined {
    this.problems.push({ path: [...this.base, ...path], message })
    return undefined
  }
  str(obj: Record<string, unknown>, key: string, required: boolean): string | undefined {
    const v = obj[key]
    if (v === undefined || v === null) return required ? this.bad([key], 'is required') : undefined
    if (typeof v !== 'string' && typeof v !== 'number') return this.bad([key], 'must be a string')
    return String(v)
  }
}

/**
 * Parses an objective: a ratio in (0, 1), or a percentage text such as `"99.9%"`.
 *
 * @example parseObjective('99.9%') // 0.999
 */
export function parseObjective(v: unknown): number | undefined {
  let n: number
  if (typeof v === 'string') {
    const t = v.trim()
    n = t.endsWith('%') ? Number(t.slice(0, -1)) / 100 : Number(t)
  } else if (typeof v === 'number') n = v
  else return undefined
  if (!(n > 0 && n < 1)) return undefined
  return Math.round(n * 1e9) / 1e9
}

function parseDuration(v: unknown): number | undefined {
  if (typeof v === 'number') return v >= 0 ? v : undefined
  if (typeof v !== 'string') return undefined
  return parseDurationMs(v)
}

/**
 * Validates one tailguard SLO object (the YAML entry or API body) and normalises it. `base` prefixes every
 * problem's path (e.g. `['slos', 2]`).
 *
 * @example
 * ```ts
 * const r = validateSlo({ name: 'chat-p99', kind: 'latency', selector: { service: 'chat' }, thresholdMs: 200, objective: '99%', window: '30d' })
 * if (r.ok) r.slo.sli // { kind: 'latency', metric: 'total', thresholdMs: 200 }
 * ```
 */
export function validateSlo(
  raw: unknown,
  base: Path = [],
): { ok: true; slo: SloDefinition } | { ok: false; problems: FieldProblem[] } {
  const c = new Checker(base)
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    c.bad([], 'must be a mapping')
    return { ok: false, problems: c.problems }
  }
  const o = raw as Record<string, unknown>
  const known = new Set([
    'name',
    'description',
    'kind',
    'selector',
    'phase',
    'metric',
    'thresholdMs',
    'objective',
    'window',
    'budgeting',
    'timeslice',
    'shedIsBad',
    'alerting',
    'labels',
  ])
  for (const k of Object.keys(o))
    if (!known.has(k)) c.bad([k], `unknown field (expected one of ${[...known].join(', ')})`)

  const name = c.str(o, 'name', true)
  if (name !== undefined && !NAME_RE.test(name))
    c.bad(
      ['name'],
      'must be 1-128 lowercase letters, digits, ".", "_" or "-", starting and ending with a letter or digit',
    )
  const description = c.str(o, 'description', false) ?? ''

  const selector: Record<string, string> = {}
  if (o['selector'] !== undefined) {
    const s = o['selector']
    if (typeof s !== 'object' || s === null || Array.isArray(s)) c.bad(['selector'], 'must be a mapping')
    else
      for (const [k, v] of Object.entries(s)) {
        if (k !== 'service' && k !== 'model' && k !== 'version')
          c.bad(['selector', k], 'unknown label (expected service, model or version)')
        else if (typeof v !== 'string' || v === '') c.bad(['selector', k], 'must be a non-empty string')
        else selector[k] = v
      }
  }

  const kind = c.str(o, 'kind', true)
  let sli: Sli | undefined
  if (kind === 'latency' || kind === 'llm') {
    const metricText = kind === 'latency' ? (c.str(o, 'phase', false) ?? 'total') : c.str(o, 'metric', true)
    const metricField = kind === 'latency' ? 'phase' : 'metric'
    if (kind === 'llm' && o['phase'] !== undefined)
      c.bad(['phase'], 'llm SLOs take metric (ttft or tpot), not phase')
    if (kind === 'latency' && o['metric'] !== undefined)
      c.bad(['metric'], 'latency SLOs take phase, not metric')
    const threshold = o['thresholdMs']
    let metric: Metric | undefined
    if (metricText !== undefined) {
      if (kind === 'llm' && metricText !== 'ttft' && metricText !== 'tpot')
        c.bad([metricField], `must be ttft or tpot, got '${metricText}'`)
      else if (!isMetric(metricText))
        c.bad([metricField], `unknown phase '${metricText}' (expected one of ${METRICS.join(', ')})`)
      else metric = metricText
    }
    if (typeof threshold !== 'number' || !(threshold > 0) || threshold > 3_600_000)
      c.bad(['thresholdMs'], 'must be a number of milliseconds in (0, 3600000]')
    else if (metric) sli = { kind: 'latency', metric, thresholdMs: threshold }
    if (o['shedIsBad'] !== undefined) c.bad(['shedIsBad'], 'applies to availability SLOs only')
  } else if (kind === 'availability') {
    const shed = o['shedIsBad'] ?? true
    if (typeof shed !== 'boolean') c.bad(['shedIsBad'], 'must be true or false')
    for (const k of ['phase', 'metric', 'thresholdMs'])
      if (o[k] !== undefined) c.bad([k], 'applies to latency and llm SLOs only')
    sli = { kind: 'availability', shedIsBad: shed !== false }
  } else if (kind !== undefined) c.bad(['kind'], `must be latency, availability or llm, got '${kind}'`)

  const objective = parseObjective(o['objective'])
  if (objective === undefined) c.bad(['objective'], 'must be a ratio in (0, 1) or a percentage like "99.9%"')

  let window: SloWindow | undefined
  const wText = o['window'] === undefined ? '30d' : String(o['window'])
  if (wText === 'calendar-month') window = { kind: 'calendar-month' }
  else if (/^(7|28|30)d$/.test(wText)) window = { kind: 'rolling', days: Number(wText.slice(0, -1)) }
  else c.bad(['window'], `must be one of ${SLO_WINDOWS.join(', ')}, got '${wText}'`)

  let budgeting: Budgeting = { kind: 'occurrences' }
  const bText = o['budgeting'] === undefined ? 'occurrences' : String(o['budgeting'])
  if (bText === 'timeslices') {
    const ts = o['timeslice']
    if (typeof ts !== 'object' || ts === null)
      c.bad(['timeslice'], 'is required with budgeting: timeslices ({ window: 1m, target: 0.95 })')
    else {
      const t = ts as Record<string, unknown>
      const sliceMs = parseDuration(t['window'] ?? '1m')
      const target = parseObjective(t['target'])
      if (sliceMs === undefined || sliceMs % MINUTE_MS !== 0 || !SLICE_MINUTES.includes(sliceMs / MINUTE_MS))
        c.bad(
          ['timeslice', 'window'],
          `must be a whole number of minutes that divides an hour (${SLICE_MINUTES.join(', ')}m)`,
        )
      if (target === undefined) c.bad(['timeslice', 'target'], 'must be a ratio in (0, 1)')
      if (sliceMs !== undefined && target !== undefined)
        budgeting = { kind: 'timeslices', sliceMs, sliceTarget: target }
    }
  } else if (bText !== 'occurrences')
    c.bad(['budgeting'], `must be occurrences or timeslices, got '${bText}'`)
  else if (o['timeslice'] !== undefined) c.bad(['timeslice'], 'applies only with budgeting: timeslices')

  const alerting = parseAlerting(o['alerting'], c)

  const labels: Record<string, string> = {}
  if (o['labels'] !== undefined) {
    const l = o['labels']
    if (typeof l !== 'object' || l === null || Array.isArray(l))
      c.bad(['labels'], 'must be a mapping of strings')
    else
      for (const [k, v] of Object.entries(l)) {
        if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(k)) c.bad(['labels', k], 'label names are letters, digits and _')
        else if (typeof v !== 'string') c.bad(['labels', k], 'must be a string')
        else labels[k] = v
      }
  }

  if (c.problems.length > 0 || !name || !sli || objective === undefined || !window || !alerting)
    return { ok: false, problems: c.problems }
  // Default tiers scale with the window (a calendar month counts as 30 days); explicit windows stay as given.
  const windowMs = window.kind === 'rolling' ? window.days * DAY_MS : 30 * DAY_MS
  const tiers: BurnTier[] = alerting.tiers
    .filter((t) => t.enabled)
    .map((t) => {
      const tier: BurnTier = {
        id: t.id,
        factor: t.factor,
        longWindowMs: t.longWindowMs,
        shortWindowMs: t.shortWindowMs,
        severity: t.severity,
      }
      return t.scale ? alertTiers(windowMs, [tier])[0]! : tier
    })
  return {
    ok: true,
    slo: {
      name,
      description,
      selector,
      sli,
      objective,
      window,
      budgeting,
      tiers,
      minEvents: alerting.minEvents,
      forMs: alerting.forMs,
      labels,
    },
  }
}

interface TierSpec extends BurnTier {
  readonly enabled: boolean
  /** Default tiers scale with the SLO window; tiers given with explicit windows do not. */
  readonly scale: boolean
}

function parseAlerting(
  raw: unknown,
  c: Checker,
): { tiers: TierSpec[]; minEvents: number; forMs: number } | undefined {
  const tiers: TierSpec[] = DEFAULT_BURN_TIERS.map((t) => ({ ...t, enabled: true, scale: true }))
  if (raw === undefined) return { tiers, minEvents: 10, forMs: 0 }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return c.bad(['alerting'], 'must be a mapping')
  const a = raw as Record<string, unknown>
  const before = c.problems.length
  for (const k of Object.keys(a))
    if (k !== 'minEvents' && k !== 'for' && k !== 'tiers')
      c.bad(['alerting', k], 'unknown field (expected minEvents, for, tiers)')
  const minEvents = a['minEvents'] ?? 10
  if (typeof minEvents !== 'number' || !Number.isInteger(minEvents) || minEvents < 0)
    c.bad(['alerting', 'minEvents'], 'must be a whole number ≥ 0')
  const forMs = a['for'] === undefined ? 0 : parseDuration(a['for'])
  if (forMs === undefined) c.bad(['alerting', 'for'], 'must be a duration like 2m')
  const t = a['tiers']
  if (t !== undefined) {
    if (typeof t !== 'object' || t === null || Array.isArray(t))
      c.bad(['alerting', 'tiers'], 'must be a mapping of tier id to settings (page-1h: { enabled: false })')
    else
      for (const [id, specRaw] of Object.entries(t)) {
        const p = ['alerting', 'tiers', id]
        if (typeof specRaw !== 'object' || specRaw === null) {
          c.bad(p, 'must be a mapping (factor, long, short, severity, enabled)')
          continue
        }
        const spec = specRaw as Record<string, unknown>
        for (const k of Object.keys(spec))
          if (!['factor', 'long', 'short', 'severity', 'enabled'].includes(k))
            c.bad([...p, k], 'unknown field (expected factor, long, short, severity, enabled)')
        const idx = tiers.findIndex((x) => x.id === id)
        const prev = idx >= 0 ? tiers[idx] : undefined
        if (!prev && !/^[a-z0-9-]{1,32}$/.test(id))
          c.bad(p, 'tier ids are 1-32 lowercase letters, digits or -')
        const factor = spec['factor'] ?? prev?.factor
        if (typeof factor !== 'number' || !(factor > 0)) c.bad([...p, 'factor'], 'must be a number > 0')
        const long = spec['long'] === undefined ? prev?.longWindowMs : parseDuration(spec['long'])
        const short = spec['short'] === undefined ? prev?.shortWindowMs : parseDuration(spec['short'])
        if (long === undefined || long < MINUTE_MS) c.bad([...p, 'long'], 'must be a duration of at least 1m')
        if (short === undefined || short < MINUTE_MS)
          c.bad([...p, 'short'], 'must be a duration of at least 1m')
        if (long !== undefined && short !== undefined && short > long)
          c.bad([...p, 'short'], 'must not be longer than long')
        const severity = spec['severity'] ?? prev?.severity
        if (severity !== 'page' && severity !== 'ticket') c.bad([...p, 'severity'], 'must be page or ticket')
        const enabled = spec['enabled'] ?? true
        if (typeof enabled !== 'boolean') c.bad([...p, 'enabled'], 'must be true or false')
        if (c.problems.length > before) continue
        const next: TierSpec = {
          id,
          factor: factor as number,
          longWindowMs: long!,
          shortWindowMs: short!,
          severity: severity as Severity,
          enabled: enabled as boolean,
          scale: spec['long'] === undefined && spec['short'] === undefined && (prev?.scale ?? false),
        }
        if (idx >= 0) tiers[idx] = next
        else tiers.push(next)
      }
  }
  if (c.problems.length > before) return undefined
  return { tiers, minEvents: minEvents as number, forMs: forMs! }
}

/**
 * Converts a definition back to the tailguard JSON form (what the API returns and stores); validating the
 * result gives the same definition.
 *
 * @example sloToRaw(slo).objective // 0.999
 */
export function sloToRaw(s: SloDefinition): RawSlo {
  const raw: Record<string, unknown> = {
    name: s.name,
    kind:
      s.sli.kind === 'availability'
        ? 'availability'
        : s.sli.metric === 'ttft' || s.sli.metric === 'tpot'
          ? 'llm'
          : 'latency',
    selector: { ...s.selector },
    objective: s.objective,
    window: windowText(s.window),
  }
  if (s.description) raw['description'] = s.description
  if (s.sli.kind === 'latency') {
    raw[raw['kind'] === 'llm' ? 'metric' : 'phase'] = s.sli.metric
    raw['thresholdMs'] = s.sli.thresholdMs
  } else raw['shedIsBad'] = s.sli.shedIsBad
  if (s.budgeting.kind === 'timeslices') {
    raw['budgeting'] = 'timeslices'
    raw['timeslice'] = { window: `${s.budgeting.sliceMs / MINUTE_MS}m`, target: s.budgeting.sliceTarget }
  }
  const tiers: Record<string, unknown> = {}
  for (const d of DEFAULT_BURN_TIERS)
    if (!s.tiers.some((t) => t.id === d.id)) tiers[d.id] = { enabled: false }
  for (const t of s.tiers)
    tiers[t.id] = {
      factor: t.factor,
      long: `${t.longWindowMs}ms`,
      short: `${t.shortWindowMs}ms`,
      severity: t.severity,
    }
  raw['alerting'] = { minEvents: s.minEvents, for: `${s.forMs}ms`, tiers }
  if (Object.keys(s.labels).length > 0) raw['labels'] = { ...s.labels }
  return raw
}

import { MAX_BUCKET_BOUNDS } from '../../../collector/index.js'
import type { Metric, SignalGauge } from '../../../collector/index.js'
import { parsePromText } from '../../gpu/prom-text.js'
import type { PromSample } from '../../gpu/prom-text.js'
import { ADAPTERS, KIND_PREFIXES, MS_PER_UNIT } from './adapters.js'
import type { AdapterSpec, CounterTarget, ScrapeKind, ServerKind } from './adapters.js'

/** One latency histogram as a server holds it: cumulative since the server started. */
export interface CumulativeHistogram {
  /** Finite upper bounds, ms, ascending. */
  readonly boundsMs: readonly number[]
  /** Per-bucket counts since the server started (not cumulative over buckets), `+Inf` last. */
  readonly counts: readonly number[]
  readonly count: number
  readonly sumMs: number
  /** A summary's quantiles at scrape time (Triton). */
  readonly quantilesMs?: ReadonlyArray<{ readonly q: number; readonly ms: number }>
  /** The family it came from, and how it was read. */
  readonly family: string
  readonly precision: 'buckets' | 'summary' | 'mean'
}

/** What one scrape says about one model (and version) of the server. */
export interface ModelSnapshot {
  readonly model: string
  readonly version: string
  readonly gauges: Partial<Record<SignalGauge, number>>
  /** Cumulative counters since the server started. */
  readonly counters: Partial<Record<CounterTarget, number>>
  readonly histograms: Partial<Record<Metric, CumulativeHistogram>>
  /** The families each signal came from (for `tailguard scrape`). */
  readonly from: Record<string, string>
}

/** One scrape, read: per model, with what could not be read. */
export interface Snapshot {
  readonly kind: ServerKind
  readonly models: ReadonlyMap<string, ModelSnapshot>
  /** Names in the server's namespace that tailguard does not know (not errors: they are left out). */
  readonly unknown: readonly string[]
  /** Other problems worth a look (both old and new names present, malformed lines, cut-off histograms, …). */
  readonly warnings: readonly string[]
  /** Families outside the server's namespace (process_*, python_*, …), ignored. */
  readonly otherFamilies: number
  readonly samples: number
}

/**
 * Detects which server a scrape comes from by its families' name prefixes (the kind owning most families wins).
 * `null` when none of the known prefixes appear.
 *
 * @example detectKind(parsePromText(text).samples) // 'vllm'
 */
export function detectKind(samples: readonly PromSample[]): ScrapeKind | null {
  const counts = new Map<ScrapeKind, number>()
  for (const s of samples)
    for (const [kind, prefix] of KIND_PREFIXES)
      if (s.name.startsWith(prefix)) counts.set(kind, (counts.get(kind) ?? 0) + 1)
  let best: ScrapeKind | null = null
  let n = 0
  for (const [kind, c] of counts)
    if (c > n) {
      best = kind
      n = c
    }
  return best
}

const SUFFIXES = ['_bucket', '_sum', '_count'] as const

type Role = 'gauge' | 'counter' | 'histogram' | 'known'
const ROLES = new WeakMap<AdapterSpec, ReadonlyMap<string, Role>>()

/** Each family the adapter knows, with what it is read as (one lookup per sample on the hot path). */
function rolesOf(spec: AdapterSpec): ReadonlyMap<string, Role> {
  let roles = ROLES.get(spec)
  if (roles === undefined) {
    const m = new Map<string, Role>()
    for (const f of spec.known) m.set(f, 'known')
    for (const f of Object.keys(spec.gauges)) m.set(f, 'gauge')
    for (const f of [...Object.keys(spec.counters), ...Object.keys(spec.durationCounters ?? {})])
      m.set(f, 'counter')
    for (const f of [
      ...Object.keys(spec.histograms),
      ...Object.keys(spec.histogramSums ?? {}),
      ...Object.keys(spec.summaries ?? {}),
    ])
      m.set(f, 'histogram')
    ROLES.set(spec, (roles = m))
  }
  return roles
}

/** The family a sample belongs to, given the `# TYPE` lines seen (histogram and summary parts fold into one). */
function familyOf(name: string, types: ReadonlyMap<string, string>, known: (f: string) => boolean): string {
  if (types.has(name)) return name
  for (const suffix of SUFFIXES)
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length)
      if (types.has(base) || known(base)) return base
    }
  return name
}

interface HistAcc {
  bounds: Map<number, number>
  sum: number | undefined
  count: number | undefined
  quantiles: Map<number, number>
}

/** Drops every other finite bound (adding neighbouring buckets) until at most `max` remain: exact, only coarser. */
function coarsen(
  boundsMs: number[],
  counts: number[],
  max: number,
): { boundsMs: number[]; counts: number[] } {
  while (boundsMs.length > max) {
    const b: number[] = []
    const c: number[] = []
    for (let i = 0; i < boundsMs.length; i += 2) {
      const last = i + 1 >= boundsMs.length
      b.push(last ? boundsMs[i]! : boundsMs[i + 1]!)
      c.push(counts[i]! + (last ? 0 : counts[i + 1]!))
    }
    c.push(counts[counts.length - 1]!)
    boundsMs = b
    counts = c
  }
  return { boundsMs, counts }
}

/** Turns cumulative `le` buckets into per-bucket counts; `null` when they decrease (a torn scrape). */
function histogramOf(
  acc: HistAcc,
  msPerUnit: number,
): { boundsMs: number[]; counts: number[]; count: number; sumMs: number; cutOff: boolean } | null {
  const entries = [...acc.bounds.entries()].sort((a, b) => a[0] - b[0])
  const finite = entries.filter(([le]) => Number.isFinite(le))
  const inf = entries.find(([le]) => le === Infinity)?.[1]
  const lastFinite = finite.length > 0 ? finite[finite.length - 1]![1] : 0
  const total = inf ?? acc.count ?? lastFinite
  const cumulative = [...finite.map(([, c]) => c), total]
  const counts: number[] = []
  let prev = 0
  for (const c of cumulative) {
    if (!(c >= prev) || !Number.isFinite(c)) return null
    counts.push(c - prev)
    prev = c
  }
  const coarse = coarsen(
    finite.map(([le]) => le * msPerUnit),
    counts,
    MAX_BUCKET_BOUNDS,
  )
  return {
    ...coarse,
    count: total,
    sumMs: (acc.sum ?? 0) * msPerUnit,
    cutOff: inf === undefined && acc.count === undefined,
  }
}

/**
 * Reads one scrape of a model server: maps its families to tailguard's gauges, counters and latency histograms per
 * model (and version), the way {@link AdapterSpec} says, and lists unknown names and other warnings. Never throws
 * on what a server sends.
 *
 * @example
 * ```ts
 * const snap = readExposition(await (await fetch('http://vllm:8000/metrics')).text(), 'vllm')
 * snap.models.get('facebook/opt-125m\u0000')?.gauges.running // 3
 * ```
 */
export function readExposition(text: string, kind: ServerKind): Snapshot {
  const spec: AdapterSpec = ADAPTERS[kind]
  const { samples, malformed, types } = parsePromText(text)
  const warnings: string[] = []
  if (malformed > 0) warnings.push(`${malformed} malformed line(s) skipped`)
  const roles = rolesOf(spec)
  const inNamespace = (name: string) => spec.namespace.some((p) => name.startsWith(p))
  const unknown = new Set<string>()
  const otherFamilies = new Set<string>()

  interface ModelAcc {
    model: string
    version: string
    gauges: Map<string, number[]>
    counters: Map<string, number>
    hists: Map<string, Map<string, HistAcc>>
  }
  const models = new Map<string, ModelAcc>()
  const present = new Set<string>()
  for (const s of samples) {
    const family = familyOf(s.name, types, (f) => roles.has(f))
    const role = roles.get(family)
    if (role === undefined) {
      if (inNamespace(family)) unknown.add(family)
      else otherFamilies.add(family)
      continue
    }
    present.add(family)
    if (role === 'known') continue
    const model = spec.modelLabel ? (s.labels[spec.modelLabel] ?? '') : ''
    const version = spec.versionLabel ? (s.labels[spec.versionLabel] ?? '') : ''
    const key = `${model}\u0000${version}`
    let m = models.get(key)
    if (!m)
      models.set(key, (m = { model, version, gauges: new Map(), counters: new Map(), hists: new Map() }))
    if (!Number.isFinite(s.value) && s.labels['le'] === undefined) continue
    if (role === 'gauge') {
      const list = m.gauges.get(family)
      if (list) list.push(s.value)
      else m.gauges.set(family, [s.value])
    } else if (role === 'counter') {
      m.counters.set(family, (m.counters.get(family) ?? 0) + s.value)
    } else {
      // One histogram per label set other than le/quantile (vLLM engines, SGLang ranks): summed per model below.
      // Servers write a series' labels in one order, so no sort is needed to tell the sets apart.
      let rest = ''
      for (const k in s.labels) if (k !== 'le' && k !== 'quantile') rest += `${k}=${s.labels[k]},`
      let byLabels = m.hists.get(family)
      if (!byLabels) m.hists.set(family, (byLabels = new Map()))
      let acc = byLabels.get(rest)
      if (!acc)
        byLabels.set(
          rest,
          (acc = { bounds: new Map(), sum: undefined, count: undefined, quantiles: new Map() }),
        )
      if (s.name.endsWith('_bucket') && s.labels['le'] !== undefined) {
        const le = s.labels['le'] === '+Inf' ? Infinity : Number(s.labels['le'])
        if (!Number.isNaN(le)) acc.bounds.set(le, (acc.bounds.get(le) ?? 0) + s.value)
      } else if (s.name.endsWith('_sum')) acc.sum = s.value
      else if (s.name.endsWith('_count')) acc.count = s.value
      else if (s.labels['quantile'] !== undefined) acc.quantiles.set(Number(s.labels['quantile']), s.value)
    }
  }

  // Renamed families: when both names are present, the preferred (newer) one is used.
  const pick = <T extends { prefer?: number }>(
    table: Readonly<Record<string, T>>,
    target: (t: T) => string,
  ): Set<string> => {
    const best = new Map<string, string>()
    for (const [family, t] of Object.entries(table)) {
      if (!present.has(family)) continue
      const other = best.get(target(t))
      if (other === undefined || (t.prefer ?? 0) > (table[other]!.prefer ?? 0)) {
        if (other !== undefined) warnings.push(`${other} and ${family} both present; using ${family}`)
        best.set(target(t), family)
      } else warnings.push(`${other} and ${family} both present; using ${other}`)
    }
    return new Set(best.values())
  }
  const gaugeFamilies = pick(spec.gauges, (t) => t.gauge)
  const counterFamilies = pick(spec.counters, (t) => t.to)
  const histFamilies = pick(spec.histograms, (t) => t.metric)

  const out = new Map<string, ModelSnapshot>()
  for (const [key, m] of models) {
    const gauges: Partial<Record<SignalGauge, number>> = {}
    const counters: Partial<Record<CounterTarget, number>> = {}
    const histograms: Partial<Record<Metric, CumulativeHistogram>> = {}
    const from: Record<string, string> = {}
    for (const [family, values] of m.gauges) {
      if (!gaugeFamilies.has(family)) continue
      const g = spec.gauges[family]!
      const finite = values.filter(Number.isFinite)
      if (finite.length === 0) continue
      const total = finite.reduce((a, b) => a + b, 0)
      gauges[g.gauge] = g.agg === 'sum' ? total : total / finite.length
      from[g.gauge] = family
    }
    for (const [family, value] of m.counters) {
      if (!counterFamilies.has(family)) continue
      const to = spec.counters[family]!.to
      counters[to] = (counters[to] ?? 0) + value
      from[to] = family
    }
    for (const [family, byLabels] of m.hists) {
      const h = spec.histograms[family]
      const sumTo = spec.histogramSums?.[family]
      const summary = spec.summaries?.[family]
      if (sumTo !== undefined) {
        let total = 0
        for (const acc of byLabels.values()) total += acc.sum ?? 0
        counters[sumTo] = (counters[sumTo] ?? 0) + total
        from[sumTo] = `${family}_sum`
        continue
      }
      if (summary !== undefined) continue
      if (h === undefined || !histFamilies.has(family)) continue
      // Sum the label sets of one layout (engines, ranks); a set with another layout is left out and reported.
      let merged: { boundsMs: number[]; counts: number[]; count: number; sumMs: number } | undefined
      for (const [labels, acc] of byLabels) {
        const one = histogramOf(acc, MS_PER_UNIT[h.unit])
        if (one === null) {
          warnings.push(`${family}{${labels}}: bucket counts decrease; skipped`)
          continue
        }
        if (one.cutOff)
          warnings.push(
            `${family}{${labels}}: no +Inf bucket or _count; the last bucket stands for the total`,
          )
        if (merged === undefined) merged = { ...one }
        else if (merged.boundsMs.join() !== one.boundsMs.join())
          warnings.push(`${family}{${labels}}: a bucket layout unlike its siblings'; left out`)
        else {
          for (let i = 0; i < merged.counts.length; i++) merged.counts[i]! += one.counts[i]!
          merged.count += one.count
          merged.sumMs += one.sumMs
        }
      }
      if (merged === undefined) continue
      histograms[h.metric] = { ...merged, family, precision: 'buckets' }
    }
    // Triton: cumulative durations over request counts are per-interval means, unless a real histogram exists.
    for (const [family, d] of Object.entries(spec.durationCounters ?? {})) {
      const sum = m.counters.get(family)
      if (sum === undefined || histograms[d.metric] !== undefined) continue
      const n = d.countOf.reduce((a, t) => a + (counters[t] ?? 0), 0)
      histograms[d.metric] = {
        boundsMs: [],
        counts: [n],
        count: n,
        sumMs: sum * MS_PER_UNIT[d.unit],
        family,
        precision: 'mean',
      }
    }
    for (const [family, s] of Object.entries(spec.summaries ?? {})) {
      const byLabels = m.hists.get(family)
      if (byLabels === undefined) continue
      const acc = [...byLabels.values()][0]!
      const quantilesMs = [...acc.quantiles.entries()]
        .filter(([q, v]) => q >= 0 && q <= 1 && Number.isFinite(v))
        .sort((a, b) => a[0] - b[0])
        .map(([q, v]) => ({ q, ms: v * MS_PER_UNIT[s.unit] }))
      const base = histograms[s.metric] ?? {
        boundsMs: [],
        counts: [acc.count ?? 0],
        count: acc.count ?? 0,
        sumMs: (acc.sum ?? 0) * MS_PER_UNIT[s.unit],
        family,
        precision: 'mean' as const,
      }
      histograms[s.metric] = {
        ...base,
        family: base.family === family ? family : `${base.family} + ${family}`,
        ...(quantilesMs.length > 0 ? { quantilesMs } : {}),
        precision: base.precision === 'buckets' ? 'buckets' : quantilesMs.length > 0 ? 'summary' : 'mean',
      }
    }
    for (const [metric, h] of Object.entries(histograms)) from[metric] = h.family
    out.set(key, { model: m.model, version: m.version, gauges, counters, histograms, from })
  }
  return {
    kind,
    models: out,
    unknown: [...unknown].sort(),
    warnings,
    otherFamilies: otherFamilies.size,
    samples: samples.length,
  }
}

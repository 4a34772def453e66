import { bucketQuantileMs } from '../../../collector/index.js'
import type { GpuField } from '../../../collector/index.js'
import { parsePromText } from '../../gpu/prom-text.js'
import { DCGM_KNOWN_FIELDS, dcgmToReadings } from '../dcgm.js'
import type { ScrapeKind } from './adapters.js'
import { detectKind, readExposition } from './read.js'

/** One latency histogram as `tailguard scrape` shows it: where it comes from and how exact it is. */
export interface DescribedHistogram {
  readonly from: string
  readonly precision: 'buckets' | 'summary' | 'mean'
  readonly buckets: number
  readonly count: number
  readonly sumMs: number
  readonly meanMs: number | null
  /** Estimated from buckets (linear within a bucket), or the server's summary quantiles. */
  readonly p50Ms: number | null
  readonly p99Ms: number | null
}

/** What tailguard reads from one scrape, per series, for an operator to check before deploying. */
export interface ScrapeDescription {
  readonly kind: ScrapeKind
  readonly series: ReadonlyArray<{
    readonly model: string
    readonly version: string
    readonly gauges: Readonly<Record<string, { readonly value: number; readonly from: string }>>
    /** Counter totals since the server started (the agent reports their increase per interval). */
    readonly counters: Readonly<Record<string, { readonly total: number; readonly from: string }>>
    readonly histograms: Readonly<Record<string, DescribedHistogram>>
  }>
  /** DCGM exporter: per GPU, the fields tailguard reads. */
  readonly gpus: ReadonlyArray<{
    readonly uuid: string
    readonly index: number
    readonly name: string | null
    readonly fields: Readonly<Partial<Record<GpuField, number>>>
  }>
  readonly unknown: readonly string[]
  readonly warnings: readonly string[]
  readonly otherFamilies: number
  readonly samples: number
}

/**
 * Reads one scrape the way the agent will and describes it: normalized phases and token metrics with their
 * precision, gauges with values, counter totals, GPU fields (DCGM exporter), unknown names and warnings. `kind`
 * `auto` detects the server; `null` is returned when no known server's metrics are in the text.
 *
 * @example
 * ```ts
 * const d = describeScrape(text, 'auto')
 * d?.series[0]?.histograms.ttft // { from: 'vllm:time_to_first_token_seconds', precision: 'buckets', … }
 * ```
 */
export function describeScrape(text: string, kind: ScrapeKind | 'auto'): ScrapeDescription | null {
  const resolved = kind === 'auto' ? detectKind(parsePromText(text).samples) : kind
  if (resolved === null) return null
  if (resolved === 'dcgm') {
    const { samples, malformed } = parsePromText(text)
    const unknown = new Set<string>()
    let other = 0
    for (const s of samples)
      if (s.name.startsWith('DCGM_FI_')) {
        if (!DCGM_KNOWN_FIELDS.has(s.name)) unknown.add(s.name)
      } else other++
    const { devices } = dcgmToReadings(samples)
    return {
      kind: 'dcgm',
      series: [],
      gpus: devices.map((d) => ({
        uuid: d.uuid,
        index: d.index,
        name: d.name ?? null,
        fields: { ...d.values },
      })),
      unknown: [...unknown].sort(),
      warnings: [
        ...(malformed > 0 ? [`${malformed} malformed line(s) skipped`] : []),
        ...(devices.length === 0 ? ['no GPU with a UUID and gpu index label: nothing to read'] : []),
      ],
      otherFamilies: other,
      samples: samples.length,
    }
  }
  const snap = readExposition(text, resolved)
  return {
    kind: resolved,
    series: [...snap.models.values()].map((m) => ({
      model: m.model,
      version: m.version,
      gauges: Object.fromEntries(
        Object.entries(m.gauges).map(([g, v]) => [g, { value: v, from: m.from[g] ?? '' }]),
      ),
      counters: Object.fromEntries(
        Object.entries(m.counters).map(([c, v]) => [c, { total: v, from: m.from[c] ?? '' }]),
      ),
      histograms: Object.fromEntries(
        Object.entries(m.histograms).map(([metric, h]) => {
          const q = (p: number) =>
            h.precision === 'buckets'
              ? bucketQuantileMs(h.boundsMs, h.counts, p)
              : (h.quantilesMs?.find((x) => Math.abs(x.q - p) < 1e-9)?.ms ?? null)
          return [
            metric,
            {
              from: h.family,
              precision: h.precision,
              buckets: h.boundsMs.length + (h.precision === 'buckets' ? 1 : 0),
              count: h.count,
              sumMs: h.sumMs,
              meanMs: h.count > 0 ? h.sumMs / h.count : null,
              p50Ms: q(0.5),
              p99Ms: q(0.99),
            },
          ]
        }),
      ),
    })),
    gpus: [],
    unknown: snap.unknown,
    warnings: snap.warnings,
    otherFamilies: snap.otherFamilies,
    samples: snap.samples,
  }
}

const fmt = (v: number | null, digits = 3): string =>
  v === null ? '-' : Number.isInteger(v) ? String(v) : v.toPrecision(digits)

/**
 * The description as text lines for a terminal.
 *
 * @example for (const line of formatDescription(d, 'http://127.0.0.1:8000/metrics')) io.out(line)
 */
export function formatDescription(d: ScrapeDescription, source: string): string[] {
  const out = [`${source}: ${d.kind}, ${d.samples} samples`]
  for (const s of d.series) {
    out.push(
      ``,
      `series model=${JSON.stringify(s.model)}${s.version ? ` version=${JSON.stringify(s.version)}` : ''}`,
    )
    const phases = Object.entries(s.histograms)
    if (phases.length > 0)
      out.push('  phases and token latencies (ms; buckets: estimated within a bucket, never HDR-exact):')
    for (const [metric, h] of phases)
      out.push(
        `    ${metric.padEnd(8)} ${h.precision.padEnd(7)} count=${fmt(h.count)} mean=${fmt(h.meanMs)} p50=${fmt(h.p50Ms)} p99=${fmt(h.p99Ms)} buckets=${h.buckets}  <- ${h.from}`,
      )
    const gauges = Object.entries(s.gauges)
    if (gauges.length > 0) out.push('  gauges:')
    for (const [g, v] of gauges) out.push(`    ${g.padEnd(13)} ${fmt(v.value)}  <- ${v.from}`)
    const counters = Object.entries(s.counters)
    if (counters.length > 0)
      out.push('  counters (totals since the server started; the agent reports increases):')
    for (const [c, v] of counters) out.push(`    ${c.padEnd(18)} ${fmt(v.total)}  <- ${v.from}`)
  }
  for (const g of d.gpus) {
    out.push('', `gpu ${g.index} ${g.uuid}${g.name ? ` (${g.name})` : ''}`)
    for (const [f, v] of Object.entries(g.fields)) out.push(`    ${f.padEnd(22)} ${fmt(v ?? null, 6)}`)
  }
  if (d.unknown.length > 0) {
    out.push('', `warning: ${d.unknown.length} unknown ${d.kind} name(s), not mapped:`)
    for (const u of d.unknown) out.push(`  ${u}`)
  }
  for (const w of d.warnings) out.push(`warning: ${w}`)
  if (d.otherFamilies > 0)
    out.push(
      `(${d.otherFamilies} other famil${d.otherFamilies === 1 ? 'y' : 'ies'} ignored: process_*, python_*, …)`,
    )
  return out
}

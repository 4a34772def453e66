import { encodeHistogram, newHistogram } from '../../collector/index.js'
import type { Histogram, IntervalReport, Metric, SeriesLabels } from '../../collector/index.js'
import { seededRandom } from '../../agent/index.js'

/** Labels with defaults for tests. */
export function labels(over: Partial<SeriesLabels> = {}): SeriesLabels {
  return { service: 'chat', model: 'llama', version: '3', replica: 'r0', node: 'n0', ...over }
}

/** A histogram holding exactly `valuesUs`. */
export function histogramOf(valuesUs: readonly number[]): Histogram {
  const h = newHistogram()
  for (const v of valuesUs) h.recordValue(v)
  return h
}

export interface TestSeries {
  readonly labels?: Partial<SeriesLabels>
  readonly samples?: Partial<Record<Metric, readonly number[]>>
  readonly ok?: number
  readonly error?: number
  readonly shed?: number
  readonly errorClasses?: Record<string, number>
  readonly outputTokens?: number
}

/** Builds an interval report (5 s long) as an agent would send it. */
export function makeReport(opts: {
  readonly instance?: string
  readonly seq: number
  readonly startMs: number
  readonly series: readonly TestSeries[]
}): IntervalReport {
  return {
    version: 1,
    agent: { id: 'agent', instance: opts.instance ?? 'inst-a', node: 'n0' },
    seq: opts.seq,
    intervalStartMs: opts.startMs,
    intervalEndMs: opts.startMs + 5000,
    series: opts.series.map((s) => ({
      labels: labels(s.labels),
      histograms: Object.fromEntries(
        Object.entries(s.samples ?? {}).map(([m, v]) => [m, encodeHistogram(histogramOf(v ?? []))]),
      ),
      requests: { ok: s.ok ?? 0, error: s.error ?? 0, shed: s.shed ?? 0 },
      ...(s.errorClasses ? { errorClasses: s.errorClasses } : {}),
      ...(s.outputTokens !== undefined ? { outputTokens: s.outputTokens } : {}),
    })),
  }
}

/** A deterministic pseudo-random generator (mulberry32) for reproducible samples. */
export const rng = seededRandom

/** `n` latencies in µs, roughly log-normal around `medianUs`. */
export function latenciesUs(next: () => number, n: number, medianUs: number): number[] {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const z = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next())
    out.push(Math.max(1, Math.round(medianUs * Math.exp(0.5 * z))))
  }
  return out
}

/** Encoded form, for exact equality of two histograms (same counts in every bucket). */
export const fingerprint = (h: Histogram): string => `${h.totalCount}:${encodeHistogram(h)}`

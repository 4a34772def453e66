import { SIGNAL_COUNTERS } from '../../../collector/index.js'
import type { BucketHistogram, Metric, SignalCounter, SignalGauge } from '../../../collector/index.js'
import type { SignalObservation } from '../../types.js'
import type { CounterTarget } from './adapters.js'
import type { CumulativeHistogram, ModelSnapshot, Snapshot } from './read.js'

/** What changed between two scrapes of one server: one observation per model, and what went wrong. */
export interface ScrapeDelta {
  readonly observations: ReadonlyArray<{
    readonly model: string
    readonly version: string
    readonly observation: SignalObservation
  }>
  /** Counter resets (server restarts), changed bucket layouts, models or series that disappeared. */
  readonly events: readonly string[]
}

const COUNTER_SET: ReadonlySet<string> = new Set(SIGNAL_COUNTERS)

/** Increase of a cumulative counter; a decrease is a reset (the server restarted), counted from zero. */
function increase(
  prev: number | undefined,
  cur: number | undefined,
  what: string,
  events: string[],
): number | undefined {
  if (cur === undefined) {
    if (prev !== undefined) events.push(`${what}: no longer exported`)
    return undefined
  }
  if (prev === undefined) return undefined
  if (cur < prev) {
    events.push(`${what}: counter reset (${prev} → ${cur}); counting from zero`)
    return cur
  }
  return cur - prev
}

/** Per-bucket increments of a histogram between two scrapes, or why there are none. */
function histogramIncrease(
  prev: CumulativeHistogram | undefined,
  cur: CumulativeHistogram,
  what: string,
  events: string[],
): Omit<BucketHistogram, 'source'> | undefined {
  const quantiles =
    cur.quantilesMs !== undefined ? { quantilesMs: cur.quantilesMs.map((q) => ({ ...q })) } : {}
  if (prev === undefined) return undefined
  const sameLayout =
    prev.boundsMs.length === cur.boundsMs.length && prev.boundsMs.every((b, i) => b === cur.boundsMs[i])
  if (cur.count < prev.count || cur.sumMs < prev.sumMs - 1e-9) {
    events.push(`${what}: counter reset (count ${prev.count} → ${cur.count}); counting from zero`)
    return { boundsMs: [...cur.boundsMs], counts: [...cur.counts], sumMs: cur.sumMs, ...quantiles }
  }
  if (!sameLayout) {
    events.push(
      `${what}: bucket layout changed (${prev.boundsMs.length} → ${cur.boundsMs.length} bounds); this interval skipped, next one uses the new layout`,
    )
    return undefined
  }
  const counts = cur.counts.map((c, i) => c - (prev.counts[i] ?? 0))
  if (counts.some((c) => c < 0)) {
    events.push(`${what}: a bucket decreased without a reset; this interval skipped`)
    return undefined
  }
  return { boundsMs: [...cur.boundsMs], counts, sumMs: Math.max(0, cur.sumMs - prev.sumMs), ...quantiles }
}

function observe(
  prev: ModelSnapshot | undefined,
  cur: ModelSnapshot,
  source: string,
  events: string[],
): SignalObservation {
  const name = cur.model === '' ? source : `${source} ${cur.model}${cur.version ? `/${cur.version}` : ''}`
  const gauges: Partial<Record<SignalGauge, number>> = { ...cur.gauges }
  const counters: Partial<Record<SignalCounter, number>> = {}
  const deltas: Partial<Record<CounterTarget, number>> = {}
  const targets = new Set([
    ...Object.keys(cur.counters),
    ...Object.keys(prev?.counters ?? {}),
  ]) as Set<CounterTarget>
  for (const t of targets) {
    const d = increase(prev?.counters[t], cur.counters[t], `${name} ${cur.from[t] ?? t}`, events)
    if (d !== undefined) deltas[t] = d
  }
  for (const [t, d] of Object.entries(deltas) as Array<[CounterTarget, number]>)
    if (COUNTER_SET.has(t)) counters[t as SignalCounter] = d
  // Triton: mean batch size of the interval = inferences / model executions.
  if (deltas.executions !== undefined) {
    counters.batches = deltas.executions
    if (deltas.executions > 0 && deltas.inferences !== undefined)
      gauges.batchSize = deltas.inferences / deltas.executions
  }
  const buckets: Partial<Record<Metric, BucketHistogram>> = {}
  for (const [metric, h] of Object.entries(cur.histograms) as Array<[Metric, CumulativeHistogram]>) {
    const inc = histogramIncrease(prev?.histograms[metric], h, `${name} ${h.family}`, events)
    if (inc !== undefined && inc.counts.some((c) => c > 0)) buckets[metric] = { ...inc, source }
  }
  for (const metric of Object.keys(prev?.histograms ?? {}) as Metric[])
    if (cur.histograms[metric] === undefined)
      events.push(`${name} ${prev!.histograms[metric]!.family}: no longer exported`)
  const requests =
    deltas.ok !== undefined || deltas.error !== undefined
      ? { requests: { ok: deltas.ok ?? 0, error: deltas.error ?? 0 } }
      : {}
  return {
    source,
    ...(Object.keys(gauges).length > 0 ? { gauges } : {}),
    ...(Object.keys(counters).length > 0 ? { counters } : {}),
    ...(Object.keys(buckets).length > 0 ? { buckets } : {}),
    ...requests,
  }
}

/**
 * Turns two consecutive scrapes into what happened in between, per model: the current gauges, counter increases
 * (a decrease is a server restart: counted from zero and reported), bucket increments of each latency histogram
 * (a changed layout is reported and that interval skipped), Triton's mean batch size. The first scrape (`prev`
 * null) gives gauges only: what a server counted before tailguard looked is not this interval's.
 *
 * @example
 * ```ts
 * const { observations, events } = diffSnapshots(previous, current)
 * for (const o of observations) recorder.recordSignals(labelsOf(o), o.observation)
 * ```
 */
export function diffSnapshots(prev: Snapshot | null, cur: Snapshot): ScrapeDelta {
  const source = `scrape:${cur.kind}`
  const events: string[] = []
  const observations = [...cur.models.entries()].map(([key, m]) => ({
    model: m.model,
    version: m.version,
    observation: observe(prev?.models.get(key), m, source, events),
  }))
  for (const [key, m] of prev?.models ?? [])
    if (!cur.models.has(key)) events.push(`${source} ${m.model || '(server)'}: no longer exported`)
  return { observations, events }
}

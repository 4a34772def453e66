/**
 * The live observation builder: the policy's {@link FleetObservation} from the collector's data, computed as
 * the simulator computes it (controller/sim/simulator.ts `onTick`), so a policy sees the same numbers live and
 * simulated. Rates over short windows, per-phase percentiles from merged HDR histograms, queue depth and
 * in-flight from the live signals, the interval's burn rate from the objective, budget left from the SLO engine.
 */
import { countAtOrBelow, summarizeMs } from '../../collector/index.js'
import type { Histogram, Metric, RequestCounts, Selector } from '../../collector/index.js'
import { proxyLlmSignals } from '../policy.js'
import type { FleetObservation, LlmSignals, PhasePercentilesMs } from '../policy.js'

/** The windows (seconds) of `arrivalRps` and `concurrency`, as in the simulator. */
export const OBS_WINDOWS_S = [6, 10, 60] as const

/** The policy's phases and the collector metric each is read from. */
export const PHASE_METRICS: Readonly<Record<keyof FleetObservation['latencyMs'], Metric>> = {
  queue: 'queue',
  service: 'kernel',
  e2e: 'total',
  ttft: 'ttft',
  tpot: 'tpot',
}

/** Live saturation signals of a target over a range (contract 1, summed over its series). */
export interface SignalSummary {
  /** Requests in service now (last) and on average over the range. */
  readonly inFlight: { readonly last: number; readonly mean: number }
  readonly queued: { readonly last: number; readonly mean: number }
  readonly queuedByClass: readonly number[]
  readonly batchSize: { readonly mean: number; readonly max: number }
  /** Upstreams with at least one request in flight (mean over the range, summed over proxies), when a proxy reports. */
  readonly busyMean?: number
  /**
   * An LLM server's own signals over the range, when one reports them (a scraped vLLM, TGI, SGLang or the
   * reference server): running sequences (mean, summed over replicas), tokens in and out, mean KV-cache use
   * and preemptions. What lets the policy learn a replica's capacity in requests: tokens per request.
   */
  readonly llm?: LlmSignals
}

/** Where observations come from. The collector's `Store` provides `histograms` and `counts`. */
export interface ObservationReader {
  histograms(
    selector: Selector,
    range: { fromMs: number; toMs: number },
    metrics: readonly Metric[],
  ): Promise<Map<Metric, Histogram>>
  counts(selector: Selector, range: { fromMs: number; toMs: number }): Promise<RequestCounts>
  /** Live signals over the range, or null when no source reports them. */
  signals?(selector: Selector, range: { fromMs: number; toMs: number }): Promise<SignalSummary | null>
  /** Share of the error budget left (min over the SLOs), or null when unknown. */
  budgetRemaining?(slos: readonly string[]): Promise<number | null>
  /** Mean GPU utilization (0..1) of the target's GPUs over the range, or null when no GPU is attributed. */
  gpuUtilization?(selector: Selector, range: { fromMs: number; toMs: number }): Promise<number | null>
}

/** What the builder needs to know of a target. */
export interface ObservedTarget {
  readonly selector: Selector
  readonly slos: readonly string[]
  /** The latency objective, on the policy's phase, and the share that must meet it. */
  readonly objective: {
    readonly thresholdMs: number
    readonly phase: keyof FleetObservation['latencyMs']
    readonly target: number
  }
}

/** Options of {@link buildObservation}. */
export interface BuildOptions {
  readonly intervalMs: number
  /** The store's finest rollup step: ranges are aligned to it. */
  readonly stepMs: number
  /** How long after a bucket closes its reports are taken to have arrived. */
  readonly settleMs: number
  /** Control steps taken so far for this target (windows never reach before the first). */
  readonly ticks: number
  readonly replicas: { readonly ready: number; readonly starting: number }
}

const emptyPct: PhasePercentilesMs = { p50: null, p99: null, count: 0 }

function pct(h: Histogram | undefined): PhasePercentilesMs {
  if (!h || h.totalCount === 0) return emptyPct
  const s = summarizeMs(h, ['0.5', '0.99'])
  return { p50: s.quantiles['0.5'] ?? null, p99: s.quantiles['0.99'] ?? null, count: h.totalCount }
}

/**
 * The end of the newest closed bucket whose reports have arrived: `floor((now − settle) / step) · step`.
 *
 * @example observedEnd(1_000_025_000, 10_000, 2_000) // 1_000_020_000
 */
export function observedEnd(nowMs: number, stepMs: number, settleMs: number): number {
  return Math.floor((nowMs - settleMs) / stepMs) * stepMs
}

/**
 * How many intervals a window spans, as the simulator counts it (at least 1, never before the first tick).
 *
 * @example windowIntervals(60, 5_000, 100) // 12
 */
export function windowIntervals(windowS: number, intervalMs: number, ticks: number): number {
  return Math.max(1, Math.min(ticks, Math.round((windowS * 1000) / intervalMs), 127))
}

/**
 * Builds one target's observation at `nowMs` from the reader: the interval is the newest closed stretch of
 * the store's buckets; windows shorter than one bucket read one bucket.
 *
 * @example
 * ```ts
 * const obs = await buildObservation(store, target, Date.now(), { intervalMs: 5000, stepMs: 10_000, settleMs: 2000, ticks: 12, replicas: { ready: 2, starting: 0 } })
 * ```
 */
export async function buildObservation(
  reader: ObservationReader,
  target: ObservedTarget,
  nowMs: number,
  o: BuildOptions,
): Promise<FleetObservation> {
  const end = observedEnd(nowMs, o.stepMs, o.settleMs)
  const span = (ms: number) => Math.max(o.stepMs, Math.ceil(ms / o.stepMs) * o.stepMs)
  const intervalSpan = span(o.intervalMs)
  const last = { fromMs: end - intervalSpan, toMs: end }
  const metrics = [...new Set(Object.values(PHASE_METRICS))]
  const [hists, counts, signals, fresh, budget, gpu] = await Promise.all([
    reader.histograms(target.selector, last, metrics),
    reader.counts(target.selector, last),
    reader.signals ? reader.signals(target.selector, last) : Promise.resolve(null),
    // The gauges a controller acts on now (queue, in flight) from the newest reports, which the settled range
    // above ends up to a step plus the settle time before: a backlog shows a step earlier.
    reader.signals
      ? reader.signals(target.selector, { fromMs: end, toMs: Math.max(end + 1, nowMs) })
      : Promise.resolve(null),
    reader.budgetRemaining && target.slos.length > 0
      ? reader.budgetRemaining(target.slos)
      : Promise.resolve(null),
    reader.gpuUtilization ? reader.gpuUtilization(target.selector, last) : Promise.resolve(null),
  ])
  const arrivalRps: Record<number, number> = {}
  const concurrency: Record<number, number> = {}
  const windowCounts = new Map<number, RequestCounts>()
  for (const w of OBS_WINDOWS_S) {
    const ms = span(windowIntervals(w, o.intervalMs, o.ticks) * o.intervalMs)
    let c = windowCounts.get(ms)
    if (!c) {
      c = ms === intervalSpan ? counts : await reader.counts(target.selector, { fromMs: end - ms, toMs: end })
      windowCounts.set(ms, c)
    }
    arrivalRps[w] = (c.ok + c.error + c.shed) / (ms / 1000)
    // In-system concurrency by Little's law when no signal reports it: arrivals × mean time in system.
    concurrency[w] = signals ? signals.inFlight.mean + signals.queued.mean : 0
  }
  const latencyMs = {
    queue: pct(hists.get(PHASE_METRICS.queue)),
    service: pct(hists.get(PHASE_METRICS.service)),
    e2e: pct(hists.get(PHASE_METRICS.e2e)),
    ttft: pct(hists.get(PHASE_METRICS.ttft)),
    tpot: pct(hists.get(PHASE_METRICS.tpot)),
  }
  const completed = counts.ok + counts.error
  const total = completed + counts.shed
  // Good: completed without error within the objective (errors and shed requests are bad, as in the simulator).
  const h = hists.get(PHASE_METRICS[target.objective.phase])
  const within = h ? countAtOrBelow(h, Math.round(target.objective.thresholdMs * 1000)) : counts.ok
  const good = Math.max(0, Math.min(counts.ok, within))
  const allowed = 1 - target.objective.target
  return {
    intervalMs: intervalSpan,
    arrivalRps,
    latencyMs,
    queueDepth: (fresh ?? signals)?.queued.last ?? 0,
    queueDepthByClass: (fresh ?? signals)?.queuedByClass ?? [],
    inFlight: (fresh ?? signals)?.inFlight.last ?? 0,
    ...(signals ? { inFlightMean: signals.inFlight.mean } : {}),
    ...(signals?.busyMean !== undefined ? { busyReplicasMean: signals.busyMean } : {}),
    concurrency,
    batchSize: signals?.batchSize ?? { mean: 0, max: 0 },
    // An LLM server that reports no counters of its own, behind the proxy: what the proxy counted stands in.
    ...(signals?.llm
      ? { llm: signals.llm }
      : signals && counts.outputTokens > 0
        ? { llm: proxyLlmSignals(signals.inFlight.mean, counts.outputTokens) }
        : {}),
    errorBudget: {
      remaining: budget ?? 1,
      burnRate: total > 0 ? (total - good) / total / allowed : 0,
    },
    gpuUtilization: gpu ?? 0,
    replicas: o.replicas,
    completed,
    shed: counts.shed,
    errors: counts.error,
  }
}

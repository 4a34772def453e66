import { layoutKey, REPORT_LIMITS } from '../collector/index.js'
import type {
  BucketHistogram,
  GpuStat,
  Metric,
  ReportSeries,
  SignalCounter,
  SignalGauge,
} from '../collector/index.js'
import type { SignalObservation } from './types.js'

/** min/mean/max/last of the samples of one gauge in the interval. */
class GaugeFold {
  min = Infinity
  max = -Infinity
  sum = 0
  n = 0
  last = 0

  add(v: number): void {
    if (v < this.min) this.min = v
    if (v > this.max) this.max = v
    this.sum += v
    this.n++
    this.last = v
  }

  stat(): GpuStat {
    return { min: this.min, mean: this.sum / this.n, max: this.max, last: this.last }
  }
}

interface BucketAcc {
  key: string
  boundsMs: readonly number[]
  counts: number[]
  sumMs: number
  quantilesMs: BucketHistogram['quantilesMs']
  source: string
}

interface ClassAcc {
  inFlight: GaugeFold | undefined
  queued: GaugeFold | undefined
  admitted: number
  shed: Map<string, number>
}

const finite = (v: number | undefined): v is number => v !== undefined && Number.isFinite(v)
const count = (v: number | undefined): v is number => finite(v) && v >= 0

/**
 * One series' live signals over one interval: gauges folded, counters and bucket increments summed, the sources
 * remembered. `take` returns the report fields and starts the next interval.
 *
 * @example
 * ```ts
 * const fold = new SignalFold()
 * fold.add({ source: 'scrape:vllm', gauges: { running: 4 } }, (reason) => recorder.drop(reason))
 * const { signals } = fold.take() // { gauges: { running: { min: 4, mean: 4, max: 4, last: 4 } }, sources: ['scrape:vllm'] }
 * ```
 */
export class SignalFold {
  #gauges = new Map<SignalGauge, GaugeFold>()
  #counters = new Map<SignalCounter, number>()
  #classes = new Map<number, ClassAcc>()
  #buckets = new Map<Metric, BucketAcc>()
  #sources = new Set<string>()

  /** True when nothing was added since the last take. */
  get empty(): boolean {
    return this.#sources.size === 0
  }

  /** Adds one observation; values that are not finite (or negative counts) are refused through `drop`. */
  add(obs: SignalObservation, drop: (reason: string) => void): void {
    this.#sources.add(obs.source)
    for (const [g, v] of Object.entries(obs.gauges ?? {}) as Array<[SignalGauge, number | undefined]>) {
      if (!finite(v)) {
        if (v !== undefined) drop('signal_not_finite')
        continue
      }
      let f = this.#gauges.get(g)
      if (!f) this.#gauges.set(g, (f = new GaugeFold()))
      f.add(v)
    }
    for (const [c, v] of Object.entries(obs.counters ?? {}) as Array<[SignalCounter, number | undefined]>) {
      if (!count(v)) {
        if (v !== undefined) drop('signal_negative_count')
        continue
      }
      const sum = (this.#counters.get(c) ?? 0) + Math.round(v)
      // A report carries at most REPORT_LIMITS.maxCount per counter: more is a broken source, not traffic.
      if (sum > REPORT_LIMITS.maxCount) {
        drop('signal_count_over_limit')
        continue
      }
      this.#counters.set(c, sum)
    }
    for (const k of obs.byClass ?? []) {
      let acc = this.#classes.get(k.priorityClass)
      if (!acc)
        this.#classes.set(
          k.priorityClass,
          (acc = { inFlight: undefined, queued: undefined, admitted: 0, shed: new Map() }),
        )
      if (finite(k.inFlight)) (acc.inFlight ??= new GaugeFold()).add(k.inFlight)
      if (finite(k.queued)) (acc.queued ??= new GaugeFold()).add(k.queued)
      if (count(k.admitted)) acc.admitted += Math.round(k.admitted)
      for (const [reason, n] of Object.entries(k.shed ?? {}))
        if (count(n)) acc.shed.set(reason, (acc.shed.get(reason) ?? 0) + Math.round(n))
    }
    for (const [metric, h] of Object.entries(obs.buckets ?? {}) as Array<
      [Metric, BucketHistogram | undefined]
    >) {
      if (h === undefined) continue
      if (h.counts.length !== h.boundsMs.length + 1 || !h.counts.every(count) || !(h.sumMs >= 0)) {
        drop('bucket_histogram_malformed')
        continue
      }
      const key = layoutKey(h.boundsMs)
      const acc = this.#buckets.get(metric)
      if (acc === undefined || acc.key !== key) {
        // A new layout within one interval (the server restarted with other buckets): the newer layout wins.
        if (acc !== undefined) drop('bucket_layout_changed')
        this.#buckets.set(metric, {
          key,
          boundsMs: h.boundsMs,
          counts: h.counts.map((c) => Math.round(c)),
          sumMs: h.sumMs,
          quantilesMs: h.quantilesMs,
          source: h.source ?? obs.source,
        })
        continue
      }
      for (let i = 0; i < acc.counts.length; i++) acc.counts[i]! += Math.round(h.counts[i]!)
      acc.sumMs += h.sumMs
      if (h.quantilesMs !== undefined) acc.quantilesMs = h.quantilesMs
    }
  }

  /** The interval's report fields (absent when nothing was seen), and a fresh start. */
  take(): Pick<ReportSeries, 'signals' | 'bucketHistograms'> {
    if (this.empty) return {}
    const gauges = Object.fromEntries([...this.#gauges].map(([g, f]) => [g, f.stat()]))
    const counters = Object.fromEntries(this.#counters)
    const byClass = [...this.#classes]
      .sort((a, b) => a[0] - b[0])
      .slice(0, 16)
      .map(([priorityClass, c]) => ({
        priorityClass,
        ...(c.inFlight ? { inFlight: c.inFlight.stat() } : {}),
        ...(c.queued ? { queued: c.queued.stat() } : {}),
        admitted: c.admitted,
        ...(c.shed.size > 0 ? { shed: Object.fromEntries([...c.shed].slice(0, 32)) } : {}),
      }))
    const buckets = Object.fromEntries(
      [...this.#buckets].map(([m, b]) => [
        m,
        {
          boundsMs: [...b.boundsMs],
          counts: b.counts,
          sumMs: b.sumMs,
          ...(b.quantilesMs !== undefined ? { quantilesMs: b.quantilesMs } : {}),
          source: b.source,
        },
      ]),
    )
    const out: Pick<ReportSeries, 'signals' | 'bucketHistograms'> = {
      signals: {
        ...(this.#gauges.size > 0 ? { gauges } : {}),
        ...(this.#counters.size > 0 ? { counters } : {}),
        ...(byClass.length > 0 ? { byClass } : {}),
        sources: [...this.#sources].slice(0, 16),
      },
      ...(this.#buckets.size > 0 ? { bucketHistograms: buckets } : {}),
    }
    this.#gauges = new Map()
    this.#counters = new Map()
    this.#classes = new Map()
    this.#buckets = new Map()
    this.#sources = new Set()
    return out
  }
}

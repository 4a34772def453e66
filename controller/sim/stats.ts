import { newHistogram, HISTOGRAM_HIGHEST_US } from '../../collector/index.js'
import type { Histogram } from '../../collector/index.js'
import type { PhasePercentilesMs } from '../policy.js'
import { LogHistogram } from './log-histogram.js'

/**
 * Statistics of the simulator: whole-run latency per phase (HDR histograms, sums, maxima), the counters of one
 * control interval (what the policy observes), the per-minute timeline, and the sliding windows of arrivals
 * and concurrency.
 */

/** Latency summary of one phase over the run, in ms. */
export interface LatencyStats {
  readonly count: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly p999: number
  readonly max: number
}

/**
 * Per-minute series for charts. `arrivals`, `good` and `shed` count requests by the minute they arrived in;
 * `replicas` is the mean number alive; `p99Ms` is the p99 of requests completed in that minute.
 */
export interface SimTimeline {
  readonly minute: number[]
  readonly arrivals: number[]
  readonly good: number[]
  readonly shed: number[]
  readonly replicas: number[]
  readonly p99Ms: Array<number | null>
}

/**
 * One phase's latency over the whole run: an HDR histogram (µs), the sum and the maximum.
 *
 * @example const q = new PhaseStats(); q.record(12.5); q.summary().p99 // ≈ 12.5
 */
export class PhaseStats {
  private readonly h: Histogram = newHistogram()
  private sum = 0
  private max = 0
  record(ms: number): void {
    this.sum += ms
    if (ms > this.max) this.max = ms
    this.h.recordValue(toUs(ms))
  }
  summary(): LatencyStats {
    const n = this.h.totalCount
    if (n === 0) return { count: 0, mean: 0, p50: 0, p99: 0, p999: 0, max: 0 }
    return {
      count: n,
      mean: this.sum / n,
      p50: this.h.getValueAtPercentile(50) / 1000,
      p99: this.h.getValueAtPercentile(99) / 1000,
      p999: this.h.getValueAtPercentile(99.9) / 1000,
      max: this.max,
    }
  }
}

function toUs(ms: number): number {
  const us = Math.round(ms * 1000)
  return us > HISTOGRAM_HIGHEST_US ? HISTOGRAM_HIGHEST_US : us < 0 ? 0 : us
}

/**
 * Counters of one control interval, reset after every policy step.
 *
 * @example const i = new IntervalStats(); i.e2e.recordMs(20); i.percentiles(i.e2e).p99 // ≈ 20
 */
export class IntervalStats {
  readonly queue = new LogHistogram()
  readonly service = new LogHistogram()
  readonly e2e = new LogHistogram()
  readonly ttft = new LogHistogram()
  readonly tpot = new LogHistogram()
  busyMs = 0
  batchItems = 0
  batches = 0
  batchMax = 0
  completed = 0
  shed = 0
  good = 0
  arrivals = 0
  inputTokens = 0
  outputTokens = 0
  preemptions = 0
  /** ∫ in-system dt and ∫ running dt over the interval (ms·requests). */
  concIntegral = 0
  runIntegral = 0

  percentiles(h: LogHistogram): PhasePercentilesMs {
    return { p50: h.percentileMs(0.5), p99: h.percentileMs(0.99), count: h.count }
  }

  reset(): void {
    this.queue.reset()
    this.service.reset()
    this.e2e.reset()
    this.ttft.reset()
    this.tpot.reset()
    this.busyMs = 0
    this.batchItems = 0
    this.batches = 0
    this.batchMax = 0
    this.completed = 0
    this.shed = 0
    this.good = 0
    this.arrivals = 0
    this.inputTokens = 0
    this.outputTokens = 0
    this.preemptions = 0
    this.concIntegral = 0
    this.runIntegral = 0
  }
}

/** Windows (seconds) the observation's arrival rates and concurrency are averaged over. */
export const OBS_WINDOWS_S = [6, 10, 60] as const
const RING = 128

/**
 * Per-tick arrivals and mean concurrency, and their averages over the observation windows.
 *
 * @example w.push(ticks, arrivals, conc); w.averages(ticks, 1000).arrivalRps[60]
 */
export class TickWindows {
  private readonly arrivals = new Float64Array(RING)
  private readonly conc = new Float64Array(RING)
  push(tick: number, arrivals: number, conc: number): void {
    this.arrivals[tick % RING] = arrivals
    this.conc[tick % RING] = conc
  }
  averages(
    ticks: number,
    intervalMs: number,
  ): { arrivalRps: Record<number, number>; concurrency: Record<number, number> } {
    const arrivalRps: Record<number, number> = {}
    const concurrency: Record<number, number> = {}
    for (const w of OBS_WINDOWS_S) {
      const n = Math.max(1, Math.min(ticks, Math.round((w * 1000) / intervalMs), RING - 1))
      let a = 0
      let c = 0
      for (let k = 0; k < n; k++) {
        const i = (ticks - k + RING) % RING
        a += this.arrivals[i]!
        c += this.conc[i]!
      }
      arrivalRps[w] = a / ((n * intervalMs) / 1000)
      concurrency[w] = c / n
    }
    return { arrivalRps, concurrency }
  }
}

/**
 * The per-minute timeline: arrivals, good and shed by arrival minute, mean replicas, p99 of completions.
 *
 * @example tl.minuteOf(now, alive); tl.series.arrivals[tl.current]++
 */
export class Timeline {
  readonly series: SimTimeline = { minute: [], arrivals: [], good: [], shed: [], replicas: [], p99Ms: [] }
  /** Requests that arrived per minute (admitted or not). */
  readonly total: number[] = []
  private readonly replicaSamples: number[] = []
  readonly hist = new LogHistogram()
  current = -1

  /** Opens minutes up to the one holding `t` (closing the ones before). */
  minuteOf(t: number, alive: number): void {
    const m = Math.floor(t / 60_000)
    if (m <= this.current) return
    const s = this.series
    while (this.current < m) {
      if (this.current >= 0) this.close(alive)
      this.current++
      s.minute.push(this.current)
      s.arrivals.push(0)
      s.good.push(0)
      s.shed.push(0)
      s.replicas.push(0)
      s.p99Ms.push(null)
      this.total.push(0)
      this.replicaSamples.push(0)
    }
  }

  /** Adds a replica-count sample to the current minute. */
  sampleReplicas(alive: number): void {
    this.series.replicas[this.current]! += alive
    this.replicaSamples[this.current]!++
  }

  close(alive: number): void {
    const m = this.current
    this.series.p99Ms[m] = this.hist.percentileMs(0.99)
    this.hist.reset()
    const samples = this.replicaSamples[m]!
    this.series.replicas[m] = samples > 0 ? this.series.replicas[m]! / samples : alive
  }

  /** Minutes whose share of good requests fell below the objective. */
  violationMinutes(objective: number): number {
    let v = 0
    for (let m = 0; m < this.series.minute.length; m++) {
      const total = this.total[m]!
      if (total > 0 && this.series.good[m]! / total < objective) v++
    }
    return v
  }
}

import {
  METRICS,
  newHistogram,
  encodeHistogram,
  HISTOGRAM_DIGITS,
  HISTOGRAM_HIGHEST_US,
  HISTOGRAM_LOWEST_US,
} from '../collector/index.js'
import type { Histogram, Metric, ReportSeries, SeriesLabels } from '../collector/index.js'
import type { DurationUs, RequestSample, SampleSink } from './types.js'

/** A bound series: records into one label set without looking it up again (the hot path). */
export interface SeriesHandle {
  record(metric: Metric, durationUs: DurationUs): void
}

/** What {@link Recorder.drain} hands the shipper: the interval's series and refusals. */
export interface DrainedInterval {
  readonly series: ReportSeries[]
  readonly dropped: Record<string, number>
}

/**
 * Folds observations into one HDR histogram per (labels, metric) and counts requests, until drained.
 * Recording a value is a label lookup and an array increment: no allocation, no I/O, no throw.
 *
 * @example
 * ```ts
 * const rec = createRecorder()
 * rec.series(labels).record('kernel', 4200)
 * const { series } = rec.drain() // ready for an interval report
 * ```
 */
export interface Recorder extends SampleSink {
  series(labels: SeriesLabels): SeriesHandle
  drain(): DrainedInterval
  /** Total requests recorded since the recorder was made (for the agent's own metrics). */
  readonly recordedRequests: number
}

// The hot path counts straight into an array laid out exactly as HdrHistogram lays out its counts for
// tailguard's one configuration (1 µs .. 1 h, 3 significant digits): 2048 sub-buckets, so bucket b ≥ 1
// holds values [1024·2^b, 2048·2^b) at a resolution of 2^b. The index of an integer value v < 2^32 is then
// b·1024 + (v >>> b) with b = max(0, floor(log2 v) − 10): a clz32 and a shift, instead of the library's
// log2/pow/floor and min/max bookkeeping per value. drain() replays the counts into real HDR histograms
// (one recordValueWithCount per non-empty bucket), so the encoded histograms are byte for byte those of
// recording every value directly; a test checks that.
const SUB_BUCKET_HALF_MAGNITUDE = 10
const SUB_BUCKET_HALF_COUNT = 1 << SUB_BUCKET_HALF_MAGNITUDE
if (HISTOGRAM_LOWEST_US !== 1 || HISTOGRAM_DIGITS !== 3 || HISTOGRAM_HIGHEST_US >= 2 ** 32)
  throw new Error('agent/recorder.ts: the fast counts layout assumes 1 µs .. < 2^32 µs at 3 digits')
const COUNTS_LENGTH = indexOf(HISTOGRAM_HIGHEST_US) + 1
/** Covers values below 2^17 µs (131 ms) at first (32 KB); arrays double as larger values arrive. */
const INITIAL_COUNTS_LENGTH = 8 * SUB_BUCKET_HALF_COUNT

function indexOf(v: number): number {
  const u = v >>> 0
  const b = Math.max(0, 31 - Math.clz32(u) - SUB_BUCKET_HALF_MAGNITUDE)
  return b * SUB_BUCKET_HALF_COUNT + (u >>> b)
}

/** The lowest value that lands at counts index `i` (recorded again at drain). */
function valueAt(i: number): number {
  if (i < 2 * SUB_BUCKET_HALF_COUNT) return i
  const b = (i >>> SUB_BUCKET_HALF_MAGNITUDE) - 1
  return ((i & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT) * 2 ** b
}

const METRIC_INDEX = new Map<string, number>(METRICS.map((m, i) => [m, i]))
const TTFT_INDEX = METRIC_INDEX.get('ttft')!
const TPOT_INDEX = METRIC_INDEX.get('tpot')!

/** Counts of one metric of one series since the last drain. */
class MetricCounts {
  // Grown on demand up to COUNTS_LENGTH (94 KB): most phases never see values past a few seconds.
  counts = new Uint32Array(INITIAL_COUNTS_LENGTH)
  total = 0
  lo = COUNTS_LENGTH
  hi = -1

  add(v: number): void {
    const i = indexOf(v)
    if (i >= this.counts.length) this.#grow(i)
    this.counts[i]!++
    this.total++
    if (i < this.lo) this.lo = i
    if (i > this.hi) this.hi = i
  }

  #grow(i: number): void {
    let n = this.counts.length
    while (n <= i) n *= 2
    const grown = new Uint32Array(Math.min(n, COUNTS_LENGTH))
    grown.set(this.counts)
    this.counts = grown
  }

  /** Moves the counts into a new HDR histogram and clears them. */
  take(): Histogram {
    const h = newHistogram()
    const c = this.counts
    for (let i = this.lo; i <= this.hi; i++) {
      const n = c[i]!
      if (n !== 0) {
        h.recordValueWithCount(valueAt(i), n)
        c[i] = 0
      }
    }
    this.total = 0
    this.lo = COUNTS_LENGTH
    this.hi = -1
    return h
  }
}

class SeriesState {
  readonly labels: SeriesLabels
  readonly metrics: (MetricCounts | undefined)[] = new Array<MetricCounts | undefined>(METRICS.length)
  ok = 0
  error = 0
  shed = 0
  outputTokens = 0
  errorClasses = new Map<string, number>()
  /** Recorded into since the last drain. */
  active = false
  /** Drains in a row without data; idle series are forgotten (handles re-resolve). */
  idleDrains = 0
  live = true

  constructor(labels: SeriesLabels) {
    this.labels = labels
  }

  /** True when `l` holds this series' label values (a cheap check, often pointer-equal strings). */
  matches(l: SeriesLabels): boolean {
    const m = this.labels
    return (
      m.service === l.service &&
      m.model === l.model &&
      m.version === l.version &&
      m.replica === l.replica &&
      m.node === l.node
    )
  }
}

/** Series idle for this many drains in a row are dropped from memory. */
const IDLE_DRAINS_BEFORE_EVICTION = 3

type Level<T> = Map<string, T>

class RecorderImpl implements Recorder {
  // service → model → version → replica → node → state: lookups hash each label string (V8 caches a
  // string's hash) instead of building and hashing one concatenated key per call.
  #tree: Level<Level<Level<Level<Level<SeriesState>>>>> = new Map()
  #states: SeriesState[] = []
  // Consecutive calls are often for the same series: a one-entry cache, checked field by field.
  #last: SeriesState | undefined
  #dropped = new Map<string, number>()
  recordedRequests = 0

  #lookup(labels: SeriesLabels): SeriesState {
    const last = this.#last
    if (last !== undefined && last.live && last.matches(labels)) return last
    return (this.#last = this.#resolve(labels))
  }

  #resolve(labels: SeriesLabels): SeriesState {
    const l1 = getOrCreate(this.#tree, labels.service)
    const l2 = getOrCreate(l1, labels.model)
    const l3 = getOrCreate(l2, labels.version)
    const l4 = getOrCreate(l3, labels.replica)
    let s = l4.get(labels.node)
    if (s === undefined) {
      // A copy: the caller may reuse and change its object.
      s = new SeriesState({
        service: labels.service,
        model: labels.model,
        version: labels.version,
        replica: labels.replica,
        node: labels.node,
      })
      l4.set(labels.node, s)
      this.#states.push(s)
    }
    return s
  }

  #record(s: SeriesState, metricIndex: number, durationUs: DurationUs): void {
    // toRecordableUs, inlined: negative and NaN are refused, the rest clamped to 1 h and rounded.
    if (!(durationUs >= 0)) {
      this.drop('negative_duration')
      return
    }
    const v = durationUs > HISTOGRAM_HIGHEST_US ? HISTOGRAM_HIGHEST_US : Math.round(durationUs)
    let m = s.metrics[metricIndex]
    if (m === undefined) m = s.metrics[metricIndex] = new MetricCounts()
    m.add(v)
    s.active = true
  }

  series(labels: SeriesLabels): SeriesHandle {
    let state = this.#resolve(labels)
    const copy = state.labels
    return {
      record: (metric, durationUs) => {
        const i = METRIC_INDEX.get(metric)
        if (i === undefined) {
          this.drop('unknown_phase')
          return
        }
        // The state outlives drains; only the eviction of an idle series makes the handle re-resolve.
        if (!state.live) state = this.#resolve(copy)
        this.#record(state, i, durationUs)
      },
    }
  }

  recordLatency(labels: SeriesLabels, metric: Metric, durationUs: DurationUs): void {
    const i = METRIC_INDEX.get(metric)
    if (i === undefined) {
      this.drop('unknown_phase')
      return
    }
    this.#record(this.#lookup(labels), i, durationUs)
  }

  recordRequest(sample: RequestSample): void {
    const s = this.#lookup(sample.labels)
    const phases = sample.phasesUs as Readonly<Record<string, DurationUs | undefined>>
    for (const phase in phases) {
      const us = phases[phase]
      if (us === undefined) continue
      const i = METRIC_INDEX.get(phase)
      if (i === undefined || i === TTFT_INDEX || i === TPOT_INDEX) {
        this.drop('unknown_phase')
        continue
      }
      this.#record(s, i, us)
    }
    if (sample.ttftUs !== undefined) this.#record(s, TTFT_INDEX, sample.ttftUs)
    if (sample.tpotUs !== undefined) this.#record(s, TPOT_INDEX, sample.tpotUs)
    s[sample.status]++
    if (sample.status !== 'ok' && sample.errorClass)
      s.errorClasses.set(sample.errorClass, (s.errorClasses.get(sample.errorClass) ?? 0) + 1)
    if (sample.outputTokens !== undefined && sample.outputTokens >= 0)
      s.outputTokens += Math.round(sample.outputTokens)
    s.active = true
    this.recordedRequests++
  }

  drop(reason: string, n = 1): void {
    this.#dropped.set(reason, (this.#dropped.get(reason) ?? 0) + n)
  }

  drain(): DrainedInterval {
    const dropped = Object.fromEntries(this.#dropped)
    this.#dropped = new Map()
    const series: ReportSeries[] = []
    let evicted = false
    for (const s of this.#states) {
      if (!s.active) {
        if (++s.idleDrains >= IDLE_DRAINS_BEFORE_EVICTION) {
          s.live = false
          evicted = true
        }
        continue
      }
      const histograms: Partial<Record<Metric, string>> = {}
      for (let i = 0; i < s.metrics.length; i++) {
        const m = s.metrics[i]
        if (m !== undefined && m.total > 0) histograms[METRICS[i]!] = encodeHistogram(m.take())
      }
      series.push({
        labels: s.labels,
        histograms,
        requests: { ok: s.ok, error: s.error, shed: s.shed },
        ...(s.errorClasses.size > 0
          ? { errorClasses: Object.fromEntries([...s.errorClasses].slice(0, 64)) }
          : {}),
        ...(s.outputTokens > 0 ? { outputTokens: s.outputTokens } : {}),
      })
      s.ok = s.error = s.shed = s.outputTokens = 0
      s.errorClasses = new Map()
      s.active = false
      s.idleDrains = 0
    }
    if (evicted) this.#evict()
    return { series, dropped }
  }

  #evict(): void {
    this.#states = this.#states.filter((s) => s.live)
    this.#tree = new Map()
    this.#last = undefined
    for (const s of this.#states) {
      const l = s.labels
      const byReplica = getOrCreate(getOrCreate(getOrCreate(this.#tree, l.service), l.model), l.version)
      getOrCreate(byReplica, l.replica).set(l.node, s)
    }
  }
}

function getOrCreate<T>(m: Map<string, Map<string, T>>, key: string): Map<string, T> {
  let v = m.get(key)
  if (v === undefined) {
    v = new Map()
    m.set(key, v)
  }
  return v
}

/**
 * Makes an empty {@link Recorder}.
 *
 * @example
 * ```ts
 * const recorder = createRecorder()
 * recorder.recordLatency(labels, 'queue', 850)
 * ```
 */
export function createRecorder(): Recorder {
  return new RecorderImpl()
}

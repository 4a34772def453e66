import {
  METRICS,
  REPORT_LIMITS,
  toWellFormedUnicode,
  encodeBuckets,
  tickIndex,
  HISTOGRAM_HIGHEST_US,
  TICKS_PER_US,
} from '../collector/index.js'
import type { Metric, ReportSeries, SeriesLabels } from '../collector/index.js'
import type { DurationUs, RequestSample, SampleSink, SignalObservation } from './types.js'
import { SignalFold } from './signal-fold.js'

/** A bound series: records into one label set without looking it up again (the hot path). */
export interface SeriesHandle {
  record(metric: Metric, durationUs: DurationUs): void
}

/**
 * Label-set limits (docs/limits.md). A label set past them is not lost: it is folded into an overflow series
 * of its service (`replica="__overflow__"`, as OpenTelemetry's cardinality limit folds into an overflow
 * attribute set), so request counts and latencies stay whole; the folds are counted.
 *
 * @example createRecorder({ maxSeries: 4000, maxSeriesPerService: 2000, maxOverflowSeries: 256 })
 */
export interface RecorderLimits {
  /** Most ordinary label sets the recorder holds at once (idle ones are forgotten after 3 intervals). */
  readonly maxSeries: number
  /** Most ordinary label sets of one service. */
  readonly maxSeriesPerService: number
  /**
   * Most overflow series. Past the limits a label set folds into `{service, model, version, node,
   * replica: "__overflow__"}`; when that series would exceed this budget, into `{service}` with every other
   * label `"__overflow__"`; and when even that would, into the one series with every label `"__overflow__"`.
   */
  readonly maxOverflowSeries: number
}

/** Defaults of {@link RecorderLimits}. @example createRecorder(DEFAULT_RECORDER_LIMITS) */
export const DEFAULT_RECORDER_LIMITS: RecorderLimits = {
  maxSeries: 4000,
  maxSeriesPerService: 2000,
  maxOverflowSeries: 256,
}

/** The label value of overflow series. @example labels.replica === OVERFLOW_LABEL */
export const OVERFLOW_LABEL = '__overflow__'

/** Cardinality and label hygiene counts since the recorder was made (the agent's /metrics). */
export interface RecorderStats {
  /** Ordinary and overflow series held now. */
  readonly series: number
  readonly overflowSeries: number
  /** Distinct label sets folded into overflow series, summed over intervals. */
  readonly overflowLabelSets: number
  /** Requests and latency observations recorded into overflow series. */
  readonly overflowObservations: number
  /** Label values repaired (lone UTF-16 surrogates replaced by U+FFFD, NUL removed, cut to 256 characters). */
  readonly labelsRepaired: number
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
  /** Records live signals of one series (see {@link SignalObservation}); the recorder always has it. */
  recordSignals(labels: SeriesLabels, observation: SignalObservation): void
  series(labels: SeriesLabels): SeriesHandle
  drain(): DrainedInterval
  /**
   * The same interval as {@link drain}, cut at the call (synchronously, a pointer move per series) and encoded
   * in slices of about `sliceMs` (default 8) with the event loop free in between, so a drain of 10,000
   * series never blocks the agent's receivers for long. Recording goes on meanwhile, into the next interval.
   */
  drainSliced(opts?: { readonly sliceMs?: number }): Promise<DrainedInterval>
  /** Total requests recorded since the recorder was made (for the agent's own metrics). */
  readonly recordedRequests: number
  /** Cardinality limits and label repairs, for the agent's /metrics. */
  stats(): RecorderStats
}

// The hot path counts into a small open-addressing hash table keyed by the collector's bucket index
// (log-linear buckets of 1/1024 µs ticks, ≤ 0.1% wide): memory grows with the buckets a series actually
// uses (8 bytes a slot, at most three quarters full), not with the range of values. a drain sorts the used buckets
// and encodes them as the collector's sparse `tgh1` form directly; no histogram object is built.
const INITIAL_SLOTS = 16
const EMPTY_KEY = -1

const METRIC_INDEX = new Map<string, number>(METRICS.map((m, i) => [m, i]))
const TTFT_INDEX = METRIC_INDEX.get('ttft')!
const TPOT_INDEX = METRIC_INDEX.get('tpot')!

/** Counts of one metric of one series since the last drain: bucket index → count, hashed. */
class MetricCounts {
  keys = new Int32Array(INITIAL_SLOTS).fill(EMPTY_KEY)
  counts = new Uint32Array(INITIAL_SLOTS)
  used = 0
  total = 0

  /** Records one value in µs (≥ 0, already clamped to the range). */
  add(us: number): void {
    const i = tickIndex(Math.round(us * TICKS_PER_US))
    const keys = this.keys
    const mask = keys.length - 1
    let slot = (Math.imul(i, 0x9e3779b1) >>> 0) & mask
    for (;;) {
      const k = keys[slot]!
      if (k === i) break
      if (k === EMPTY_KEY) {
        // At most three quarters full: linear probing stays short, and a table is 2.7 to 5.3 bytes a bucket.
        if (4 * (this.used + 1) > 3 * keys.length) {
          this.#grow()
          this.add(us)
          return
        }
        keys[slot] = i
        this.used++
        break
      }
      slot = (slot + 1) & mask
    }
    this.counts[slot]!++
    this.total++
  }

  #grow(): void {
    const oldKeys = this.keys
    const oldCounts = this.counts
    this.keys = new Int32Array(oldKeys.length * 2).fill(EMPTY_KEY)
    this.counts = new Uint32Array(oldKeys.length * 2)
    const mask = this.keys.length - 1
    for (let j = 0; j < oldKeys.length; j++) {
      const k = oldKeys[j]!
      if (k === EMPTY_KEY) continue
      let slot = (Math.imul(k, 0x9e3779b1) >>> 0) & mask
      while (this.keys[slot] !== EMPTY_KEY) slot = (slot + 1) & mask
      this.keys[slot] = k
      this.counts[slot] = oldCounts[j]!
    }
  }

  /** Encodes the counts as the collector's sparse form. A drain hands the table over, so nothing is cleared. */
  encode(): string {
    const n = this.used
    // (index, count) packed in one float so a typed-array sort orders the pairs by index.
    const packed = new Float64Array(n)
    const keys = this.keys
    let k = 0
    for (let j = 0; j < keys.length; j++)
      if (keys[j] !== EMPTY_KEY) packed[k++] = keys[j]! * 2 ** 32 + this.counts[j]!
    packed.sort()
    const indexes = new Int32Array(n)
    const counts = new Uint32Array(n)
    for (let j = 0; j < n; j++) {
      indexes[j] = Math.floor(packed[j]! / 2 ** 32)
      counts[j] = packed[j]! % 2 ** 32
    }
    return encodeBuckets(n, indexes, counts)
  }
}

/** One drained series whose histograms are still to be encoded (into `histograms`, the report's object). */
interface PendingSeries {
  readonly histograms: Partial<Record<Metric, string>>
  readonly metrics: readonly (MetricCounts | undefined)[]
}

function encodeSeries(p: PendingSeries): void {
  for (let i = 0; i < p.metrics.length; i++) {
    const m = p.metrics[i]
    if (m !== undefined && m.total > 0) p.histograms[METRICS[i]!] = m.encode()
  }
}

class SeriesState {
  readonly labels: SeriesLabels
  /** This interval's counts per metric; a drain takes the whole array and leaves an empty one. */
  metrics: (MetricCounts | undefined)[] = new Array<MetricCounts | undefined>(METRICS.length)
  ok = 0
  error = 0
  shed = 0
  outputTokens = 0
  errorClasses = new Map<string, number>()
  /** Live signals, created on the first observation (most series never get any). */
  signals: SignalFold | undefined
  /** Recorded into since the last drain. */
  active = false
  /** Drains in a row without data; idle series are forgotten (handles re-resolve). */
  idleDrains = 0
  live = true
  /** An overflow series (folds label sets past the limits). */
  readonly overflow: boolean

  constructor(labels: SeriesLabels, overflow = false) {
    this.labels = labels
    this.overflow = overflow
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
  readonly #limits: RecorderLimits
  /** Ordinary (not overflow) series held, in all and per service. */
  #ordinary = 0
  #perService = new Map<string, number>()
  #overflowCount = 0
  #overflowKeys = new Set<number>()
  #overflowLabelSets = 0
  #overflowObservations = 0
  #labelsRepaired = 0

  constructor(limits: RecorderLimits) {
    this.#limits = limits
  }

  stats(): RecorderStats {
    return {
      series: this.#states.length,
      overflowSeries: this.#overflowCount,
      overflowLabelSets: this.#overflowLabelSets + this.#overflowKeys.size,
      overflowObservations: this.#overflowObservations,
      labelsRepaired: this.#labelsRepaired,
    }
  }

  #lookup(labels: SeriesLabels): SeriesState {
    const last = this.#last
    if (last !== undefined && last.live && last.matches(labels)) return last
    return (this.#last = this.#resolve(labels))
  }

  #resolve(raw: SeriesLabels): SeriesState {
    const labels = this.#clean(raw)
    const existing = this.#find(labels)
    if (existing !== undefined) return existing
    const perService = this.#perService.get(labels.service) ?? 0
    if (this.#ordinary < this.#limits.maxSeries && perService < this.#limits.maxSeriesPerService) {
      this.#ordinary++
      this.#perService.set(labels.service, perService + 1)
      return this.#create(labels, false)
    }
    return this.#overflowFor(labels)
  }

  /** The overflow series a label set past the limits folds into (see {@link RecorderLimits}). */
  #overflowFor(labels: SeriesLabels): SeriesState {
    this.#noteOverflow(labels)
    const O = OVERFLOW_LABEL
    const candidates: SeriesLabels[] = [
      {
        service: labels.service,
        model: labels.model,
        version: labels.version,
        replica: O,
        node: labels.node,
      },
      { service: labels.service, model: O, version: O, replica: O, node: O },
    ]
    for (const c of candidates) {
      const s = this.#find(c)
      if (s !== undefined) return s
      if (this.#overflowCount < this.#limits.maxOverflowSeries) {
        this.#overflowCount++
        return this.#create(c, true)
      }
    }
    const all: SeriesLabels = { service: O, model: O, version: O, replica: O, node: O }
    const s = this.#find(all)
    if (s !== undefined) return s
    this.#overflowCount++
    return this.#create(all, true)
  }

  #noteOverflow(labels: SeriesLabels): void {
    // Distinct label sets per interval, by a 52-bit hash (two FNV-1a variants), bounded: past the cap it is
    // a lower bound.
    let h = 0x811c9dc5
    let g = 0x01000193
    for (const v of [labels.service, labels.model, labels.version, labels.replica, labels.node]) {
      for (let i = 0; i < v.length; i++) {
        const c = v.charCodeAt(i)
        h = Math.imul(h ^ c, 16777619)
        g = Math.imul(g ^ c, 0x5bd1e995) ^ (g >>> 15)
      }
      h = Math.imul(h ^ 0xff, 16777619)
      g = Math.imul(g ^ 0xff, 0x5bd1e995)
    }
    if (this.#overflowKeys.size < MAX_OVERFLOW_KEYS_PER_INTERVAL)
      this.#overflowKeys.add((h >>> 0) * 0x100000 + (g & 0xfffff))
  }

  #find(labels: SeriesLabels): SeriesState | undefined {
    return this.#tree
      .get(labels.service)
      ?.get(labels.model)
      ?.get(labels.version)
      ?.get(labels.replica)
      ?.get(labels.node)
  }

  #create(labels: SeriesLabels, overflow: boolean): SeriesState {
    // A copy: the caller may reuse and change its object.
    const s = new SeriesState(
      {
        service: labels.service,
        model: labels.model,
        version: labels.version,
        replica: labels.replica,
        node: labels.node,
      },
      overflow,
    )
    const l4 = getOrCreate(
      getOrCreate(getOrCreate(getOrCreate(this.#tree, labels.service), labels.model), labels.version),
      labels.replica,
    )
    l4.set(labels.node, s)
    this.#states.push(s)
    return s
  }

  /** Label values as the report schema takes them: well-formed Unicode, no NUL, at most 256 characters. */
  #clean(l: SeriesLabels): SeriesLabels {
    const service = this.#cleanValue(l.service) || 'unknown_service'
    const model = this.#cleanValue(l.model)
    const version = this.#cleanValue(l.version)
    const replica = this.#cleanValue(l.replica)
    const node = this.#cleanValue(l.node)
    if (
      service === l.service &&
      model === l.model &&
      version === l.version &&
      replica === l.replica &&
      node === l.node
    )
      return l
    return { service, model, version, replica, node }
  }

  #cleanValue(v: string): string {
    const out = cleanText(typeof v === 'string' ? v : String(v ?? ''), REPORT_LIMITS.maxLabelLength)
    if (out !== v) this.#labelsRepaired++
    return out
  }

  #record(s: SeriesState, metricIndex: number, durationUs: DurationUs): void {
    // toRecordableUs, inlined: negative and NaN are refused, the rest clamped to 30 days.
    if (!(durationUs >= 0)) {
      this.drop('negative_duration')
      return
    }
    const v = durationUs > HISTOGRAM_HIGHEST_US ? HISTOGRAM_HIGHEST_US : durationUs
    let m = s.metrics[metricIndex]
    if (m === undefined) m = s.metrics[metricIndex] = new MetricCounts()
    m.add(v)
    s.active = true
    if (s.overflow) this.#overflowObservations++
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
    if (sample.status !== 'ok' && sample.errorClass) {
      const c = cleanText(sample.errorClass, 128)
      if (c !== '') s.errorClasses.set(c, (s.errorClasses.get(c) ?? 0) + 1)
    }
    if (sample.outputTokens !== undefined) {
      // One request's token count is bounded (a 1e300 would make the whole report unacceptable).
      if (sample.outputTokens >= 0 && sample.outputTokens <= MAX_OUTPUT_TOKENS_PER_REQUEST)
        s.outputTokens += Math.round(sample.outputTokens)
      else this.drop('output_tokens_out_of_range')
    }
    s.active = true
    this.recordedRequests++
  }

  recordSignals(labels: SeriesLabels, observation: SignalObservation): void {
    const s = this.#lookup(labels)
    ;(s.signals ??= new SignalFold()).add(observation, (reason) => this.drop(reason))
    const r = observation.requests
    if (r !== undefined) {
      if (r.ok >= 0 && Number.isFinite(r.ok)) s.ok += Math.round(r.ok)
      else this.drop('signal_negative_count')
      if (r.error >= 0 && Number.isFinite(r.error)) s.error += Math.round(r.error)
      else this.drop('signal_negative_count')
    }
    s.active = true
  }

  drop(reason: string, n = 1): void {
    const r = cleanText(reason, 64) || 'unknown'
    if (!(n > 0) || !Number.isFinite(n)) return
    this.#dropped.set(r, (this.#dropped.get(r) ?? 0) + Math.round(n))
  }

  drain(): DrainedInterval {
    const cut = this.#cut()
    for (let i = 0; i < cut.pending.length; i++) encodeSeries(cut.pending[i]!)
    return cut.interval
  }

  async drainSliced(opts: { readonly sliceMs?: number } = {}): Promise<DrainedInterval> {
    const sliceMs = opts.sliceMs ?? 8
    const cut = this.#cut()
    let t0 = performance.now()
    for (let i = 0; i < cut.pending.length; i++) {
      encodeSeries(cut.pending[i]!)
      // Checked every 16 series: a series encodes in tens of microseconds.
      if ((i & 15) === 15 && performance.now() - t0 >= sliceMs) {
        await new Promise<void>((resolve) => setImmediate(resolve))
        t0 = performance.now()
      }
    }
    return cut.interval
  }

  /**
   * Ends the interval: every active series hands over its counts (the arrays move, nothing is encoded yet)
   * and starts the next interval empty. The histograms of the returned series are filled by
   * {@link encodeSeries} on each pending entry.
   */
  #cut(): { interval: DrainedInterval; pending: PendingSeries[] } {
    const dropped = Object.fromEntries([...this.#dropped].slice(0, 64))
    this.#dropped = new Map()
    this.#overflowLabelSets += this.#overflowKeys.size
    this.#overflowKeys = new Set()
    const series: ReportSeries[] = []
    const pending: PendingSeries[] = []
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
      series.push({
        labels: s.labels,
        histograms,
        requests: { ok: s.ok, error: s.error, shed: s.shed },
        ...(s.errorClasses.size > 0 ? { errorClasses: cappedClasses(s.errorClasses) } : {}),
        ...(s.outputTokens > 0 ? { outputTokens: s.outputTokens } : {}),
        ...(s.signals?.take() ?? {}),
      })
      pending.push({ histograms, metrics: s.metrics })
      s.metrics = new Array<MetricCounts | undefined>(METRICS.length)
      s.ok = s.error = s.shed = s.outputTokens = 0
      s.errorClasses = new Map()
      s.active = false
      s.idleDrains = 0
    }
    if (evicted) this.#evict()
    return { interval: { series, dropped }, pending }
  }

  #evict(): void {
    this.#states = this.#states.filter((s) => s.live)
    this.#tree = new Map()
    this.#last = undefined
    this.#ordinary = 0
    this.#overflowCount = 0
    this.#perService = new Map()
    for (const s of this.#states) {
      if (s.overflow) this.#overflowCount++
      else {
        this.#ordinary++
        this.#perService.set(s.labels.service, (this.#perService.get(s.labels.service) ?? 0) + 1)
      }
      const l = s.labels
      const byReplica = getOrCreate(getOrCreate(getOrCreate(this.#tree, l.service), l.model), l.version)
      getOrCreate(byReplica, l.replica).set(l.node, s)
    }
  }
}

/** Largest output-token count one request may report (larger ones are dropped and counted). */
const MAX_OUTPUT_TOKENS_PER_REQUEST = 100_000_000

/** Distinct overflowed label sets remembered per interval (a Set of 32-bit hashes, ~2 MB at most). */
const MAX_OVERFLOW_KEYS_PER_INTERVAL = 100_000

/** Text as the report takes it: well-formed Unicode, no NUL, at most `max` UTF-16 units (never a split pair). */
function cleanText(v: string, max: number): string {
  let s = v.includes('\u0000') ? v.replaceAll('\u0000', '') : v
  if (s.length > max) {
    s = s.slice(0, max)
    const last = s.charCodeAt(max - 1)
    if (last >= 0xd800 && last <= 0xdbff) s = s.slice(0, max - 1)
  }
  return toWellFormedUnicode(s)
}

/** At most 64 error classes per series: the 63 first seen, the rest summed as `other`. */
function cappedClasses(classes: Map<string, number>): Record<string, number> {
  if (classes.size <= 64) return Object.fromEntries(classes)
  const out: Record<string, number> = {}
  let i = 0
  let other = 0
  for (const [k, n] of classes) {
    if (i++ < 63 && k !== 'other') out[k] = n
    else other += n
  }
  out.other = (out.other ?? 0) + other
  return out
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
 * const recorder = createRecorder({ maxSeries: 4000 }) // limits: DEFAULT_RECORDER_LIMITS
 * recorder.recordLatency(labels, 'queue', 850)
 * ```
 */
export function createRecorder(limits: Partial<RecorderLimits> = {}): Recorder {
  return new RecorderImpl({ ...DEFAULT_RECORDER_LIMITS, ...limits })
}

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
   * The same interval as {@link drain}, cut at the call (in constant time: the recorder's generation moves on)
   * then taken series by series and encoded in slices of about `sliceMs` (default 8) with the event loop free
   * in between, so a drain of 10,000 series never blocks the agent's receivers for long. Recording goes on
   * meanwhile, into the next interval: a series recorded into before the drain reaches it first hands over
   * its counts of the interval cut, so no sample is lost or counted twice.
   */
  drainSliced(opts?: { readonly sliceMs?: number }): Promise<DrainedInterval>
  /** Total requests recorded since the recorder was made (for the agent's own metrics). */
  readonly recordedRequests: number
  /** Cardinality limits and label repairs, for the agent's /metrics. */
  stats(): RecorderStats
}

// The hot path counts into a small open-addressing hash table keyed by the collector's bucket index
// (log-linear buckets of 1/1024 µs ticks, ≤ 0.1% wide): memory grows with the buckets a series actually
// uses, not with the range of values. A table is one ArrayBuffer: 16-bit keys (bucket index + 1; 0 is an empty
// slot, and the highest index, 30 days, is 43,190) then 32-bit counts, 6 bytes a slot, at most three quarters
// full. Capacities step by 1.5× and 1.33× in turn (16, 24, 32, 48, …), so a table of n buckets takes 8 to 12
// bytes a bucket. A drain sorts the used buckets and encodes them as the collector's sparse `tgh1` form
// directly; no histogram object is built.
const EMPTY_KEY = 0
const TWO_32 = 2 ** 32

/** Slots of a table of capacity class `cls`: 16, 24, 32, 48, 64, 96, … */
const capacity = (cls: number): number => (2 + (cls & 1)) << (3 + (cls >> 1))

/** Retired tables at most this large are kept for reuse, up to {@link POOL_BYTES} in all. */
const POOL_TABLE_BYTES = 6 * 1024
const POOL_BYTES = 32 * 1024

/**
 * Tables retired by growth (and by drains, once encoded), handed to the next table of the same capacity before a
 * new one is allocated: a table grows through several capacities in an interval, and each retired buffer would
 * otherwise wait for a garbage collection (and the background sweep after it) to be freed. Bounded in bytes.
 */
class TablePool {
  readonly #free: Uint16Array[][] = []
  #bytes = 0

  /** An empty table (the keys view; the counts follow in the same buffer) of class `cls`. */
  take(cls: number): Uint16Array {
    const keys = this.#free[cls]?.pop()
    if (keys === undefined) {
      const n = capacity(cls)
      return new Uint16Array(new ArrayBuffer(6 * n), 0, n)
    }
    this.#bytes -= keys.buffer.byteLength
    return keys
  }

  /** Keeps a table no longer used (cleared here), if it is small and the pool has room. */
  give(cls: number, keys: Uint16Array, counts: Uint32Array): void {
    const bytes = keys.buffer.byteLength
    if (bytes > POOL_TABLE_BYTES || this.#bytes + bytes > POOL_BYTES) return
    keys.fill(EMPTY_KEY)
    counts.fill(0)
    ;(this.#free[cls] ??= []).push(keys)
    this.#bytes += bytes
  }
}

const countsOf = (keys: Uint16Array): Uint32Array =>
  new Uint32Array(keys.buffer, keys.byteLength, keys.length)

/** Counts of one metric of one series over one interval: bucket index → count, hashed. */
class MetricCounts {
  cls = 0
  keys: Uint16Array
  counts: Uint32Array
  used = 0
  total = 0

  constructor(pool: TablePool) {
    this.keys = pool.take(0)
    this.counts = countsOf(this.keys)
  }

  /** Records one value in µs (≥ 0, already clamped to the range). */
  add(us: number, pool: TablePool): void {
    const key = tickIndex(Math.round(us * TICKS_PER_US)) + 1
    const keys = this.keys
    const n = keys.length
    // Fibonacci hashing, the product's high bits scaled to the capacity (not a power of two).
    let slot = (((Math.imul(key, 0x9e3779b1) >>> 0) * n) / TWO_32) | 0
    for (;;) {
      const k = keys[slot]!
      if (k === key) break
      if (k === EMPTY_KEY) {
        // At most three quarters full: linear probing stays short.
        if (4 * (this.used + 1) > 3 * n) {
          this.#grow(pool)
          this.add(us, pool)
          return
        }
        keys[slot] = key
        this.used++
        break
      }
      if (++slot === n) slot = 0
    }
    this.counts[slot]!++
    this.total++
  }

  #grow(pool: TablePool): void {
    const oldKeys = this.keys
    const oldCounts = this.counts
    const oldCls = this.cls
    const keys = (this.keys = pool.take(++this.cls))
    const counts = (this.counts = countsOf(keys))
    const n = keys.length
    for (let j = 0; j < oldKeys.length; j++) {
      const k = oldKeys[j]!
      if (k === EMPTY_KEY) continue
      let slot = (((Math.imul(k, 0x9e3779b1) >>> 0) * n) / TWO_32) | 0
      while (keys[slot] !== EMPTY_KEY) if (++slot === n) slot = 0
      keys[slot] = k
      counts[slot] = oldCounts[j]!
    }
    pool.give(oldCls, oldKeys, oldCounts)
  }

  /**
   * Encodes the counts as the collector's sparse form, sorting in `scratch` (grown as needed), then gives the
   * table back to the pool: the counts are gone afterwards.
   */
  encode(pool: TablePool, scratch: EncodeScratch): string {
    const n = this.used
    if (scratch.packed.length < n) scratch.grow(n)
    // (index, count) packed in one float so a typed-array sort orders the pairs by index.
    const packed = scratch.packed.subarray(0, n)
    const keys = this.keys
    const counts = this.counts
    let k = 0
    for (let j = 0; j < keys.length; j++)
      if (keys[j] !== EMPTY_KEY) packed[k++] = (keys[j]! - 1) * TWO_32 + counts[j]!
    packed.sort()
    const indexes = scratch.indexes
    const sorted = scratch.counts
    for (let j = 0; j < n; j++) {
      indexes[j] = Math.floor(packed[j]! / TWO_32)
      sorted[j] = packed[j]! % TWO_32
    }
    pool.give(this.cls, keys, counts)
    return encodeBuckets(n, indexes, sorted)
  }
}

/** The arrays a drain sorts and encodes a table in, kept between tables (a drain encodes thousands). */
class EncodeScratch {
  packed = new Float64Array(256)
  indexes = new Int32Array(256)
  counts = new Uint32Array(256)

  grow(n: number): void {
    const size = Math.max(n, 2 * this.packed.length)
    this.packed = new Float64Array(size)
    this.indexes = new Int32Array(size)
    this.counts = new Uint32Array(size)
  }
}

const METRIC_INDEX = new Map<string, number>(METRICS.map((m, i) => [m, i]))
const TTFT_INDEX = METRIC_INDEX.get('ttft')!
const TPOT_INDEX = METRIC_INDEX.get('tpot')!

/** One series' interval, taken out of it: the report entry, its histograms still to be encoded. */
interface PendingSeries {
  readonly series: ReportSeries
  readonly histograms: Partial<Record<Metric, string>>
  readonly metrics: readonly (MetricCounts | undefined)[] | undefined
}

class SeriesState {
  readonly labels: SeriesLabels
  /** The interval (the recorder's generation) the counts below belong to. */
  gen: number
  /** Counts per metric, made on the first latency of the interval (most series record a few metrics). */
  metrics: (MetricCounts | undefined)[] | undefined
  ok = 0
  error = 0
  shed = 0
  outputTokens = 0
  /** Made on the first error class of the interval. */
  errorClasses: Map<string, number> | undefined
  /** Live signals, created on the first observation (most series never get any). */
  signals: SignalFold | undefined
  /** Recorded into in interval `gen`. */
  active = false
  /**
   * The previous interval, handed over when this series was recorded into after the cut and before the drain
   * reached it (see {@link RecorderImpl.drainSliced}); the drain takes it from here.
   */
  handed: PendingSeries | undefined
  /** Drains in a row without data; idle series are forgotten (handles re-resolve). */
  idleDrains = 0
  live = true
  /** An overflow series (folds label sets past the limits). */
  readonly overflow: boolean

  constructor(labels: SeriesLabels, gen: number, overflow: boolean) {
    this.labels = labels
    this.gen = gen
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

  /** Moves this interval's counts out into a report entry (histograms not yet encoded); the series starts empty. */
  detach(): PendingSeries | undefined {
    if (!this.active) return undefined
    const histograms: Partial<Record<Metric, string>> = {}
    const series: ReportSeries = {
      labels: this.labels,
      histograms,
      requests: { ok: this.ok, error: this.error, shed: this.shed },
      ...(this.errorClasses !== undefined ? { errorClasses: cappedClasses(this.errorClasses) } : {}),
      ...(this.outputTokens > 0 ? { outputTokens: this.outputTokens } : {}),
      ...(this.signals?.take() ?? {}),
    }
    const pending = { series, histograms, metrics: this.metrics }
    this.metrics = undefined
    this.ok = this.error = this.shed = this.outputTokens = 0
    this.errorClasses = undefined
    this.active = false
    return pending
  }
}

/** Series idle for this many drains in a row are dropped from memory. */
const IDLE_DRAINS_BEFORE_EVICTION = 3

/**
 * One interval being drained. The cut only records where it ends (the generation, and how many series there were);
 * the drain then takes the series one by one, in order, and encodes what it took.
 */
interface Cut {
  readonly gen: number
  /** The recorder's series array at the cut; series made later are past `end`. */
  readonly states: SeriesState[]
  readonly end: number
  /** The next series to take. */
  next: number
  /** Taken and not yet encoded, from `encoded` on. */
  readonly pending: (PendingSeries | undefined)[]
  encoded: number
  evicted: boolean
  readonly interval: DrainedInterval
}

type Level<T> = Map<string, T>
/** A replica's series: the state itself when the replica has one node (the usual case), else by node. */
type ByNode = SeriesState | Map<string, SeriesState>

class RecorderImpl implements Recorder {
  // service → model → version → replica → node → state: lookups hash each label string (V8 caches a
  // string's hash) instead of building and hashing one concatenated key per call.
  #tree: Level<Level<Level<Level<ByNode>>>> = new Map()
  #states: SeriesState[] = []
  // Consecutive calls are often for the same series: a one-entry cache, checked field by field.
  #last: SeriesState | undefined
  // The label objects of recent lookups and their states (see #lookup), a ring.
  readonly #recentLabels: Array<SeriesLabels | undefined> = new Array(RECENT_LABEL_OBJECTS).fill(undefined)
  readonly #recentStates: Array<SeriesState | undefined> = new Array(RECENT_LABEL_OBJECTS).fill(undefined)
  #recentNext = 0
  #dropped = new Map<string, number>()
  recordedRequests = 0
  readonly #limits: RecorderLimits
  readonly #pool = new TablePool()
  readonly #scratch = new EncodeScratch()
  /** The interval recorded into now; a cut starts the next one. */
  #gen = 0
  /** The cut whose series are not all taken yet (at most one: a cut first finishes the one before). */
  #draining: Cut | undefined
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
      series: this.#ordinary + this.#overflowCount,
      overflowSeries: this.#overflowCount,
      overflowLabelSets: this.#overflowLabelSets + this.#overflowKeys.size,
      overflowObservations: this.#overflowObservations,
      labelsRepaired: this.#labelsRepaired,
    }
  }

  #lookup(labels: SeriesLabels): SeriesState {
    const last = this.#last
    if (last !== undefined && last.live && last.matches(labels)) return last
    // The label objects of the last few series recorded into, by identity (callers that keep one object per
    // series, as the agent's sources do, interleave a handful of them): their states are checked field by field
    // all the same, since a caller may change its object between calls.
    const objects = this.#recentLabels
    for (let k = 0; k < RECENT_LABEL_OBJECTS; k++)
      if (objects[k] === labels) {
        const s = this.#recentStates[k]!
        return (this.#last = this.#recentStates[k] = s.live && s.matches(labels) ? s : this.#resolve(labels))
      }
    const s = this.#resolve(labels)
    const k = this.#recentNext
    objects[k] = labels
    this.#recentStates[k] = s
    this.#recentNext = (k + 1) % RECENT_LABEL_OBJECTS
    return (this.#last = s)
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
    const r = this.#tree.get(labels.service)?.get(labels.model)?.get(labels.version)?.get(labels.replica)
    if (r === undefined) return undefined
    if (r instanceof SeriesState) return r.labels.node === labels.node ? r : undefined
    return r.get(labels.node)
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
      this.#gen,
      overflow,
    )
    const byReplica = getOrCreate(
      getOrCreate(getOrCreate(this.#tree, labels.service), labels.model),
      labels.version,
    )
    const r = byReplica.get(labels.replica)
    if (r === undefined) byReplica.set(labels.replica, s)
    else if (r instanceof SeriesState)
      byReplica.set(
        labels.replica,
        new Map([
          [r.labels.node, r],
          [labels.node, s],
        ]),
      )
    else r.set(labels.node, s)
    this.#states.push(s)
    return s
  }

  /** Forgets an idle series: out of the tree and the counts (handles holding it re-resolve). */
  #forget(s: SeriesState): void {
    s.live = false
    const l = s.labels
    const byModel = this.#tree.get(l.service)!
    const byVersion = byModel.get(l.model)!
    const byReplica = byVersion.get(l.version)!
    const r = byReplica.get(l.replica)!
    if (r instanceof SeriesState) byReplica.delete(l.replica)
    else {
      r.delete(l.node)
      if (r.size === 1) byReplica.set(l.replica, r.values().next().value!)
    }
    if (byReplica.size === 0) byVersion.delete(l.version)
    if (byVersion.size === 0) byModel.delete(l.model)
    if (byModel.size === 0) this.#tree.delete(l.service)
    if (s.overflow) this.#overflowCount--
    else {
      this.#ordinary--
      const n = this.#perService.get(l.service)! - 1
      if (n === 0) this.#perService.delete(l.service)
      else this.#perService.set(l.service, n)
    }
    if (this.#last === s) this.#last = undefined
    for (let k = 0; k < RECENT_LABEL_OBJECTS; k++)
      if (this.#recentStates[k] === s) {
        this.#recentStates[k] = undefined
        this.#recentLabels[k] = undefined
      }
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

  /**
   * Called before recording into `s`: a series still holding the interval of a cut that has not reached it yet
   * hands that interval over (to `handed`, where the drain takes it) and starts the current one empty.
   */
  #handOver(s: SeriesState): void {
    s.handed = s.detach()
    s.gen = this.#gen
  }

  #record(s: SeriesState, metricIndex: number, durationUs: DurationUs): void {
    // toRecordableUs, inlined: negative and NaN are refused, the rest clamped to 30 days.
    if (!(durationUs >= 0)) {
      this.drop('negative_duration')
      return
    }
    if (s.gen !== this.#gen) this.#handOver(s)
    const v = durationUs > HISTOGRAM_HIGHEST_US ? HISTOGRAM_HIGHEST_US : durationUs
    const metrics = (s.metrics ??= new Array<MetricCounts | undefined>(METRICS.length))
    const m = (metrics[metricIndex] ??= new MetricCounts(this.#pool))
    m.add(v, this.#pool)
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
    if (s.gen !== this.#gen) this.#handOver(s)
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
      if (c !== '') {
        const classes = (s.errorClasses ??= new Map())
        classes.set(c, (classes.get(c) ?? 0) + 1)
      }
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
    if (s.gen !== this.#gen) this.#handOver(s)
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
    while (this.#step(cut));
    this.#encoded.flush()
    return cut.interval
  }

  async drainSliced(opts: { readonly sliceMs?: number } = {}): Promise<DrainedInterval> {
    const sliceMs = opts.sliceMs ?? 8
    const cut = this.#cut()
    let t0 = performance.now()
    // The clock is read after every step: a step takes one series (idle: a few ns) or encodes one (tens of µs,
    // more before the code is optimized), so a slice ends within one series of `sliceMs`.
    while (this.#step(cut)) {
      if (performance.now() - t0 >= sliceMs) {
        await new Promise<void>((resolve) => setImmediate(resolve))
        t0 = performance.now()
      }
    }
    this.#encoded.flush()
    return cut.interval
  }

  /**
   * Ends the interval in O(1): the generation moves on, so the next record into a series first hands its counts
   * over (see {@link #handOver}), and the drain takes each series of the cut in turn with {@link #step}. A cut
   * while an earlier one is still taking series first finishes those takes (the moves only; that drain still
   * encodes them), so no series ever holds more than one interval besides the current one.
   */
  #cut(): Cut {
    if (this.#draining !== undefined) {
      const earlier = this.#draining
      while (earlier.next < earlier.end) this.#take(earlier)
    }
    const dropped = Object.fromEntries([...this.#dropped].slice(0, 64))
    this.#dropped = new Map()
    this.#overflowLabelSets += this.#overflowKeys.size
    this.#overflowKeys = new Set()
    const cut: Cut = {
      gen: this.#gen,
      states: this.#states,
      end: this.#states.length,
      next: 0,
      pending: [],
      encoded: 0,
      evicted: false,
      interval: { series: [], dropped },
    }
    this.#gen++
    this.#draining = cut.end > 0 ? cut : undefined
    return cut
  }

  /** One step of a drain: encodes the next taken series, else takes the next one; false when all is done. */
  #step(cut: Cut): boolean {
    if (cut.encoded < cut.pending.length) {
      const p = cut.pending[cut.encoded]!
      cut.pending[cut.encoded++] = undefined
      this.#encode(p)
      return true
    }
    if (cut.next < cut.end) {
      this.#take(cut)
      return true
    }
    return false
  }

  /** Takes the cut's interval from its next series: from the series itself, or from what it handed over. */
  #take(cut: Cut): void {
    const s = cut.states[cut.next++]!
    let p: PendingSeries | undefined
    if (s.gen === cut.gen) {
      p = s.detach()
      s.gen = cut.gen + 1
    } else {
      p = s.handed
      s.handed = undefined
    }
    if (p !== undefined) {
      s.idleDrains = 0
      cut.interval.series.push(p.series)
      cut.pending.push(p)
    } else if (++s.idleDrains >= IDLE_DRAINS_BEFORE_EVICTION && !s.active) {
      // Idle for the cut's interval and not recorded into since: forgotten.
      this.#forget(s)
      cut.evicted = true
    }
    if (cut.next === cut.end) {
      if (cut.evicted) this.#states = this.#states.filter((x) => x.live)
      if (this.#draining === cut) this.#draining = undefined
    }
  }

  #encode(p: PendingSeries): void {
    const metrics = p.metrics
    if (metrics === undefined) return
    for (let i = 0; i < metrics.length; i++) {
      const m = metrics[i]
      if (m !== undefined && m.total > 0)
        this.#encoded.add(p.histograms, METRICS[i]!, m.encode(this.#pool, this.#scratch))
    }
  }

  readonly #encoded = new EncodedBatch()
}

/** Encoded histograms a batch gathers before it joins them ({@link EncodedBatch}). */
const ENCODED_BATCH_SIZE = 512

/**
 * Where a drain puts its encoded histograms: every {@link ENCODED_BATCH_SIZE} of them are joined into one string and
 * each histogram becomes a slice of it. A drain's histograms all outlive it (they are the report), and as thousands
 * of separate strings they filled V8's young generation with survivors that every scavenge copied: one pause of 22
 * ms in the middle of a 10,000-series drain (`--trace-gc`), longer than a whole slice. A joined string of a few
 * hundred KB is allocated outside the young generation, and its slices are small headers.
 */
class EncodedBatch {
  #targets: Array<Partial<Record<Metric, string>>> = []
  #keys: Metric[] = []
  #texts: string[] = []

  add(target: Partial<Record<Metric, string>>, key: Metric, text: string): void {
    this.#targets.push(target)
    this.#keys.push(key)
    this.#texts.push(text)
    if (this.#texts.length >= ENCODED_BATCH_SIZE) this.flush()
  }

  /** Joins what was added and hands each histogram its slice; the drain calls it before it returns the interval. */
  flush(): void {
    const texts = this.#texts
    if (texts.length === 0) return
    const joined = texts.join('')
    let at = 0
    for (let i = 0; i < texts.length; i++) {
      const end = at + texts[i]!.length
      this.#targets[i]![this.#keys[i]!] = joined.slice(at, end)
      at = end
    }
    this.#targets = []
    this.#keys = []
    this.#texts = []
  }
}

/** Label objects {@link RecorderImpl} remembers by identity (lookups scan them all: keep it small). */
const RECENT_LABEL_OBJECTS = 8

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

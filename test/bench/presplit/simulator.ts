// Generated: a frozen copy of controller/sim/simulator.ts from before the split into slots/queues/replicas/stats
// modules (commit 40c75ec), kept only as the baseline that `npm run bench -- sim` measures the split against.
import { newHistogram, HISTOGRAM_HIGHEST_US } from '../../../collector/index.js'
import type { Histogram } from '../../../collector/index.js'
import type { BatchServiceModel } from '../../../controller/queueing/batching.js'
import { applyActions } from '../../../controller/policy.js'
import type {
  Action,
  FleetObservation,
  PhasePercentilesMs,
  Policy,
  Setpoints,
} from '../../../controller/policy.js'
import { createArrivals } from '../../../controller/sim/arrivals.js'
import type { ArrivalDraft, ArrivalSpec } from '../../../controller/sim/arrivals.js'
import { EventHeap } from '../../../controller/sim/heap.js'
import { LogHistogram } from '../../../controller/sim/log-histogram.js'
import { Rng } from '../../../controller/sim/rng.js'

/** Random variation of service times around their model value (mean preserved). */
export type ServiceNoise =
  | { readonly kind: 'none' }
  | { readonly kind: 'exponential' }
  | { readonly kind: 'lognormal'; readonly cv: number }

/** How a replica serves requests. */
export type ReplicaModel =
  | {
      /** Dynamic batcher: batches of up to maxBatch, waiting up to the window for the batch to fill. */
      readonly kind: 'batch'
      readonly service: BatchServiceModel
      readonly noise?: ServiceNoise
    }
  | {
      /**
       * Continuous (iteration-level) batching for LLMs: each step costs decodeStepMs + decodeMsPerSeq per running
       * sequence + prefillMsPerToken per prompt token of sequences admitted in that step; every running sequence
       * gets one token per step. A sequence reserves input + output tokens of KV cache while it runs; at most
       * `maxBatch` (the setpoint) sequences run at once.
       */
      readonly kind: 'llm'
      readonly prefillMsPerToken: number
      readonly decodeStepMs: number
      readonly decodeMsPerSeq: number
      readonly kvCapacityTokens: number
      readonly noise?: ServiceNoise
    }

/** Latency objectives. A request is good when it completes within every objective that applies. */
export interface SimSlo {
  readonly e2eMs: number
  readonly ttftMs?: number
  readonly tpotMs?: number
  /** Share of requests that must be good (for SLO-violation minutes and the error budget). Default 0.99. */
  readonly objective?: number
}

/** Everything a simulation run needs besides the policy. */
export interface SimConfig {
  readonly seed: number
  readonly arrivals: ArrivalSpec
  readonly replica: ReplicaModel
  /** Setpoints at time 0; `desiredReplicas` replicas start ready. */
  readonly initial: Setpoints
  readonly slo: SimSlo
  /** Cold start of a new replica: model load, then warm-up, before it is ready (and billed throughout). */
  readonly coldStart?: { readonly loadMs: number; readonly warmupMs: number }
  /** Warm-pool minimum: the fleet never goes below this many replicas. Default 1. */
  readonly warmPoolMin?: number
  readonly maxReplicas?: number
  /** Relative shares of priority classes (index 0 highest). Default [1]. */
  readonly classShares?: readonly number[]
  /** Deadline-aware dropping: a request that cannot start service in time to finish within this is shed. */
  readonly deadlineMs?: number
  /** Control interval (policy step period). Default 1000 ms. */
  readonly controlIntervalMs?: number
  /**
   * Faults in what the policy sees (robustness runs): a share of observations missing (the policy gets an
   * empty one, as when the collector has no data for the interval), and observations that are `staleMs` old
   * (the policy sees the fleet as it was then, with `ageMs` set). Seeded by the simulation seed.
   */
  readonly observationFaults?: { readonly missingShare?: number; readonly staleMs?: number }
}

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

/** What a run produced. */
export interface SimResult {
  readonly policy: string
  readonly durationMs: number
  readonly arrived: number
  readonly completed: number
  readonly good: number
  readonly shed: number
  readonly shedByClass: number[]
  readonly shedRateByClass: number[]
  readonly shedByReason: Record<ShedReason, number>
  readonly latencyMs: {
    readonly e2e: LatencyStats
    readonly queue: LatencyStats
    readonly ttft?: LatencyStats
    readonly tpot?: LatencyStats
  }
  /** Share of arrived requests that were good (overall) and within each objective (shed = not within). */
  readonly attainment: {
    readonly overall: number
    readonly e2e: number
    readonly ttft?: number
    readonly tpot?: number
  }
  /** Minutes in which the share of good requests fell below the objective. */
  readonly sloViolationMinutes: number
  readonly goodputRps: number
  readonly throughputRps: number
  /** Replica time from creation to removal (starting and idle included), in GPU-hours. */
  readonly gpuHours: number
  readonly scalingActions: number
  readonly replicas: { readonly min: number; readonly max: number; readonly mean: number }
  readonly meanBatchSize: number
  readonly events: number
  readonly decisions: ReadonlyArray<{ readonly atMs: number; readonly reason: string }>
  readonly timeline: SimTimeline
}

export type ShedReason = 'queue_full' | 'concurrency' | 'deadline' | 'too_large'

/** Options for a run. */
export interface SimRunOptions {
  /** Called now and then with the fraction of arrivals processed (0..1). */
  readonly onProgress?: (fraction: number) => void
  /** Keep at most this many decision reasons. Default 500. */
  readonly maxDecisions?: number
}

const EV_DONE = 1
const EV_TIMER = 2
const EV_READY = 3
const EV_TICK = 4

const ST_STARTING = 0
const ST_IDLE = 1
const ST_BUSY = 2
const ST_GONE = 3

const SHED_REASONS: readonly ShedReason[] = ['queue_full', 'concurrency', 'deadline', 'too_large']
const BATCH_CAP = 4096
const OBS_WINDOWS_S = [6, 10, 60] as const

class Replica {
  state = ST_STARTING
  epoch = 0
  draining = false
  n = 0
  kvUsed = 0
  readonly seqs = new Int32Array(BATCH_CAP)
  constructor(readonly id: number) {}
}

/** A growable FIFO ring of request slots. */
class Ring {
  buf = new Int32Array(1024)
  head = 0
  length = 0
  push(v: number): void {
    if (this.length === this.buf.length) {
      const b = new Int32Array(this.buf.length * 2)
      for (let i = 0; i < this.length; i++) b[i] = this.buf[(this.head + i) & (this.buf.length - 1)]!
      this.buf = b
      this.head = 0
    }
    this.buf[(this.head + this.length) & (this.buf.length - 1)] = v
    this.length++
  }
  peek(): number {
    return this.buf[this.head]!
  }
  shift(): number {
    const v = this.buf[this.head]!
    this.head = (this.head + 1) & (this.buf.length - 1)
    this.length--
    return v
  }
}

/**
 * Runs a discrete-event simulation of a fleet under `policy`: arrivals from a trace or a seeded pattern, a
 * shared priority queue with admission limits, replicas that batch (dynamic batcher or continuous LLM
 * batching) and cold-start, and the policy stepping every control interval on the same observation the live
 * controller gets. Deterministic: the same config and seed give the same result.
 *
 * @example
 * ```ts
 * const r = runSimulation({ seed: 1, arrivals: { kind: 'poisson', rps: 140, durationMs: 600_000 },
 *   replica: { kind: 'batch', service: { fixedMs: 5, perItemMs: 0 }, noise: { kind: 'exponential' } },
 *   initial: { batchWindowMs: 0, maxBatch: 1, admission: [], desiredReplicas: 1 }, slo: { e2eMs: 50 } }, staticPolicy())
 * r.latencyMs.e2e.mean // ≈ 16.7 ms (M/M/1 at ρ = 0.7)
 * ```
 */
export function runSimulation<S>(
  config: SimConfig,
  policy: Policy<S>,
  options: SimRunOptions = {},
): SimResult {
  return new Simulation(config, policy as Policy<unknown>, options).run()
}

class Simulation {
  private readonly heap = new EventHeap(4096)
  private readonly rng: Rng
  private readonly noiseRng: Rng
  private now = 0
  private events = 0
  // Request slots.
  private cap = 1 << 14
  private arrivalMs = new Float64Array(this.cap)
  private startMs = new Float64Array(this.cap)
  private firstTokMs = new Float64Array(this.cap)
  private inTok = new Int32Array(this.cap)
  private outTok = new Int32Array(this.cap)
  private generated = new Int32Array(this.cap)
  private cls = new Uint8Array(this.cap)
  private free = new Int32Array(this.cap)
  private freeTop = 0
  private used = 0
  // Queues and admission.
  private readonly classes: number
  private readonly classCdf: Float64Array
  private readonly queues: Ring[]
  private queuedTotal = 0
  private readonly inSysByClass: Int32Array
  private inSystem = 0
  private inService = 0
  private setpoints: Setpoints
  private policyState: unknown
  private timerAt = -1
  // Replicas.
  private readonly replicas: Replica[] = []
  private live: Replica[] = []
  private idle: Replica[] = []
  private alive = 0
  private readyCount = 0
  private gpuMs = 0
  private lastAliveChange = 0
  private readyMs = 0
  private lastReadyChange = 0
  private minAlive = Infinity
  private maxAlive = 0
  private aliveTickSum = 0
  private ticks = 0
  // Whole-run stats.
  private arrived = 0
  private arrivedByClass: Float64Array
  private completed = 0
  private good = 0
  private e2eWithin = 0
  private ttftWithin = 0
  private tpotWithin = 0
  private readonly shedByClass: Float64Array
  private readonly shedByReason = new Float64Array(SHED_REASONS.length)
  private sumE2e = 0
  private sumQueue = 0
  private sumTtft = 0
  private sumTpot = 0
  private maxE2e = 0
  private maxQueue = 0
  private maxTtft = 0
  private maxTpot = 0
  private readonly hE2e: Histogram = newHistogram()
  private readonly hQueue: Histogram = newHistogram()
  private readonly hTtft: Histogram = newHistogram()
  private readonly hTpot: Histogram = newHistogram()
  private batches = 0
  private batchItems = 0
  private lastActivityMs = 0
  private scalingActions = 0
  private readonly decisions: Array<{ atMs: number; reason: string }> = []
  // Interval stats (reset every control interval).
  private readonly iQueue = new LogHistogram()
  private readonly iService = new LogHistogram()
  private readonly iE2e = new LogHistogram()
  private readonly iTtft = new LogHistogram()
  private readonly iTpot = new LogHistogram()
  private iBusyMs = 0
  private iBatchItems = 0
  private iBatches = 0
  private iBatchMax = 0
  private iCompleted = 0
  private iShed = 0
  private iGood = 0
  private iArrivals = 0
  private concIntegral = 0
  private lastConcChange = 0
  private iInputTokens = 0
  private iOutputTokens = 0
  private runIntegral = 0
  private lastRunChange = 0
  private timeoutByClass: Float64Array
  private readonly faultRng: Rng
  private readonly pastObs: FleetObservation[] = []
  private readonly tickArrivals = new Float64Array(128)
  private readonly tickConc = new Float64Array(128)
  private budgetBad = 0
  private budgetTotal = 0
  // Timeline.
  private readonly tl: SimTimeline = { minute: [], arrivals: [], good: [], shed: [], replicas: [], p99Ms: [] }
  private readonly mTotal: number[] = []
  private readonly mReplicaSamples: number[] = []
  private readonly mHist = new LogHistogram()
  private curMinute = -1
  // Config.
  private readonly isLlm: boolean
  private readonly fixedMs: number
  private readonly perItemMs: number
  private readonly noiseKind: number
  private readonly noiseCv: number
  private readonly intervalMs: number
  private readonly objective: number
  private readonly sloE2e: number
  private readonly sloTtft: number
  private readonly sloTpot: number
  private readonly deadline: number
  private readonly coldMs: number
  private readonly warmMin: number
  private readonly maxReplicas: number
  private readonly prefillMsPerToken: number
  private readonly decodeStepMs: number
  private readonly decodeMsPerSeq: number
  private readonly kvCap: number

  constructor(
    private readonly config: SimConfig,
    private readonly policy: Policy<unknown>,
    private readonly options: SimRunOptions,
  ) {
    this.rng = new Rng(config.seed)
    this.noiseRng = new Rng(config.seed ^ 0x6e015e)
    const shares = config.classShares && config.classShares.length > 0 ? config.classShares : [1]
    this.classes = Math.min(255, shares.length)
    this.classCdf = new Float64Array(this.classes)
    const total = shares.reduce((a, b) => a + b, 0)
    let acc = 0
    for (let c = 0; c < this.classes; c++) {
      acc += shares[c]! / total
      this.classCdf[c] = acc
    }
    this.classCdf[this.classes - 1] = 1
    this.queues = Array.from({ length: this.classes }, () => new Ring())
    this.inSysByClass = new Int32Array(this.classes)
    this.arrivedByClass = new Float64Array(this.classes)
    this.shedByClass = new Float64Array(this.classes)
    this.timeoutByClass = new Float64Array(this.classes).fill(Infinity)
    this.faultRng = new Rng(config.seed ^ 0xfa017)
    const admission = Array.from(
      { length: this.classes },
      (_, c) =>
        config.initial.admission[c] ?? {
          maxQueue: Number.MAX_SAFE_INTEGER,
          maxConcurrency: Number.MAX_SAFE_INTEGER,
        },
    )
    this.setpoints = { ...config.initial, admission, maxBatch: Math.min(BATCH_CAP, config.initial.maxBatch) }
    this.updateTimeouts()
    const m = config.replica
    this.isLlm = m.kind === 'llm'
    this.fixedMs = m.kind === 'batch' ? m.service.fixedMs : 0
    this.perItemMs = m.kind === 'batch' ? m.service.perItemMs : 0
    this.prefillMsPerToken = m.kind === 'llm' ? m.prefillMsPerToken : 0
    this.decodeStepMs = m.kind === 'llm' ? m.decodeStepMs : 0
    this.decodeMsPerSeq = m.kind === 'llm' ? m.decodeMsPerSeq : 0
    this.kvCap = m.kind === 'llm' ? m.kvCapacityTokens : Infinity
    const noise = m.noise ?? { kind: 'none' }
    this.noiseKind = noise.kind === 'none' ? 0 : noise.kind === 'exponential' ? 1 : 2
    this.noiseCv = noise.kind === 'lognormal' ? noise.cv : 0
    this.intervalMs = config.controlIntervalMs ?? 1000
    this.objective = config.slo.objective ?? 0.99
    this.sloE2e = config.slo.e2eMs
    this.sloTtft = this.isLlm ? (config.slo.ttftMs ?? Infinity) : Infinity
    this.sloTpot = this.isLlm ? (config.slo.tpotMs ?? Infinity) : Infinity
    this.deadline = config.deadlineMs ?? Infinity
    this.coldMs = (config.coldStart?.loadMs ?? 60_000) + (config.coldStart?.warmupMs ?? 30_000)
    this.warmMin = config.warmPoolMin ?? 1
    this.maxReplicas = config.maxReplicas ?? 1000
    this.policyState = policy.init(this.setpoints)
  }

  run(): SimResult {
    const src = createArrivals(this.config.arrivals, this.config.seed)
    const expected = Math.max(1, src.expectedCount)
    const onProgress = this.options.onProgress
    const draft: ArrivalDraft = { timeMs: 0, inputTokens: 0, outputTokens: 0 }
    let hasNext = src.next(draft)
    let nextArrival = hasNext ? draft.timeMs : Infinity
    const initial = Math.min(this.maxReplicas, Math.max(this.warmMin, this.setpoints.desiredReplicas))
    for (let i = 0; i < initial; i++) this.addReplica(true)
    this.heap.push(this.intervalMs, EV_TICK, 0, 0)
    const heap = this.heap
    for (;;) {
      if (nextArrival <= heap.peekTime()) {
        this.now = nextArrival
        this.events++
        this.onArrival(draft)
        hasNext = src.next(draft)
        nextArrival = hasNext ? draft.timeMs : Infinity
        if (onProgress && (this.arrived & 0x1fff) === 0) onProgress(Math.min(1, this.arrived / expected))
        continue
      }
      if (heap.size === 0) break
      this.now = heap.pop()
      this.events++
      const kind = heap.kind
      if (kind === EV_DONE) {
        const r = this.replicas[heap.id]!
        if (r.epoch === heap.aux) {
          if (this.isLlm) this.onStepDone(r)
          else this.onBatchDone(r)
        }
      } else if (kind === EV_TIMER) {
        if (this.now === this.timerAt) {
          this.timerAt = -1
          this.tryDispatch()
        }
      } else if (kind === EV_READY) {
        const r = this.replicas[heap.id]!
        if (r.epoch === heap.aux && r.state === ST_STARTING) {
          this.integrateReady()
          r.state = ST_IDLE
          this.readyCount++
          this.idle.push(r)
          this.tryDispatch()
        }
      } else if (kind === EV_TICK) {
        if (!hasNext && this.inSystem === 0) break
        this.onTick()
        heap.push(this.now + this.intervalMs, EV_TICK, 0, 0)
      }
    }
    if (onProgress) onProgress(1)
    return this.finish()
  }

  // ---- requests -------------------------------------------------------------------------------------------

  private alloc(): number {
    if (this.freeTop > 0) return this.free[--this.freeTop]!
    if (this.used === this.cap) this.growSlots()
    return this.used++
  }

  private growSlots(): void {
    const cap = this.cap * 2
    const f64 = (a: Float64Array) => {
      const b = new Float64Array(cap)
      b.set(a)
      return b
    }
    const i32 = (a: Int32Array) => {
      const b = new Int32Array(cap)
      b.set(a)
      return b
    }
    this.arrivalMs = f64(this.arrivalMs)
    this.startMs = f64(this.startMs)
    this.firstTokMs = f64(this.firstTokMs)
    this.inTok = i32(this.inTok)
    this.outTok = i32(this.outTok)
    this.generated = i32(this.generated)
    const c = new Uint8Array(cap)
    c.set(this.cls)
    this.cls = c
    this.free = i32(this.free)
    this.cap = cap
  }

  private integrateConc(): void {
    this.concIntegral += this.inSystem * (this.now - this.lastConcChange)
    this.lastConcChange = this.now
  }

  private onArrival(d: ArrivalDraft): void {
    this.arrived++
    this.iArrivals++
    let c = 0
    if (this.classes > 1) {
      const u = this.rng.next()
      while (c < this.classes - 1 && u >= this.classCdf[c]!) c++
    }
    this.arrivedByClass[c]!++
    this.minuteOf(this.now)
    this.mTotal[this.curMinute]!++
    this.tl.arrivals[this.curMinute]!++
    const adm = this.setpoints.admission[c]!
    if (this.queues[c]!.length >= adm.maxQueue) return this.shedNew(c, 0)
    if (this.inSysByClass[c]! >= adm.maxConcurrency) return this.shedNew(c, 1)
    if (this.isLlm && d.inputTokens + d.outputTokens > this.kvCap) return this.shedNew(c, 3)
    const s = this.alloc()
    this.arrivalMs[s] = d.timeMs
    this.inTok[s] = d.inputTokens
    this.outTok[s] = d.outputTokens
    this.generated[s] = 0
    this.cls[s] = c
    this.queues[c]!.push(s)
    this.queuedTotal++
    this.integrateConc()
    this.inSystem++
    this.inSysByClass[c]!++
    this.tryDispatch()
  }

  /** Sheds a request that never entered the system (counted in the current minute). */
  private shedNew(c: number, reason: number, arrivalMinute = this.curMinute): void {
    this.shedByClass[c]!++
    this.shedByReason[reason]!++
    this.iShed++
    this.budgetBad++
    this.budgetTotal++
    this.tl.shed[arrivalMinute]!++
    this.lastActivityMs = this.now
  }

  /** Sheds a queued request at dispatch (deadline); it counts against the minute it arrived in. */
  private shedQueued(s: number): void {
    const c = this.cls[s]!
    this.minuteOf(this.now)
    this.shedNew(c, 2, Math.floor(this.arrivalMs[s]! / 60_000))
    this.leave(s)
  }

  private leave(s: number): void {
    this.integrateConc()
    this.inSystem--
    this.inSysByClass[this.cls[s]!]!--
    this.free[this.freeTop++] = s
  }

  private dequeue(): number {
    for (let c = 0; c < this.classes; c++) {
      const q = this.queues[c]!
      if (q.length > 0) {
        this.queuedTotal--
        return q.shift()
      }
    }
    return -1
  }

  private peekQueued(): number {
    for (let c = 0; c < this.classes; c++) {
      const q = this.queues[c]!
      if (q.length > 0) return q.peek()
    }
    return -1
  }

  private oldestQueuedMs(): number {
    let t = Infinity
    for (let c = 0; c < this.classes; c++) {
      const q = this.queues[c]!
      if (q.length > 0) {
        const a = this.arrivalMs[q.peek()]!
        if (a < t) t = a
      }
    }
    return t
  }

  private recordStart(s: number): void {
    this.startMs[s] = this.now
    const wait = this.now - this.arrivalMs[s]!
    this.sumQueue += wait
    if (wait > this.maxQueue) this.maxQueue = wait
    this.hQueue.recordValue(toUs(wait))
    this.iQueue.recordMs(wait)
    this.integrateRun()
    this.inService++
    this.iInputTokens += this.inTok[s]!
  }

  private integrateRun(): void {
    this.runIntegral += this.inService * (this.now - this.lastRunChange)
    this.lastRunChange = this.now
  }

  private updateTimeouts(): void {
    for (let c = 0; c < this.classes; c++)
      this.timeoutByClass[c] = this.setpoints.admission[c]?.queueTimeoutMs ?? Infinity
  }

  /** True when a queued request has waited past its class's queue timeout or cannot finish by the deadline. */
  private late(s: number, estMs: number): boolean {
    const a = this.arrivalMs[s]!
    return this.now - a > this.timeoutByClass[this.cls[s]!]! || this.now + estMs > a + this.deadline
  }

  private complete(s: number, ttftOk: boolean, tpotOk: boolean): void {
    const now = this.now
    this.minuteOf(now)
    const e2e = now - this.arrivalMs[s]!
    this.sumE2e += e2e
    if (e2e > this.maxE2e) this.maxE2e = e2e
    this.hE2e.recordValue(toUs(e2e))
    this.iE2e.recordMs(e2e)
    this.mHist.recordMs(e2e)
    this.completed++
    this.iCompleted++
    this.integrateRun()
    this.inService--
    const e2eOk = e2e <= this.sloE2e
    if (e2eOk) this.e2eWithin++
    this.budgetTotal++
    if (e2eOk && ttftOk && tpotOk) {
      this.good++
      this.iGood++
      // Attainment per minute is by arrival: good and total count the same requests.
      this.tl.good[Math.floor(this.arrivalMs[s]! / 60_000)]!++
    } else this.budgetBad++
    this.lastActivityMs = now
    this.leave(s)
  }

  // ---- dispatch -------------------------------------------------------------------------------------------

  private tryDispatch(): void {
    const idle = this.idle
    while (idle.length > 0 && this.queuedTotal > 0) {
      if (!this.isLlm) {
        const sp = this.setpoints
        if (this.queuedTotal < sp.maxBatch && sp.batchWindowMs > 0) {
          const due = this.oldestQueuedMs() + sp.batchWindowMs
          if (this.now < due) {
            if (this.timerAt !== due) {
              this.timerAt = due
              this.heap.push(due, EV_TIMER, 0, 0)
            }
            return
          }
        }
      }
      const r = idle.pop()!
      const started = this.isLlm ? this.startStep(r) : this.startBatch(r)
      if (!started) idle.push(r)
    }
  }

  private noise(): number {
    if (this.noiseKind === 0) return 1
    if (this.noiseKind === 1) return this.noiseRng.exponential(1)
    return this.noiseRng.lognormalFactor(this.noiseCv)
  }

  private startBatch(r: Replica): boolean {
    const target = Math.min(this.queuedTotal, this.setpoints.maxBatch)
    const estMs = this.fixedMs + this.perItemMs * target
    let n = 0
    while (n < target && this.queuedTotal > 0) {
      const s = this.dequeue()
      if (this.late(s, estMs)) {
        this.shedQueued(s)
        continue
      }
      this.recordStart(s)
      r.seqs[n++] = s
    }
    if (n === 0) return false
    r.n = n
    const serviceMs = (this.fixedMs + this.perItemMs * n) * this.noise()
    r.state = ST_BUSY
    this.heap.push(this.now + serviceMs, EV_DONE, r.id, r.epoch)
    this.iBusyMs += serviceMs
    this.iService.recordMs(serviceMs)
    this.batches++
    this.batchItems += n
    this.iBatches++
    this.iBatchItems += n
    if (n > this.iBatchMax) this.iBatchMax = n
    return true
  }

  private onBatchDone(r: Replica): void {
    for (let i = 0; i < r.n; i++) this.complete(r.seqs[i]!, true, true)
    r.n = 0
    this.afterWork(r)
    this.tryDispatch()
  }

  private afterWork(r: Replica): void {
    if (r.draining) this.retire(r)
    else {
      r.state = ST_IDLE
      this.idle.push(r)
    }
  }

  private startStep(r: Replica): boolean {
    const old = r.n
    let newTokens = 0
    if (!r.draining) {
      const max = this.setpoints.maxBatch
      while (r.n < max && this.queuedTotal > 0) {
        const s = this.peekQueued()
        const need = this.inTok[s]! + this.outTok[s]!
        if (r.kvUsed + need > this.kvCap) break
        this.dequeue()
        const estMs = this.decodeStepMs + this.prefillMsPerToken * this.inTok[s]!
        if (this.late(s, estMs)) {
          this.shedQueued(s)
          continue
        }
        this.recordStart(s)
        r.seqs[r.n++] = s
        r.kvUsed += need
        newTokens += this.inTok[s]!
      }
    }
    if (r.n === 0) return false
    const stepMs =
      (this.decodeStepMs + this.decodeMsPerSeq * old + this.prefillMsPerToken * newTokens) * this.noise()
    r.state = ST_BUSY
    this.heap.push(this.now + stepMs, EV_DONE, r.id, r.epoch)
    this.iBusyMs += stepMs
    this.iService.recordMs(stepMs)
    const admitted = r.n - old
    if (admitted > 0) {
      this.batches++
      this.batchItems += r.n
      this.iBatches++
      this.iBatchItems += r.n
      if (r.n > this.iBatchMax) this.iBatchMax = r.n
    }
    return true
  }

  private onStepDone(r: Replica): void {
    const now = this.now
    this.iOutputTokens += r.n
    let i = 0
    while (i < r.n) {
      const s = r.seqs[i]!
      const g = ++this.generated[s]!
      if (g === 1) {
        this.firstTokMs[s] = now
        const ttft = now - this.arrivalMs[s]!
        this.sumTtft += ttft
        if (ttft > this.maxTtft) this.maxTtft = ttft
        this.hTtft.recordValue(toUs(ttft))
        this.iTtft.recordMs(ttft)
        if (ttft <= this.sloTtft) this.ttftWithin++
      }
      if (g >= this.outTok[s]!) {
        const ttftOk = this.firstTokMs[s]! - this.arrivalMs[s]! <= this.sloTtft
        let tpotOk = true
        if (this.outTok[s]! > 1) {
          const tpot = (now - this.firstTokMs[s]!) / (this.outTok[s]! - 1)
          this.sumTpot += tpot
          if (tpot > this.maxTpot) this.maxTpot = tpot
          this.hTpot.recordValue(toUs(tpot))
          this.iTpot.recordMs(tpot)
          tpotOk = tpot <= this.sloTpot
        }
        if (tpotOk) this.tpotWithin++
        r.kvUsed -= this.inTok[s]! + this.outTok[s]!
        this.complete(s, ttftOk, tpotOk)
        r.seqs[i] = r.seqs[--r.n]!
      } else i++
    }
    if (!this.startStep(r)) this.afterWork(r)
  }

  // ---- replicas -------------------------------------------------------------------------------------------

  private integrateGpu(): void {
    this.gpuMs += this.alive * (this.now - this.lastAliveChange)
    this.lastAliveChange = this.now
  }

  private integrateReady(): void {
    this.readyMs += this.readyCount * (this.now - this.lastReadyChange)
    this.lastReadyChange = this.now
  }

  private addReplica(ready: boolean): void {
    const r = new Replica(this.replicas.length)
    this.replicas.push(r)
    this.live.push(r)
    this.integrateGpu()
    this.alive++
    if (ready) {
      this.integrateReady()
      r.state = ST_IDLE
      this.readyCount++
      this.idle.push(r)
    } else {
      r.state = ST_STARTING
      this.heap.push(this.now + this.coldMs, EV_READY, r.id, r.epoch)
    }
  }

  private retire(r: Replica): void {
    this.integrateGpu()
    this.alive--
    if (r.state === ST_IDLE || r.state === ST_BUSY) {
      this.integrateReady()
      this.readyCount--
    }
    r.state = ST_GONE
    r.epoch++
    r.draining = false
    this.live = this.live.filter((x) => x !== r)
  }

  private scaleTo(desiredIn: number): void {
    const desired = Math.min(this.maxReplicas, Math.max(this.warmMin, desiredIn))
    let active = 0
    for (const r of this.live) if (!r.draining) active++
    if (desired > active) {
      for (const r of this.live) {
        if (active >= desired) break
        if (r.draining) {
          r.draining = false
          active++
        }
      }
      while (active < desired) {
        this.addReplica(false)
        active++
      }
    } else if (desired < active) {
      let excess = active - desired
      const byPreference = [
        ...this.live.filter((r) => r.state === ST_STARTING).reverse(),
        ...this.live.filter((r) => r.state === ST_IDLE),
        ...this.live.filter((r) => r.state === ST_BUSY && !r.draining),
      ]
      for (const r of byPreference) {
        if (excess === 0) break
        excess--
        if (r.state === ST_BUSY) r.draining = true
        else this.retire(r)
      }
      this.idle = this.live.filter((r) => r.state === ST_IDLE)
    }
  }

  // ---- control --------------------------------------------------------------------------------------------

  private minuteOf(t: number): void {
    const m = Math.floor(t / 60_000)
    if (m <= this.curMinute) return
    while (this.curMinute < m) {
      if (this.curMinute >= 0) this.closeMinute()
      this.curMinute++
      this.tl.minute.push(this.curMinute)
      this.tl.arrivals.push(0)
      this.tl.good.push(0)
      this.tl.shed.push(0)
      this.tl.replicas.push(0)
      this.tl.p99Ms.push(null)
      this.mTotal.push(0)
      this.mReplicaSamples.push(0)
    }
  }

  private closeMinute(): void {
    const m = this.curMinute
    this.tl.p99Ms[m] = this.mHist.percentileMs(0.99)
    this.mHist.reset()
    const samples = this.mReplicaSamples[m]!
    this.tl.replicas[m] = samples > 0 ? this.tl.replicas[m]! / samples : this.alive
  }

  private onTick(): void {
    const now = this.now
    this.minuteOf(now)
    this.ticks++
    this.aliveTickSum += this.alive
    if (this.alive < this.minAlive) this.minAlive = this.alive
    if (this.alive > this.maxAlive) this.maxAlive = this.alive
    this.tl.replicas[this.curMinute]! += this.alive
    this.mReplicaSamples[this.curMinute]!++
    this.integrateConc()
    this.integrateReady()
    this.integrateRun()
    const slot = this.ticks % 128
    this.tickArrivals[slot] = this.iArrivals
    this.tickConc[slot] = this.concIntegral / this.intervalMs
    const arrivalRps: Record<number, number> = {}
    const concurrency: Record<number, number> = {}
    for (const w of OBS_WINDOWS_S) {
      const n = Math.max(1, Math.min(this.ticks, Math.round((w * 1000) / this.intervalMs), 127))
      let a = 0
      let c = 0
      for (let k = 0; k < n; k++) {
        const i = (this.ticks - k + 128) % 128
        a += this.tickArrivals[i]!
        c += this.tickConc[i]!
      }
      arrivalRps[w] = a / ((n * this.intervalMs) / 1000)
      concurrency[w] = c / n
    }
    let ready = 0
    let starting = 0
    for (const r of this.live) {
      if (r.state === ST_STARTING) starting++
      else if (!r.draining) ready++
    }
    const allowed = (1 - this.objective) * this.budgetTotal
    const intervalTotal = this.iCompleted + this.iShed
    const intervalBad = intervalTotal - this.iGood
    const obs: FleetObservation = {
      intervalMs: this.intervalMs,
      arrivalRps,
      latencyMs: {
        queue: pct(this.iQueue),
        service: pct(this.iService),
        e2e: pct(this.iE2e),
        ttft: pct(this.iTtft),
        tpot: pct(this.iTpot),
      },
      queueDepth: this.queuedTotal,
      queueDepthByClass: this.queues.map((q) => q.length),
      inFlight: this.inService,
      concurrency,
      batchSize: { mean: this.iBatches > 0 ? this.iBatchItems / this.iBatches : 0, max: this.iBatchMax },
      errorBudget: {
        remaining: allowed > 0 ? 1 - this.budgetBad / allowed : 1,
        burnRate: intervalTotal > 0 ? intervalBad / intervalTotal / (1 - this.objective) : 0,
      },
      gpuUtilization: this.readyMs > 0 ? Math.min(1, this.iBusyMs / this.readyMs) : 0,
      replicas: { ready, starting },
      completed: this.iCompleted,
      shed: this.iShed,
      ...(this.iService.count > 0 ? { serviceMeanMs: this.iBusyMs / this.iService.count } : {}),
      ...(this.isLlm
        ? {
            llm: {
              running: this.runIntegral / this.intervalMs,
              inputTokens: this.iInputTokens,
              outputTokens: this.iOutputTokens,
              kvUsage: this.kvUsage(),
              preemptions: 0,
            },
          }
        : {}),
    }
    const out = this.policy.step(this.policyState, this.faulty(obs), now)
    this.policyState = out.state
    this.apply(out.actions)
    // Reset the interval.
    this.iQueue.reset()
    this.iService.reset()
    this.iE2e.reset()
    this.iTtft.reset()
    this.iTpot.reset()
    this.iBusyMs = 0
    this.iBatchItems = 0
    this.iBatches = 0
    this.iBatchMax = 0
    this.iCompleted = 0
    this.iShed = 0
    this.iGood = 0
    this.iArrivals = 0
    this.concIntegral = 0
    this.readyMs = 0
    this.runIntegral = 0
    this.iInputTokens = 0
    this.iOutputTokens = 0
  }

  private kvUsage(): number {
    let used = 0
    let ready = 0
    for (const r of this.live)
      if (r.state === ST_IDLE || r.state === ST_BUSY) {
        used += r.kvUsed
        ready++
      }
    return ready > 0 && Number.isFinite(this.kvCap) ? used / (ready * this.kvCap) : 0
  }

  /** Applies the configured observation faults: a missing (empty) observation, or one from `staleMs` ago. */
  private faulty(obs: FleetObservation): FleetObservation {
    const f = this.config.observationFaults
    if (!f) return obs
    let out = obs
    const staleMs = f.staleMs ?? 0
    if (staleMs > 0) {
      const lag = Math.round(staleMs / this.intervalMs)
      this.pastObs.push(obs)
      if (this.pastObs.length > lag + 1) this.pastObs.shift()
      out = { ...this.pastObs[0]!, ageMs: staleMs }
    }
    if ((f.missingShare ?? 0) > 0 && this.faultRng.next() < f.missingShare!) out = emptyObservation(obs)
    return out
  }

  private apply(actions: readonly Action[]): void {
    if (actions.length === 0) return
    const before = this.setpoints
    const next = applyActions(before, actions)
    this.setpoints = { ...next, maxBatch: Math.min(BATCH_CAP, next.maxBatch) }
    if (next.admission !== before.admission) this.updateTimeouts()
    const max = this.options.maxDecisions ?? 500
    for (const a of actions)
      if (this.decisions.length < max) this.decisions.push({ atMs: this.now, reason: a.reason })
    if (next.desiredReplicas !== before.desiredReplicas) {
      this.scalingActions++
      this.scaleTo(next.desiredReplicas)
    }
    this.tryDispatch()
  }

  private finish(): SimResult {
    const end = Math.max(this.lastActivityMs, 1)
    this.now = end
    this.integrateGpu()
    if (this.curMinute >= 0) this.closeMinute()
    let violations = 0
    for (let m = 0; m < this.tl.minute.length; m++) {
      const total = this.mTotal[m]!
      if (total > 0 && this.tl.good[m]! / total < this.objective) violations++
    }
    const arrived = this.arrived
    const share = (n: number) => (arrived > 0 ? n / arrived : 1)
    const shed = this.shedByClass.reduce((a, b) => a + b, 0)
    const shedByReason = {} as Record<ShedReason, number>
    SHED_REASONS.forEach((r, i) => (shedByReason[r] = this.shedByReason[i]!))
    return {
      policy: this.policy.name,
      durationMs: end,
      arrived,
      completed: this.completed,
      good: this.good,
      shed,
      shedByClass: Array.from(this.shedByClass),
      shedRateByClass: Array.from(this.shedByClass, (s, c) =>
        this.arrivedByClass[c]! > 0 ? s / this.arrivedByClass[c]! : 0,
      ),
      shedByReason,
      latencyMs: {
        e2e: stats(this.hE2e, this.sumE2e, this.maxE2e),
        queue: stats(this.hQueue, this.sumQueue, this.maxQueue),
        ...(this.isLlm
          ? {
              ttft: stats(this.hTtft, this.sumTtft, this.maxTtft),
              tpot: stats(this.hTpot, this.sumTpot, this.maxTpot),
            }
          : {}),
      },
      attainment: {
        overall: share(this.good),
        e2e: share(this.e2eWithin),
        ...(this.isLlm ? { ttft: share(this.ttftWithin), tpot: share(this.tpotWithin) } : {}),
      },
      sloViolationMinutes: violations,
      goodputRps: this.good / (end / 1000),
      throughputRps: this.completed / (end / 1000),
      gpuHours: this.gpuMs / 3_600_000,
      scalingActions: this.scalingActions,
      replicas: {
        min: Number.isFinite(this.minAlive) ? this.minAlive : this.alive,
        max: Math.max(this.maxAlive, this.alive),
        mean: this.ticks > 0 ? this.aliveTickSum / this.ticks : this.alive,
      },
      meanBatchSize: this.batches > 0 ? this.batchItems / this.batches : 0,
      events: this.events,
      decisions: this.decisions,
      timeline: this.tl,
    }
  }
}

const NO_DATA: PhasePercentilesMs = { p50: null, p99: null, count: 0 }

/** What a policy sees for an interval with no data: nothing arrived, completed or was measured. */
function emptyObservation(obs: FleetObservation): FleetObservation {
  const zero = (r: Readonly<Record<number, number>>) => Object.fromEntries(Object.keys(r).map((k) => [k, 0]))
  return {
    intervalMs: obs.intervalMs,
    arrivalRps: zero(obs.arrivalRps),
    latencyMs: { queue: NO_DATA, service: NO_DATA, e2e: NO_DATA, ttft: NO_DATA, tpot: NO_DATA },
    queueDepth: 0,
    queueDepthByClass: obs.queueDepthByClass.map(() => 0),
    inFlight: 0,
    concurrency: zero(obs.concurrency),
    batchSize: { mean: 0, max: 0 },
    errorBudget: { remaining: 1, burnRate: 0 },
    gpuUtilization: 0,
    replicas: { ready: 0, starting: 0 },
    completed: 0,
    shed: 0,
  }
}

function toUs(ms: number): number {
  const us = Math.round(ms * 1000)
  return us > HISTOGRAM_HIGHEST_US ? HISTOGRAM_HIGHEST_US : us < 0 ? 0 : us
}

function pct(h: LogHistogram): PhasePercentilesMs {
  return { p50: h.percentileMs(0.5), p99: h.percentileMs(0.99), count: h.count }
}

function stats(h: Histogram, sum: number, max: number): LatencyStats {
  const n = h.totalCount
  if (n === 0) return { count: 0, mean: 0, p50: 0, p99: 0, p999: 0, max: 0 }
  return {
    count: n,
    mean: sum / n,
    p50: h.getValueAtPercentile(50) / 1000,
    p99: h.getValueAtPercentile(99) / 1000,
    p999: h.getValueAtPercentile(99.9) / 1000,
    max,
  }
}

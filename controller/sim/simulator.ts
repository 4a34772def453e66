import type { BatchServiceModel } from '../queueing/batching.js'
import { applyActions, proxyLlmSignals } from '../policy.js'
import type { Action, FleetObservation, PhasePercentilesMs, Policy, Setpoints } from '../policy.js'
import { createArrivals } from './arrivals.js'
import type { ArrivalDraft, ArrivalSpec } from './arrivals.js'
import { EventHeap } from './heap.js'
import { ADMIT, ClassQueues } from './queues.js'
import { BATCH_CAP, EV_READY, Fleet, KvCache, ST_BUSY, ST_STARTING } from './replicas.js'
import type { KvModel, Replica } from './replicas.js'
import { Rng } from './rng.js'
import { RequestSlots } from './slots.js'
import { IntervalStats, PhaseStats, TickWindows, Timeline } from './stats.js'
import type { LatencyStats, SimTimeline } from './stats.js'

export type { LatencyStats, SimTimeline } from './stats.js'
export type { KvModel } from './replicas.js'

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
       * gets one token per step. KV cache (`kv`): a sequence reserves input + output tokens while it runs
       * (`reserve`, the default), or takes blocks as its tokens are written and may be preempted when none is
       * free (`paged`). At most `maxBatch` (the setpoint) sequences run at once.
       */
      readonly kind: 'llm'
      readonly prefillMsPerToken: number
      readonly decodeStepMs: number
      readonly decodeMsPerSeq: number
      readonly kvCapacityTokens: number
      /** How KV cache is held: reserved up front (default) or paged blocks with preemption. */
      readonly kv?: KvModel
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
  /**
   * What the policy sees of the replicas: `full` (default), what spans or a scraped server report (service
   * phase, batch sizes, busy share, an LLM server's own counters); `proxy`, only what tailguard's proxy in front
   * of servers that report nothing measures: arrivals, its queue, requests in flight at the replicas, e2e (and
   * TTFT/TPOT of streamed requests).
   */
  readonly observe?: 'full' | 'proxy'
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
  /** Share of each priority class's arrivals that were good (shed = not good). */
  readonly attainmentByClass: number[]
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
  /** LLM with paged KV: sequences preempted (evicted and queued again) over the run. */
  readonly preemptions?: number
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
const EV_TICK = 4

const SHED_REASONS: readonly ShedReason[] = ['queue_full', 'concurrency', 'deadline', 'too_large']
const SHED_DEADLINE = 2
const SHED_TOO_LARGE = 3

/**
 * Runs a discrete-event simulation of a fleet under `policy`: arrivals from a trace or a seeded pattern, a
 * shared priority queue with admission limits, replicas that batch (dynamic batcher or continuous LLM
 * batching, KV reserved up front or paged) and cold-start, and the policy stepping every control interval on
 * the same observation the live controller gets. Deterministic: the same config and seed give the same result.
 * The parts live in their own modules: request slots (slots.ts), queues and admission (queues.ts), replicas and
 * KV (replicas.ts), statistics (stats.ts); this file is the event loop and the dispatch.
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
  private readonly faultRng: Rng
  private now = 0
  private events = 0
  private readonly slots = new RequestSlots()
  private readonly q: ClassQueues
  private readonly fleet: Fleet
  private readonly kv: KvCache
  private readonly classes: number
  private readonly classCdf: Float64Array
  private inSystem = 0
  private inService = 0
  private lastConcChange = 0
  private lastRunChange = 0
  private setpoints: Setpoints
  private policyState: unknown
  private timerAt = -1
  // Whole run.
  private arrived = 0
  private readonly arrivedByClass: Float64Array
  private readonly shedByClass: Float64Array
  private readonly goodByClass: Float64Array
  private readonly shedByReason = new Float64Array(SHED_REASONS.length)
  private completed = 0
  private good = 0
  private e2eWithin = 0
  private ttftWithin = 0
  private tpotWithin = 0
  private readonly sE2e = new PhaseStats()
  private readonly sQueue = new PhaseStats()
  private readonly sTtft = new PhaseStats()
  private readonly sTpot = new PhaseStats()
  private batches = 0
  private batchItems = 0
  private preemptions = 0
  private lastActivityMs = 0
  private scalingActions = 0
  private budgetBad = 0
  private budgetTotal = 0
  private minAlive = Infinity
  private maxAlive = 0
  private aliveTickSum = 0
  private ticks = 0
  private readonly decisions: Array<{ atMs: number; reason: string }> = []
  private readonly iv = new IntervalStats()
  private readonly windows = new TickWindows()
  private readonly tl = new Timeline()
  private readonly pastObs: FleetObservation[] = []
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
  private readonly warmMin: number
  private readonly maxReplicas: number
  private readonly prefillMsPerToken: number
  private readonly decodeStepMs: number
  private readonly decodeMsPerSeq: number

  constructor(
    private readonly config: SimConfig,
    private readonly policy: Policy<unknown>,
    private readonly options: SimRunOptions,
  ) {
    this.rng = new Rng(config.seed)
    this.noiseRng = new Rng(config.seed ^ 0x6e015e)
    this.faultRng = new Rng(config.seed ^ 0xfa017)
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
    this.q = new ClassQueues(this.classes, this.slots)
    this.arrivedByClass = new Float64Array(this.classes)
    this.shedByClass = new Float64Array(this.classes)
    this.goodByClass = new Float64Array(this.classes)
    const admission = Array.from(
      { length: this.classes },
      (_, c) =>
        config.initial.admission[c] ?? {
          maxQueue: Number.MAX_SAFE_INTEGER,
          maxConcurrency: Number.MAX_SAFE_INTEGER,
        },
    )
    this.setpoints = { ...config.initial, admission, maxBatch: Math.min(BATCH_CAP, config.initial.maxBatch) }
    this.q.setLimits(this.setpoints)
    const m = config.replica
    this.isLlm = m.kind === 'llm'
    this.fixedMs = m.kind === 'batch' ? m.service.fixedMs : 0
    this.perItemMs = m.kind === 'batch' ? m.service.perItemMs : 0
    this.prefillMsPerToken = m.kind === 'llm' ? m.prefillMsPerToken : 0
    this.decodeStepMs = m.kind === 'llm' ? m.decodeStepMs : 0
    this.decodeMsPerSeq = m.kind === 'llm' ? m.decodeMsPerSeq : 0
    this.kv = new KvCache(
      m.kind === 'llm' ? (m.kv ?? { kind: 'reserve' }) : { kind: 'reserve' },
      m.kind === 'llm' ? m.kvCapacityTokens : Infinity,
    )
    const noise = m.noise ?? { kind: 'none' }
    this.noiseKind = noise.kind === 'none' ? 0 : noise.kind === 'exponential' ? 1 : 2
    this.noiseCv = noise.kind === 'lognormal' ? noise.cv : 0
    this.intervalMs = config.controlIntervalMs ?? 1000
    this.objective = config.slo.objective ?? 0.99
    this.sloE2e = config.slo.e2eMs
    this.sloTtft = this.isLlm ? (config.slo.ttftMs ?? Infinity) : Infinity
    this.sloTpot = this.isLlm ? (config.slo.tpotMs ?? Infinity) : Infinity
    this.deadline = config.deadlineMs ?? Infinity
    const coldMs = (config.coldStart?.loadMs ?? 60_000) + (config.coldStart?.warmupMs ?? 30_000)
    this.fleet = new Fleet(this.heap, coldMs)
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
    for (let i = 0; i < initial; i++) this.fleet.add(true, 0)
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
        const r = this.fleet.all[heap.id]!
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
        const r = this.fleet.all[heap.id]!
        if (r.epoch === heap.aux && r.state === ST_STARTING) {
          this.fleet.markReady(r, this.now)
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

  private integrateConc(): void {
    this.iv.concIntegral += this.inSystem * (this.now - this.lastConcChange)
    this.lastConcChange = this.now
  }

  private integrateRun(): void {
    this.iv.runIntegral += this.inService * (this.now - this.lastRunChange)
    this.lastRunChange = this.now
  }

  private onArrival(d: ArrivalDraft): void {
    this.arrived++
    this.iv.arrivals++
    let c = 0
    if (this.classes > 1) {
      const u = this.rng.next()
      while (c < this.classes - 1 && u >= this.classCdf[c]!) c++
    }
    this.arrivedByClass[c]!++
    const tl = this.tl
    tl.minuteOf(this.now, this.fleet.alive)
    tl.total[tl.current]!++
    tl.series.arrivals[tl.current]!++
    const verdict = this.q.admits(c)
    if (verdict !== ADMIT) return this.shedNew(c, verdict)
    if (this.isLlm && this.kv.tooLarge(d.inputTokens, d.outputTokens)) return this.shedNew(c, SHED_TOO_LARGE)
    const slots = this.slots
    const s = slots.alloc()
    slots.arrivalMs[s] = d.timeMs
    slots.inTok[s] = d.inputTokens
    slots.outTok[s] = d.outputTokens
    slots.generated[s] = 0
    slots.blocks[s] = 0
    slots.preempted[s] = 0
    slots.cls[s] = c
    this.q.enqueue(s, c)
    this.integrateConc()
    this.inSystem++
    this.tryDispatch()
  }

  /** Sheds a request that never entered the system (counted in the minute it arrived in). */
  private shedNew(c: number, reason: number, arrivalMinute = this.tl.current): void {
    this.shedByClass[c]!++
    this.shedByReason[reason]!++
    this.iv.shed++
    this.budgetBad++
    this.budgetTotal++
    this.tl.series.shed[arrivalMinute]!++
    this.lastActivityMs = this.now
  }

  /** Sheds a queued request at dispatch (deadline); it counts against the minute it arrived in. */
  private shedQueued(s: number): void {
    this.tl.minuteOf(this.now, this.fleet.alive)
    this.shedNew(this.slots.cls[s]!, SHED_DEADLINE, Math.floor(this.slots.arrivalMs[s]! / 60_000))
    this.leave(s)
  }

  private leave(s: number): void {
    this.integrateConc()
    this.inSystem--
    this.q.leave(s)
    this.slots.release(s)
  }

  /** True when a queued request has waited past its class's queue timeout or cannot finish by the deadline. */
  private late(s: number, estMs: number): boolean {
    const a = this.slots.arrivalMs[s]!
    return this.now - a > this.q.timeoutMs[this.slots.cls[s]!]! || this.now + estMs > a + this.deadline
  }

  private recordStart(s: number): void {
    const slots = this.slots
    this.integrateRun()
    this.inService++
    if (slots.preempted[s] === 1) return
    slots.startMs[s] = this.now
    const wait = this.now - slots.arrivalMs[s]!
    this.sQueue.record(wait)
    this.iv.queue.recordMs(wait)
    this.iv.inputTokens += slots.inTok[s]!
  }

  private complete(s: number, ttftOk: boolean, tpotOk: boolean): void {
    const now = this.now
    this.tl.minuteOf(now, this.fleet.alive)
    const e2e = now - this.slots.arrivalMs[s]!
    this.sE2e.record(e2e)
    this.iv.e2e.recordMs(e2e)
    this.tl.hist.recordMs(e2e)
    this.completed++
    this.iv.completed++
    this.integrateRun()
    this.inService--
    const e2eOk = e2e <= this.sloE2e
    if (e2eOk) this.e2eWithin++
    this.budgetTotal++
    if (e2eOk && ttftOk && tpotOk) {
      this.good++
      this.goodByClass[this.slots.cls[s]!]!++
      this.iv.good++
      // Attainment per minute is by arrival: good and total count the same requests.
      this.tl.series.good[Math.floor(this.slots.arrivalMs[s]! / 60_000)]!++
    } else this.budgetBad++
    this.lastActivityMs = now
    this.leave(s)
  }

  // ---- dispatch -------------------------------------------------------------------------------------------

  private tryDispatch(): void {
    const idle = this.fleet.idle
    while (idle.length > 0 && this.q.queued > 0) {
      if (!this.isLlm) {
        const sp = this.setpoints
        if (this.q.queued < sp.maxBatch && sp.batchWindowMs > 0) {
          const due = this.q.oldestArrivalMs() + sp.batchWindowMs
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
    const target = Math.min(this.q.queued, this.setpoints.maxBatch)
    const estMs = this.fixedMs + this.perItemMs * target
    let n = 0
    while (n < target && this.q.queued > 0) {
      const s = this.q.dequeue()
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
    this.countBatch(serviceMs, n)
    return true
  }

  private countBatch(serviceMs: number, n: number): void {
    const iv = this.iv
    iv.busyMs += serviceMs
    iv.service.recordMs(serviceMs)
    this.batches++
    this.batchItems += n
    iv.batches++
    iv.batchItems += n
    if (n > iv.batchMax) iv.batchMax = n
  }

  private onBatchDone(r: Replica): void {
    for (let i = 0; i < r.n; i++) this.complete(r.seqs[i]!, true, true)
    r.n = 0
    this.fleet.afterWork(r, this.now)
    this.tryDispatch()
  }

  /**
   * One LLM step: paged KV first finds a block for every running sequence whose next token opens one
   * (preempting the newest sequences when none is free), then new sequences join while KV and the max batch
   * allow; the step costs a fixed part, a part per running sequence and the prefill of what joined.
   */
  private startStep(r: Replica): boolean {
    const slots = this.slots
    const kv = this.kv
    if (kv.paged) this.growBlocks(r)
    const old = r.n
    let newTokens = 0
    if (!r.draining) {
      const max = this.setpoints.maxBatch
      while (r.n < max && this.q.queued > 0) {
        const s = this.q.peek()
        const need = kv.admitNeed(slots.inTok[s]!, slots.outTok[s]!, slots.generated[s]!)
        if (r.kvUsed + need > kv.capacity) break
        this.q.dequeue()
        // A preempted sequence recomputes its prompt and the tokens it had generated.
        const prefill = slots.inTok[s]! + (slots.preempted[s] === 1 ? slots.generated[s]! : 0)
        const estMs = this.decodeStepMs + this.prefillMsPerToken * prefill
        if (slots.preempted[s] === 0 && this.late(s, estMs)) {
          this.shedQueued(s)
          continue
        }
        this.recordStart(s)
        slots.preempted[s] = 0
        r.seqs[r.n++] = s
        r.kvUsed += need
        slots.blocks[s] = need
        newTokens += prefill
      }
    }
    if (r.n === 0) return false
    const stepMs =
      (this.decodeStepMs + this.decodeMsPerSeq * old + this.prefillMsPerToken * newTokens) * this.noise()
    r.state = ST_BUSY
    this.heap.push(this.now + stepMs, EV_DONE, r.id, r.epoch)
    this.iv.busyMs += stepMs
    this.iv.service.recordMs(stepMs)
    const admitted = r.n - old
    if (admitted > 0) {
      const iv = this.iv
      this.batches++
      this.batchItems += r.n
      iv.batches++
      iv.batchItems += r.n
      if (r.n > iv.batchMax) iv.batchMax = r.n
    }
    return true
  }

  /** Paged KV: a block for each running sequence whose next token opens one; preempts the newest when full. */
  private growBlocks(r: Replica): void {
    const slots = this.slots
    const kv = this.kv
    let i = 0
    while (i < r.n) {
      const s = r.seqs[i]!
      // Blocks for what it holds once this step writes its next token.
      const want = kv.blocksHeld(slots.inTok[s]! + slots.generated[s]! + 1)
      const more = want - slots.blocks[s]!
      if (more > 0) {
        while (r.kvUsed + more > kv.capacity && r.n - 1 > i) this.preempt(r, r.n - 1)
        if (r.kvUsed + more > kv.capacity) {
          this.preempt(r, i)
          continue
        }
        r.kvUsed += more
        slots.blocks[s] = want
      }
      i++
    }
  }

  /** Evicts the sequence at index `i` of replica `r`: frees its blocks and queues it again at the front. */
  private preempt(r: Replica, i: number): void {
    const s = r.seqs[i]!
    r.kvUsed -= this.slots.blocks[s]!
    this.slots.blocks[s] = 0
    this.slots.preempted[s] = 1
    r.seqs[i] = r.seqs[--r.n]!
    this.integrateRun()
    this.inService--
    this.q.requeueFront(s)
    this.preemptions++
    this.iv.preemptions++
  }

  private onStepDone(r: Replica): void {
    const now = this.now
    const slots = this.slots
    this.iv.outputTokens += r.n
    let i = 0
    while (i < r.n) {
      const s = r.seqs[i]!
      const g = ++slots.generated[s]!
      if (g === 1) {
        slots.firstTokMs[s] = now
        const ttft = now - slots.arrivalMs[s]!
        this.sTtft.record(ttft)
        this.iv.ttft.recordMs(ttft)
        if (ttft <= this.sloTtft) this.ttftWithin++
      }
      if (g >= slots.outTok[s]!) {
        const ttftOk = slots.firstTokMs[s]! - slots.arrivalMs[s]! <= this.sloTtft
        let tpotOk = true
        if (slots.outTok[s]! > 1) {
          const tpot = (now - slots.firstTokMs[s]!) / (slots.outTok[s]! - 1)
          this.sTpot.record(tpot)
          this.iv.tpot.recordMs(tpot)
          tpotOk = tpot <= this.sloTpot
        }
        if (tpotOk) this.tpotWithin++
        r.kvUsed -= slots.blocks[s]!
        slots.blocks[s] = 0
        this.complete(s, ttftOk, tpotOk)
        r.seqs[i] = r.seqs[--r.n]!
      } else i++
    }
    if (!this.startStep(r)) this.fleet.afterWork(r, now)
  }

  // ---- control --------------------------------------------------------------------------------------------

  private onTick(): void {
    const now = this.now
    const fleet = this.fleet
    const tl = this.tl
    tl.minuteOf(now, fleet.alive)
    this.ticks++
    this.aliveTickSum += fleet.alive
    if (fleet.alive < this.minAlive) this.minAlive = fleet.alive
    if (fleet.alive > this.maxAlive) this.maxAlive = fleet.alive
    tl.sampleReplicas(fleet.alive)
    this.integrateConc()
    fleet.integrateReady(now)
    this.integrateRun()
    const iv = this.iv
    this.windows.push(this.ticks, iv.arrivals, iv.concIntegral / this.intervalMs)
    const { arrivalRps, concurrency } = this.windows.averages(this.ticks, this.intervalMs)
    const allowed = (1 - this.objective) * this.budgetTotal
    const intervalTotal = iv.completed + iv.shed
    const intervalBad = intervalTotal - iv.good
    const obs: FleetObservation = {
      intervalMs: this.intervalMs,
      arrivalRps,
      latencyMs: {
        queue: iv.percentiles(iv.queue),
        service: iv.percentiles(iv.service),
        e2e: iv.percentiles(iv.e2e),
        ttft: iv.percentiles(iv.ttft),
        tpot: iv.percentiles(iv.tpot),
      },
      queueDepth: this.q.queued,
      queueDepthByClass: this.q.depthByClass(),
      inFlight: this.inService,
      inFlightMean: iv.runIntegral / this.intervalMs,
      concurrency,
      batchSize: { mean: iv.batches > 0 ? iv.batchItems / iv.batches : 0, max: iv.batchMax },
      errorBudget: {
        remaining: allowed > 0 ? 1 - this.budgetBad / allowed : 1,
        burnRate: intervalTotal > 0 ? intervalBad / intervalTotal / (1 - this.objective) : 0,
      },
      gpuUtilization: fleet.readyMs > 0 ? Math.min(1, iv.busyMs / fleet.readyMs) : 0,
      replicas: fleet.counts(),
      completed: iv.completed,
      shed: iv.shed,
      ...(iv.service.count > 0 ? { serviceMeanMs: iv.busyMs / iv.service.count } : {}),
      ...(this.isLlm
        ? {
            llm: {
              running: iv.runIntegral / this.intervalMs,
              inputTokens: iv.inputTokens,
              outputTokens: iv.outputTokens,
              kvUsage: fleet.kvUsage(this.kv.capacity),
              preemptions: iv.preemptions,
            },
          }
        : {}),
    }
    const seen = this.config.observe === 'proxy' ? proxyView(obs) : obs
    const out = this.policy.step(this.policyState, this.faulty(seen), now)
    this.policyState = out.state
    this.apply(out.actions)
    iv.reset()
    fleet.readyMs = 0
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
    if (next.admission !== before.admission) this.q.setLimits(this.setpoints)
    const max = this.options.maxDecisions ?? 500
    for (const a of actions)
      if (this.decisions.length < max) this.decisions.push({ atMs: this.now, reason: a.reason })
    if (next.desiredReplicas !== before.desiredReplicas) {
      this.scalingActions++
      const desired = Math.min(this.maxReplicas, Math.max(this.warmMin, next.desiredReplicas))
      this.fleet.scaleTo(desired, this.now)
    }
    this.tryDispatch()
  }

  private finish(): SimResult {
    const end = Math.max(this.lastActivityMs, 1)
    this.now = end
    const fleet = this.fleet
    fleet.integrateGpu(end)
    if (this.tl.current >= 0) this.tl.close(fleet.alive)
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
      attainmentByClass: Array.from(this.goodByClass, (g, c) =>
        this.arrivedByClass[c]! > 0 ? g / this.arrivedByClass[c]! : 1,
      ),
      shedByReason,
      latencyMs: {
        e2e: this.sE2e.summary(),
        queue: this.sQueue.summary(),
        ...(this.isLlm ? { ttft: this.sTtft.summary(), tpot: this.sTpot.summary() } : {}),
      },
      attainment: {
        overall: share(this.good),
        e2e: share(this.e2eWithin),
        ...(this.isLlm ? { ttft: share(this.ttftWithin), tpot: share(this.tpotWithin) } : {}),
      },
      sloViolationMinutes: this.tl.violationMinutes(this.objective),
      goodputRps: this.good / (end / 1000),
      throughputRps: this.completed / (end / 1000),
      gpuHours: fleet.gpuMs / 3_600_000,
      scalingActions: this.scalingActions,
      replicas: {
        min: Number.isFinite(this.minAlive) ? this.minAlive : fleet.alive,
        max: Math.max(this.maxAlive, fleet.alive),
        mean: this.ticks > 0 ? this.aliveTickSum / this.ticks : fleet.alive,
      },
      meanBatchSize: this.batches > 0 ? this.batchItems / this.batches : 0,
      ...(this.kv.paged ? { preemptions: this.preemptions } : {}),
      events: this.events,
      decisions: this.decisions,
      timeline: this.tl.series,
    }
  }
}

const NO_DATA: PhasePercentilesMs = { p50: null, p99: null, count: 0 }

/**
 * What a proxy in front of replicas that report nothing sees of an observation: no service phase, batch sizes or
 * GPU busy share (it counts the replicas with a request in flight instead); of an LLM server's counters, only the
 * output tokens (from the responses' usage) and the requests in flight as running sequences, no prompt tokens, KV
 * use or preemptions.
 */
function proxyView(obs: FleetObservation): FleetObservation {
  const { serviceMeanMs: _s, llm, ...rest } = obs
  return {
    ...rest,
    latencyMs: { ...obs.latencyMs, service: NO_DATA },
    batchSize: { mean: 0, max: 0 },
    gpuUtilization: 0,
    // The proxy's busy upstreams: replicas with a request in flight (in service, here) over the interval.
    busyReplicasMean: obs.gpuUtilization * obs.replicas.ready,
    ...(llm ? { llm: proxyLlmSignals(obs.inFlightMean ?? obs.inFlight, llm.outputTokens) } : {}),
  }
}

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

/**
 * Online capacity learning and latency prediction for the `tailguard` policy.
 *
 * Batch replicas: S(B) = a + b·B fitted (`fitBatchServiceTime`) from each interval's (mean batch, mean service
 * time); the tail of service noise from the interval's service p99 over S(B at p99); a request's latency at R
 * replicas is the batching window + S(B at its percentile)·tail + the Erlang C wait of batches over R servers.
 *
 * LLM replicas (continuous batching): the decode step S(n) = a + b·n fitted against running sequences per
 * replica; prefill GPU time per request from the gap between the mean and median step; output tokens per
 * request from the token counters; KV per sequence from the KV occupancy. At R replicas and λ req/s, running
 * sequences per replica solve n = λ/R · D(n) (Little's law) with D = prefill + tokens·TPOT and
 * TPOT = S(n)/(1 − prefill share); TTFT = Erlang C wait over R·slots + the first step, corrected by what was
 * observed.
 */
import { fitBatchServiceTime, poissonQuantile } from '../../queueing/batching.js'
import type { BatchServiceModel } from '../../queueing/batching.js'
import { mmcWaitPercentile } from '../../queueing/multi-server.js'
import type { FleetObservation } from '../../policy.js'

/** Most observations kept for the fits. */
export const FIT_POINTS = 256
const EWMA = 0.1
/**
 * Memory of the sums behind the per-request ratios (prefill ms and output tokens per request) when the caller
 * gives none, ms. The policy gives its forecast horizon, the cold start.
 */
export const WORKLOAD_MEMORY_MS = 90_000

/** What the policy has learned about its replicas so far. */
export interface LearnedCapacity {
  /** Fit points: batch size (or running sequences per replica) and service (or step) time, newest last. */
  readonly xs: readonly number[]
  readonly ys: readonly number[]
  /**
   * Service-time tail (EWMA), ≥ 1: batch replicas, service p99 over S(B at p99) once the fit is trusted
   * ({@link serviceTail}), p99/p50 before; LLM replicas, p99/p50 of the step.
   */
  readonly tail: number
  /**
   * LLM: prefill GPU ms per request and output tokens per request (ratios of smoothed sums, which unlike
   * smoothed ratios do not overweight intervals with few completions), KV share per running sequence (EWMA).
   */
  readonly prefillMs: number | null
  readonly outputTokens: number | null
  readonly kvPerSeq: number | null
  /** Smoothed per-interval sums behind the ratios: completions, prefill ms, output tokens. */
  readonly sums: { readonly completed: number; readonly prefillMs: number; readonly outputTokens: number }
  /** LLM: observed TPOT / modelled TPOT and observed TTFT p99 / modelled first step (EWMA). */
  readonly tpotCorrection: number
  readonly ttftCorrection: number
  /** Intervals learned from. */
  readonly samples: number
  /**
   * Batch replicas: what the fit points come from, the service phase the replicas report or, when they report
   * none, their response times as a proxy in front of them sees them ({@link learnCapacity}); absent before the
   * first point.
   */
  readonly basis?: 'service' | 'responses'
  /** LLM: the decode-step model fitted from the points, refreshed as they are learned (null: not yet). */
  readonly stepModel: BatchServiceModel | null
  /** LLM: running sequences per replica of the last intervals, newest last (at most {@link RUNNING_KEPT}). */
  readonly running: readonly number[]
  /**
   * LLM: exponentially weighted least-squares sums of the decode-step points (weight, Σx, Σy, Σx², Σxy), with a
   * half-life of {@link STEP_HALF_LIFE_MS}. The step time is a property of the hardware and the model, so it is
   * fitted over a long memory: the last 256 points (four minutes) often span only the few running sequences of a
   * lightly loaded fleet, and a slope fitted on them, extrapolated to a full replica, swings 0.2–0.7 ms/seq.
   */
  readonly stepSums: {
    readonly w: number
    readonly x: number
    readonly y: number
    readonly xx: number
    readonly xy: number
  }
}

/** Nothing learned yet. */
export const NOTHING_LEARNED: LearnedCapacity = {
  xs: [],
  ys: [],
  tail: 1.2,
  prefillMs: null,
  outputTokens: null,
  kvPerSeq: null,
  sums: { completed: 0, prefillMs: 0, outputTokens: 0 },
  tpotCorrection: 1,
  ttftCorrection: 1,
  samples: 0,
  stepModel: null,
  running: [],
  stepSums: { w: 0, x: 0, y: 0, xx: 0, xy: 0 },
}

/** Half-life of the decode-step fit's memory, ms. */
export const STEP_HALF_LIFE_MS = 900_000

/** Intervals of running sequences kept: a request's decode spans up to this many. */
const RUNNING_KEPT = 60

const ewma = (old: number | null, v: number, a = EWMA) => (old === null ? v : old + a * (v - old))
const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v))

function pushPoint(l: LearnedCapacity, x: number, y: number): Pick<LearnedCapacity, 'xs' | 'ys'> {
  const xs = l.xs.length >= FIT_POINTS ? l.xs.slice(1) : l.xs.slice()
  const ys = l.ys.length >= FIT_POINTS ? l.ys.slice(1) : l.ys.slice()
  xs.push(x)
  ys.push(y)
  return { xs, ys }
}

/** What {@link learnCapacity} takes besides the observation. */
export interface LearningContext {
  /** Batch replicas: the trusted S(B) so far, which the service tail is measured against ({@link serviceTail}). */
  readonly batchModel?: BatchServiceModel
  /** LLM replicas: memory of the per-request ratios, ms (default {@link WORKLOAD_MEMORY_MS}). */
  readonly workloadMemoryMs?: number
}

/**
 * Requests in flight per busy replica over the interval, at least 1: the batch a request shares at a server that
 * reports none. Busy replicas as the proxy counts them (its upstreams with a request in flight), else the GPU busy
 * share, else all ready replicas.
 *
 * @example perBusyReplica(obs) // 6 for 6 in flight on average over 2 replicas busy half the time
 */
export function perBusyReplica(obs: FleetObservation): number {
  const ready = Math.max(1, obs.replicas.ready)
  const busy =
    obs.busyReplicasMean !== undefined && obs.busyReplicasMean > 0
      ? clamp(obs.busyReplicasMean / ready, 0.05, 1)
      : obs.gpuUtilization > 0
        ? clamp(obs.gpuUtilization, 0.05, 1)
        : 1
  return Math.max(1, (obs.inFlightMean ?? obs.inFlight) / ready / busy)
}

/**
 * Batch replicas that report no service phase, behind the proxy alone: one fit point from what the proxy sees,
 * by Little's law. The mean time a request spent at the replicas (queued inside the server and served) is the
 * mean in flight there over the completion rate; the batch it shared is the mean in flight per busy replica
 * (the proxy counts its upstreams with a request in flight; else the GPU busy share), at least 1 (per replica
 * when no busy share is known: idle time then lowers the mean, and at light load a request is still served in
 * a batch of one). A server's own queue lengthens the times the larger its load, so
 * the fitted S(B) is steeper than the batch time alone: the fleet it sizes is larger, not smaller. The rate is of
 * the requests answered without error: one that fails fast (a 502 from a replica that is down) spends almost no
 * time in flight and would shorten the mean; one that fails slowly (a timeout) lengthens it, on the safe side.
 * The tail is the e2e p99 over its p50. Unchanged when the interval has no such data.
 */
function learnFromResponses(l: LearnedCapacity, obs: FleetObservation): LearnedCapacity {
  const inFlight = obs.inFlightMean
  const e2e = obs.latencyMs.e2e
  const answered = obs.completed - (obs.errors ?? 0)
  if (inFlight === undefined || !(inFlight > 0) || !(answered > 0)) return l
  if (e2e.p50 === null || !(e2e.p50 > 0)) return l
  const x = perBusyReplica(obs)
  const y = (inFlight / (answered / (obs.intervalMs / 1000))) * 1000
  const tail = e2e.p99 !== null ? clamp(e2e.p99 / e2e.p50, 1, 8) : l.tail
  return {
    ...l,
    ...pushPoint(l, x, y),
    tail: ewma(l.tail, tail),
    samples: l.samples + 1,
    basis: 'responses',
  }
}

/**
 * Folds one (validated) observation into what has been learned. Returns the input unchanged when the interval
 * carried no service data.
 *
 * @example learnCapacity(NOTHING_LEARNED, obs, false).samples // 1 when obs had batches
 */
export function learnCapacity(
  l: LearnedCapacity,
  obs: FleetObservation,
  llm: boolean,
  context: LearningContext = {},
): LearnedCapacity {
  const { batchModel, workloadMemoryMs = WORKLOAD_MEMORY_MS } = context
  // LLM servers seldom report their step time (vLLM does not, nor does a proxy in front of one): then the TPOT
  // requests saw, a decode step with its share of prefills, stands in for it.
  const tpotSeen = obs.latencyMs.tpot
  const svc =
    obs.latencyMs.service.count === 0 && llm && tpotSeen.count > 0 ? tpotSeen : obs.latencyMs.service
  if (svc.count === 0 || svc.p50 === null || !(svc.p50 > 0))
    return llm || l.basis === 'service' ? l : learnFromResponses(l, obs)
  const ready = Math.max(1, obs.replicas.ready)
  const mean = obs.serviceMeanMs ?? svc.p50
  const tail = svc.p99 !== null && svc.p50 > 0 ? clamp(svc.p99 / svc.p50, 1, 8) : l.tail
  if (!llm) {
    // Service data replaces what was learned from response times: it measures the batch itself.
    const from = l.basis === 'responses' ? NOTHING_LEARNED : l
    const model = l.basis === 'responses' ? undefined : batchModel
    const points = obs.batchSize.mean > 0 ? pushPoint(from, obs.batchSize.mean, mean) : {}
    const seen =
      model && svc.p99 !== null && obs.batchSize.mean > 0 ? serviceTail(svc.p99, model, obs.batchSize) : tail
    return { ...from, ...points, basis: 'service', tail: ewma(from.tail, seen), samples: from.samples + 1 }
  }
  const running = obs.llm?.running ?? obs.inFlight
  const perReplica = running / ready
  if (!(perReplica > 0)) return l
  // Steps above the median carry prefills: their excess time, per completed request, is the prefill cost.
  const excess = obs.serviceMeanMs !== undefined ? Math.max(0, obs.serviceMeanMs - svc.p50) * svc.count : 0
  const first = l.sums.completed === 0
  // Smoothed over the horizon a decision commits to, in time (not intervals): a replica ordered on these
  // ratios is ready a cold start later. Over a shorter memory (it was 33 intervals) a few long prompts or
  // answers of a heavy-tailed trace (Azure conversations: prefill per request from 108 to 152 ms and back
  // within six minutes) ordered a replica that was cut two minutes later.
  const alpha = Math.min(1, obs.intervalMs / workloadMemoryMs)
  const sum = (old: number, v: number) => (first ? v : old + alpha * (v - old))
  const sums = {
    completed: sum(l.sums.completed, obs.completed),
    prefillMs: sum(l.sums.prefillMs, excess),
    outputTokens: sum(l.sums.outputTokens, obs.llm?.outputTokens ?? 0),
  }
  const prefillMs =
    obs.serviceMeanMs !== undefined && sums.completed > 0 ? sums.prefillMs / sums.completed : l.prefillMs
  const outputTokens =
    obs.llm && sums.completed > 0 && sums.outputTokens > 0
      ? sums.outputTokens / sums.completed
      : l.outputTokens
  let kvPerSeq = l.kvPerSeq
  if (obs.llm && obs.llm.kvUsage > 0) kvPerSeq = ewma(l.kvPerSeq, obs.llm.kvUsage / perReplica)
  const learned: LearnedCapacity = {
    ...l,
    prefillMs,
    outputTokens,
    kvPerSeq,
    sums,
    tail: ewma(l.tail, tail),
    samples: l.samples + 1,
  }
  const runningSeen = [...l.running.slice(-(RUNNING_KEPT - 1)), perReplica]
  // The decode step against running sequences, from what requests saw: TPOT·(1 − prefill share) is the time
  // of a decode step with the prefills taken out (step medians are no good: under load most steps carry one).
  // The requests that complete now decoded over the last out × TPOT: their TPOT is the step at the running
  // sequences of that span, not of this instant (fitted against the instant, the slope comes out twice too steep).
  const rate = sums.completed / (obs.intervalMs / 1000) / ready
  const share = clamp((rate * (prefillMs ?? 0)) / 1000, 0, 0.9)
  const tpot = obs.latencyMs.tpot
  if (tpot.count > 0 && tpot.p50 !== null && tpot.p50 > 0) {
    const spanMs = (outputTokens ?? 1) * tpot.p50
    const lived = runningSeen.slice(-clamp(Math.round(spanMs / obs.intervalMs), 1, RUNNING_KEPT))
    const x = lived.reduce((a, b) => a + b, 0) / lived.length
    const y = tpot.p50 * (1 - share)
    const keep = 0.5 ** (obs.intervalMs / STEP_HALF_LIFE_MS)
    const m = l.stepSums
    Object.assign(learned, pushPoint(l, x, y), {
      stepSums: {
        w: m.w * keep + 1,
        x: m.x * keep + x,
        y: m.y * keep + y,
        xx: m.xx * keep + x * x,
        xy: m.xy * keep + x * y,
      },
    })
  }
  // Fitted once here, not in every prediction.
  const model = stepFit(learned.stepSums) ?? fittedModel(learned, 3, -Infinity).model
  let tpotCorrection = l.tpotCorrection
  if (tpot.count > 0 && tpot.p50 !== null && tpot.p50 > 0) {
    const modelled = stepMs(model, perReplica) / (1 - share)
    tpotCorrection = ewma(l.tpotCorrection, clamp(tpot.p50 / modelled, 0.5, 3))
  }
  const ttft = obs.latencyMs.ttft
  const queue = obs.latencyMs.queue
  let ttftCorrection = l.ttftCorrection
  if (ttft.count > 0 && ttft.p99 !== null && (queue.p99 ?? 0) < 0.1 * ttft.p99) {
    const modelled = firstTokenMs(model, perReplica, prefillMs ?? 0, share)
    ttftCorrection = ewma(l.ttftCorrection, clamp(ttft.p99 / modelled, 0.5, 5))
  }
  return { ...learned, tpotCorrection, ttftCorrection, stepModel: model, running: runningSeen }
}

/**
 * The service-time tail of batch replicas: an interval's service p99 over what the fitted S(B) gives for the
 * batch the prediction puts at that percentile (Poisson batches at the interval's mean size, bounded by its largest
 * batch). The prediction is S(B at p)·tail, so with this tail it reproduces the service p99 it observed. p99/p50 of
 * the batch times, the tail before, counts the spread of batch sizes inside an interval a second time (the
 * prediction has it already, through the batch at its percentile): 1.5–1.9 where the noise is 1.26 (lognormal CV
 * 0.1), which shrank the max batch and the load a replica is credited with by a fifth. At least 1.
 *
 * @example serviceTail(26, { fixedMs: 5, perItemMs: 0.6 }, { mean: 12, max: 30 }) // 26 / S(21) ≈ 1.48
 */
export function serviceTail(
  p99Ms: number,
  model: BatchServiceModel,
  batchSize: { readonly mean: number; readonly max: number },
): number {
  const high = Math.max(1, Math.min(batchSize.max, poissonQuantile(batchSize.mean, 0.99)))
  return clamp(p99Ms / stepMs(model, high), 1, 8)
}

/** The fitted S(B) (or decode step S(n)) and whether the fit is trusted. */
export interface FittedModel {
  readonly model: BatchServiceModel
  readonly r2: number
  readonly points: number
  /** True with enough points, a spread of sizes, a non-negative slope and R² at or above the floor. */
  readonly trusted: boolean
}

/**
 * S(B) from the learned points: the least-squares line when it is trusted; otherwise a flat line at the
 * mean observed time (every batch costs what batches cost so far), which is safe for smaller batches.
 *
 * @example fittedModel(learned, 8, 0.5).model // { fixedMs: 5, perItemMs: 0.6 }
 */
export function fittedModel(l: LearnedCapacity, minPoints: number, minR2: number): FittedModel {
  const n = l.xs.length
  if (n === 0) return { model: { fixedMs: 0, perItemMs: 0 }, r2: NaN, points: 0, trusted: false }
  const obs = l.xs.map((x, i) => ({ batchSize: x, serviceMs: l.ys[i]! }))
  const fit = fitBatchServiceTime(obs)
  const meanY = l.ys.reduce((a, b) => a + b, 0) / n
  if (!fit || !(fit.perItemMs >= 0) || !(fit.fixedMs >= 0))
    return { model: { fixedMs: meanY, perItemMs: 0 }, r2: fit?.r2 ?? NaN, points: n, trusted: false }
  const trusted = n >= minPoints && fit.r2 >= minR2
  return { model: { fixedMs: fit.fixedMs, perItemMs: fit.perItemMs }, r2: fit.r2, points: n, trusted }
}

/** The weighted least-squares line of the decode-step sums; null with too few points or a negative part. */
function stepFit(m: LearnedCapacity['stepSums']): BatchServiceModel | null {
  if (m.w < 3) return null
  const sxx = m.xx - (m.x * m.x) / m.w
  if (!(sxx > 1e-9 * m.w)) return null
  const perItemMs = (m.xy - (m.x * m.y) / m.w) / sxx
  const fixedMs = (m.y - perItemMs * m.x) / m.w
  return perItemMs >= 0 && fixedMs >= 0 ? { fixedMs, perItemMs } : null
}

/** The LLM decode-step model: the fit when it has a non-negative slope, else flat at the mean step. */
export function llmStepModel(l: LearnedCapacity): BatchServiceModel {
  return l.stepModel ?? fittedModel(l, 3, -Infinity).model
}

function stepMs(m: BatchServiceModel, n: number): number {
  return Math.max(0.001, m.fixedMs + m.perItemMs * n)
}

function firstTokenMs(m: BatchServiceModel, n: number, prefillMs: number, share: number): number {
  // Wait for the step in flight (half on average, a whole one in the tail), then the step with the prefill.
  return (2 * stepMs(m, n) + 2 * prefillMs) / (1 - share)
}

/** A latency prediction at a replica count. */
export interface Prediction {
  /** The objective's latency at its percentile, ms (Infinity when the load does not fit). */
  readonly valueMs: number
  /** Throughput one replica would carry, req/s. */
  readonly perReplicaRps: number
  /** LLM extras (for reasons and the TPOT/e2e budget). */
  readonly tpotMs?: number
  readonly e2eTailMs?: number
  readonly running?: number
}

/**
 * A number for a reason, `∞` where the load does not fit.
 * @example formatQuantity(1234.5, 0, 'ms') // '1235 ms'
 * @example formatQuantity(Infinity, 1, 's') // '∞ s'
 */
export function formatQuantity(v: number, digits: number, unit: string): string {
  return `${Number.isFinite(v) ? v.toFixed(digits) : '∞'} ${unit}`
}

/**
 * The LLM extras of a prediction for a reason ('' for a batch fleet's).
 * @example describeLlmPrediction({ valueMs: 900, perReplicaRps: 4, tpotMs: 40, e2eTailMs: 12_000, running: 16 })
 * // '; TPOT 40.0 ms, e2e tail 12.0 s, 16.0 running/replica'
 */
export function describeLlmPrediction(p: Prediction): string {
  if (p.tpotMs === undefined) return ''
  return `; TPOT ${formatQuantity(p.tpotMs, 1, 'ms')}, e2e tail ${formatQuantity((p.e2eTailMs ?? 0) / 1000, 1, 's')}, ${(p.running ?? 0).toFixed(1)} running/replica`
}

/** Batching setpoints a prediction assumes. */
export interface BatchingAssumption {
  readonly windowMs: number
  readonly maxBatch: number
}

/**
 * Predicted latency percentile of a greedy windowed batcher at `replicas` and `rps`. A free replica takes
 * every queued request up to the max batch, so under load batches grow to what arrives during one service,
 * b = λ·S(b) (λ per replica), which keeps the queue short until b reaches the max batch. The percentile is the
 * window + the rest of the batch in service + S(B at p)·tail + the wait of an M/M/c queue whose servers drain
 * requests at the full-batch rate S(B)/B each (Erlang C; it only matters near saturation).
 *
 * @example predictBatch({ fixedMs: 5, perItemMs: 0.6 }, 1.2, 3, 2000, { windowMs: 5, maxBatch: 16 }, 0.99).valueMs
 */
export function predictBatch(
  model: BatchServiceModel,
  tail: number,
  replicas: number,
  rps: number,
  batching: BatchingAssumption,
  p: number,
): Prediction {
  const perReplicaRps = rps / replicas
  if (!(rps > 0)) return { valueMs: stepMs(model, 1) * tail, perReplicaRps: 0 }
  const B = Math.max(1, batching.maxBatch)
  const unit = stepMs(model, B) / B
  const rho = (perReplicaRps * unit) / 1000
  if (rho >= 0.97) return { valueMs: Infinity, perReplicaRps }
  const formed = (perReplicaRps * batching.windowMs) / 1000
  const room = 1000 - perReplicaRps * model.perItemMs
  const greedy = room > 0 ? (perReplicaRps * model.fixedMs) / room : B
  const b = clamp(Math.max(formed, greedy), 1, B)
  const bp = clamp(Math.max(b, poissonQuantile(Math.max(formed, greedy), p)), 1, B)
  const busy = Math.min(1, (perReplicaRps * stepMs(model, b)) / (1000 * b))
  const wait = mmcWaitPercentile(replicas, replicas * rho, unit, p)
  return {
    valueMs: batching.windowMs + busy * stepMs(model, b) + stepMs(model, bp) * tail + wait,
    perReplicaRps,
  }
}

/** What the LLM prediction needs besides the learned numbers. */
export interface LlmAssumption {
  /** Max running sequences per replica (the max-batch setpoint). */
  readonly maxRunning: number
  readonly metric: 'e2e' | 'ttft'
  readonly outputTailFactor: number
}

/**
 * Predicted TTFT (or end-to-end) percentile, TPOT and e2e tail of a continuous-batching fleet at `replicas`
 * and `rps`, from the learned step model, prefill cost, tokens per request and KV per sequence.
 *
 * @example predictLlm(learned, 2, 5.5, { maxRunning: 64, metric: 'ttft', outputTailFactor: 3 }, 0.99).valueMs
 */
export function predictLlm(
  l: LearnedCapacity,
  replicas: number,
  rps: number,
  a: LlmAssumption,
  p: number,
): Prediction {
  const model = llmStepModel(l)
  const perReplicaRps = rps / replicas
  const prefill = l.prefillMs ?? 0
  const out = l.outputTokens ?? 1
  const share = (perReplicaRps * prefill) / 1000
  if (share >= 0.9) return { valueMs: Infinity, perReplicaRps }
  const kvSlots = l.kvPerSeq !== null && l.kvPerSeq > 0 ? Math.floor(0.95 / l.kvPerSeq) : Infinity
  const slots = Math.max(1, Math.min(a.maxRunning, kvSlots))
  const tpotAt = (n: number) => (stepMs(model, n) / (1 - share)) * l.tpotCorrection
  // Little's law fixed point: running = rate · time in service, which itself grows with running.
  let n = 1
  for (let i = 0; i < 30; i++) {
    const d = (prefill + out * tpotAt(Math.min(n, slots))) / 1000
    const next = perReplicaRps * d
    if (Math.abs(next - n) < 1e-3) {
      n = next
      break
    }
    n = next
  }
  const running = Math.min(n, slots)
  const tpotMs = tpotAt(running)
  const serviceMs = prefill + out * tpotMs
  const servers = replicas * slots
  const offered = (rps * serviceMs) / 1000
  const wait = offered >= servers ? Infinity : mmcWaitPercentile(servers, offered, serviceMs, p)
  const ttft = wait + firstTokenMs(model, running, prefill, share) * l.ttftCorrection
  const e2eTailMs = ttft + a.outputTailFactor * out * tpotMs
  const valueMs = a.metric === 'ttft' ? ttft : e2eTailMs
  return { valueMs, perReplicaRps, tpotMs, e2eTailMs, running }
}

/**
 * Fewest replicas in [1, max] whose prediction meets `ok`, by doubling then bisection (more replicas never
 * predict worse); `below` is the prediction at one fewer. When none does, `fits` is false, `replicas` is
 * `max + 1` (the caller caps it) and `prediction` the one at `max`.
 *
 * @example fewestReplicas((r) => predictBatch(m, 1.2, r, 5000, b, 0.99), (p) => p.valueMs <= 50, 64)
 */
export function fewestReplicas(
  predict: (replicas: number) => Prediction,
  ok: (p: Prediction, replicas: number) => boolean,
  max: number,
): { replicas: number; fits: boolean; prediction: Prediction; below?: Prediction } {
  const tried = new Map<number, Prediction>()
  const at = (r: number) => {
    let p = tried.get(r)
    if (!p) {
      p = predict(r)
      tried.set(r, p)
    }
    return p
  }
  let lo = 0
  let hi = 1
  while (!ok(at(hi), hi)) {
    lo = hi
    if (hi >= max) return { replicas: max + 1, fits: false, prediction: at(max) }
    hi = Math.min(max, hi * 2)
  }
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1
    if (ok(at(mid), mid)) hi = mid
    else lo = mid
  }
  return { replicas: hi, fits: true, prediction: at(hi), ...(hi > 1 ? { below: at(hi - 1) } : {}) }
}

/**
 * Highest arrival rate `replicas` replicas carry while the prediction meets `ok` (bisection), req/s.
 *
 * @example capacityRps((rps) => predictBatch(m, 1.2, 4, rps, b, 0.99), (p) => p.valueMs <= 50, 100_000)
 */
export function capacityRps(
  predictAt: (rps: number) => Prediction,
  ok: (p: Prediction) => boolean,
  upper: number,
): number {
  if (!ok(predictAt(1e-6))) return 0
  let lo = 0
  let hi = Math.max(1, upper)
  while (ok(predictAt(hi)) && hi < 1e9) {
    lo = hi
    hi *= 2
  }
  // 1% is as precise as a capacity needs to be.
  while (hi - lo > 0.01 * hi) {
    const mid = (lo + hi) / 2
    if (ok(predictAt(mid))) lo = mid
    else hi = mid
  }
  return lo
}

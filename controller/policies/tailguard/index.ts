/**
 * The `tailguard` policy: one SLO- and budget-aware loop over replicas, batching window and admission.
 * Pure: a function of the observation and its own state, no clock or I/O, so the simulator and the live
 * controller run the same code.
 */
import type { Action, FleetObservation, Policy, Setpoints } from '../../policy.js'
import { chooseAdmission } from './admission.js'
import type { ClassCaps } from './admission.js'
import { batchingFor, chooseBatching } from './batching.js'
import {
  capacityRps,
  describeLlmPrediction,
  fewestReplicas,
  fittedModel,
  formatQuantity,
  learnCapacity,
  llmStepModel,
  NOTHING_LEARNED,
  perBusyReplica,
  predictBatch,
  predictLlm,
} from './capacity.js'
import type { FittedModel, LearnedCapacity, Prediction } from './capacity.js'
import { forecastArrivals, TREND_WINDOW_MS } from './forecast.js'
import type { ArrivalForecast, RatePoint } from './forecast.js'
import { checkObservation, longRate, shortRate, smallestWindow } from './observation.js'
import { resolveTailguardOptions } from './options.js'
import type { ResolvedTailguardOptions, TailguardOptions } from './options.js'

/** The policy's own state between steps (plain data: it can be logged or persisted). */
export interface TailguardState {
  readonly desired: number
  readonly windowMs: number
  readonly maxBatch: number
  readonly classes: number
  /** Admission caps last sent, or null before the first. */
  readonly caps: readonly ClassCaps[] | null
  readonly lowerShare: number
  readonly learned: LearnedCapacity
  /** Replica kind, once known. */
  readonly llm: boolean | null
  readonly rates: readonly RatePoint[]
  /** Recent needs (for slow scale-down: never below what the look-back window needed). */
  readonly needs: ReadonlyArray<{ readonly atMs: number; readonly replicas: number }>
  readonly lastScaleMs: number
  readonly lastBatchingMs: number
  /** Error-budget burn rate, smoothed over about a minute. */
  readonly burn: number
  readonly lastLongRps: number
  /**
   * Completions per second per ready replica measured while a backlog waited (what a replica really carries),
   * raised by any higher throughput seen since; null until a saturated interval has been seen.
   */
  readonly servedCeiling: number | null
  /** When the lower classes' share last doubled back (relaxing waits for a fresh observation window). */
  readonly lastRelaxMs: number
  /** Recent queue depths (for its growth rate: arrivals counted at completion lag behind a growing queue). */
  readonly queueSeen: ReadonlyArray<{ readonly atMs: number; readonly depth: number }>
  /**
   * Rates before this time stay out of the trend (null before the first step): the long window fills during the
   * first minute of a run, and a burst ramps it for a minute after; both look like a trend and are not one.
   */
  readonly trendFromMs: number | null
  /**
   * The surge under way (a burst of at least 2× the long window): when it began and the long-window rate it rose
   * from (null: none); and when the recent surges that were over within a cold start began.
   */
  readonly surge: {
    readonly fromMs: number
    readonly baseRps: number
    readonly underFromMs: number | null
  } | null
  readonly surges: readonly number[]
  /** Why the policy is holding, and since when (null when acting). */
  readonly holding: string | null
  readonly holdingSinceMs: number
}

/** Batching changes at most this often, ms. */
const BATCHING_EVERY_MS = 5000
/** The long (60 s) window: how long a burst, or the start of a run, distorts it. */
const LONG_WINDOW_MS = 60_000
/** A burst of at least this factor over the long window is a surge; it is over below {@link BURST_RATIO}×. */
const SURGE_FACTOR = 2
const BURST_RATIO = 1.5
/** A cut needs one fewer replica to carry at least this much more than the higher of forecast and 10 s rate. */
const CUT_MARGIN = 0.25
/** The short (10 s) window, ms. */
const SHORT_WINDOW_MS = 10_000
/**
 * How long a surge that was over within a cold start is remembered: the fleet keeps the capacity the highest
 * need of this time asked for. Replicas ordered for such a surge are ready after it is gone; where surges recur
 * (MMPP, bursty traffic), keeping them for the next one is what pays. A surge that outlasts the cold start is a
 * new level (a step), which the ordinary sizing follows.
 */
const SURGE_MEMORY_MS = 600_000

/**
 * The tailguard policy. Replicas: learns per-replica capacity online (S(B) fits, LLM decode throughput against
 * running sequences and KV), forecasts arrivals over the cold-start horizon, and keeps the fewest replicas whose
 * predicted percentile at the forecast (plus headroom, widened while the error budget burns) meets the
 * objective; scales up at once, down one at a time and never below what the look-back window needed; warm
 * minimum; N+1 as a survival check. Batching: window and max batch from the S(B) fit, AIMD when the fit is
 * poor. Admission: Little's-law caps per class, lower classes tightened first while the predicted wait exceeds
 * the queue's budget, queue timeouts at the deadline. Holds (and says why) on stale, invalid or missing data.
 *
 * @example
 * ```ts
 * const p = tailguardPolicy({ sloMs: 2000, metric: 'ttft', coldStartMs: 90_000 })
 * let state = p.init(setpoints)
 * const { state: next, actions } = p.step(state, observation, now)
 * ```
 */
export function tailguardPolicy(options: TailguardOptions = {}): Policy<TailguardState> {
  const o = resolveTailguardOptions(options)
  return {
    name: 'tailguard',
    init: (initial) => initState(initial),
    step: (state, obs, now) => step(o, state, obs, now),
  }
}

function initState(initial: Setpoints): TailguardState {
  return {
    desired: initial.desiredReplicas,
    windowMs: initial.batchWindowMs,
    maxBatch: initial.maxBatch,
    classes: Math.max(1, initial.admission.length),
    caps: null,
    lowerShare: 1,
    learned: NOTHING_LEARNED,
    llm: null,
    rates: [],
    needs: [],
    lastScaleMs: -Infinity,
    lastBatchingMs: -Infinity,
    burn: 0,
    lastLongRps: 0,
    servedCeiling: null,
    queueSeen: [],
    lastRelaxMs: -Infinity,
    trendFromMs: null,
    surge: null,
    surges: [],
    holding: null,
    holdingSinceMs: 0,
  }
}

/**
 * The throughput ceiling per replica: completions per second per ready replica while requests waited (a
 * backlog at the end of the interval and on average through it) and the admission caps were relaxed is what a
 * replica carries, whatever the model says; a higher throughput than the ceiling raises it at any time.
 */
function servedCeiling(prev: number | null, obs: FleetObservation, capsBind: boolean): number | null {
  const ready = Math.max(1, obs.replicas.ready)
  const perReplica = obs.completed / (obs.intervalMs / 1000) / ready
  if (!(perReplica > 0)) return prev
  const meanInSystem = smallestWindow(obs.concurrency) ?? 0
  // While the policy's own caps bind, a queue waits in front of them, not in front of busy replicas: what
  // completes then is what the caps let through, and taking it for the ceiling would tighten the caps further.
  const saturated = !capsBind && obs.queueDepth > 0 && meanInSystem > obs.inFlight
  if (saturated) return prev === null ? perReplica : prev + 0.5 * (perReplica - prev)
  return prev !== null && perReplica > prev ? perReplica : prev
}

function step(
  o: ResolvedTailguardOptions,
  state: TailguardState,
  obs: FleetObservation,
  now: number,
): { state: TailguardState; actions: readonly Action[] } {
  const minReplicas = Math.max(1, o.minReplicas)
  const check = checkObservation(obs, state.lastLongRps)
  if (!check.ok) {
    // Missing data that lasts longer than the look-back window is the traffic really stopping.
    const realStop =
      check.reason.startsWith('no data') &&
      state.holding !== null &&
      state.holding.startsWith('no data') &&
      now - state.holdingSinceMs >= o.scaleDownAfterMs
    if (!realStop) return hold(state, check.reason, now)
  }
  // The replica kind is decided by the first observation that carries latency data, never by an empty one
  // (the first interval of a live target often has none yet). LLM: tokens (the server's counters, or output
  // tokens the proxy counted), TPOT, or a TTFT from spans. Where a proxy reports (its in-flight gauge), a TTFT
  // alone is not enough: it times the first body chunk of every response, a non-streaming batch server's too.
  const lat = obs.latencyMs
  const detected =
    obs.llm !== undefined || lat.tpot.count > 0 || (lat.ttft.count > 0 && obs.inFlightMean === undefined)
      ? true
      : lat.e2e.count > 0 || lat.service.count > 0 || lat.ttft.count > 0
        ? false
        : null
  const kind = o.model !== undefined ? o.model === 'llm' : (state.llm ?? detected)
  const llm = kind ?? false
  // Batch replicas: the service tail is taken against the S(B) fit so far, once it is trusted.
  const before = llm ? null : fittedModel(state.learned, o.minFitPoints, o.minFitR2)
  const learned = learnCapacity(state.learned, obs, llm, {
    ...(before?.trusted ? { batchModel: before.model } : {}),
    workloadMemoryMs: o.coldStartMs,
  })
  const alpha = Math.min(1, obs.intervalMs / 60_000)
  const burn = state.burn + alpha * (obs.errorBudget.burnRate - state.burn)
  const { headroom, budgetWhy } = headroomFor(o, burn, obs.errorBudget.remaining)
  const rates = [
    ...state.rates.filter((r) => now - r.atMs < TREND_WINDOW_MS),
    { atMs: now, rps: longRate(obs) },
  ]
  const trendFromMs = state.trendFromMs ?? now + LONG_WINDOW_MS
  const forecast: ArrivalForecast = o.features.forecast
    ? forecastArrivals(
        obs.arrivalRps,
        rates.filter((r) => r.atMs >= trendFromMs),
        o.coldStartMs,
      )
    : {
        rps: shortRate(obs),
        shortRps: shortRate(obs),
        longRps: longRate(obs),
        trendRpsPerMin: 0,
        burst: 1,
        horizonMs: 0,
      }
  // A backlog must drain as well: add what clears it over the forecast horizon (at least 30 s).
  const backlogRps = obs.queueDepth / Math.max(30, o.coldStartMs / 1000)
  const target = (forecast.rps + backlogRps) * (1 + headroom)
  const ceiling = servedCeiling(state.servedCeiling, obs, state.lowerShare < 1)
  // The queue's growth over at least 3 s (shorter spans are noise): under overload, requests that wait are
  // in no count yet, so counts alone see the overload one observation window late.
  const queueSeen = [
    ...state.queueSeen.filter((q) => now - q.atMs <= 10_000),
    { atMs: now, depth: obs.queueDepth },
  ]
  const oldest = queueSeen[0]!
  const queueGrowthRps =
    now - oldest.atMs >= 3000
      ? Math.max(0, (obs.queueDepth - oldest.depth) / ((now - oldest.atMs) / 1000))
      : 0
  const bursting = forecast.burst > 1
  const surges = state.surges.filter((t) => now - t < SURGE_MEMORY_MS)
  let surge = state.surge
  if (surge === null) {
    if (forecast.burst >= SURGE_FACTOR) surge = { fromMs: now, baseRps: forecast.longRps, underFromMs: null }
  } else if (forecast.shortRps < BURST_RATIO * surge.baseRps) {
    // Over once the 10 s rate has stayed back under 1.5× the rate it rose from for a whole 10 s window (a lull
    // of a few seconds at a new level is noise). Over within a cold start, it is one to remember.
    const under = surge.underFromMs ?? now
    if (now - under < SHORT_WINDOW_MS) surge = { ...surge, underFromMs: under }
    else {
      if (under - surge.fromMs <= o.coldStartMs) surges.push(surge.fromMs)
      surge = null
    }
  } else if (now - surge.fromMs > o.coldStartMs) surge = null
  else if (surge.underFromMs !== null) surge = { ...surge, underFromMs: null }
  const base: TailguardState = {
    ...state,
    trendFromMs: bursting ? now + LONG_WINDOW_MS : trendFromMs,
    surge,
    surges,
    llm: kind,
    learned,
    burn,
    rates,
    lastLongRps: longRate(obs),
    servedCeiling: ceiling,
    queueSeen,
    holding: null,
  }
  const actions: Action[] = []
  if (state.holding !== null)
    actions.push({
      kind: 'scale',
      desiredReplicas: state.desired,
      reason: `tailguard resumes after ${((now - state.holdingSinceMs) / 1000).toFixed(0)} s holding (${state.holding})`,
    })
  const ready = learned.samples >= o.minFitPoints && learned.xs.length > 0
  if (!ready)
    return {
      state: base,
      actions: [
        ...actions,
        ...(state.learned.samples === 0
          ? [
              {
                kind: 'scale' as const,
                desiredReplicas: state.desired,
                reason: `tailguard learning capacity (${learned.samples} of ${o.minFitPoints} intervals with service data${llm ? '' : ' or response times'}): holding ${state.desired} replicas`,
              },
            ]
          : []),
      ],
    }
  const fit = fittedModel(learned, o.minFitPoints, o.minFitR2)
  const predict = predictor(o, state, llm, learned, fit)
  // Replicas.
  const maxR = o.maxReplicas
  const need = fewestReplicas((r) => predict(r, target), meets(o, llm, predict, target), maxR)
  let replicas = Math.min(maxR, need.replicas)
  let n1Why = ''
  if (o.nPlusOne) {
    const bareRps = forecast.rps + backlogRps
    const bare = fewestReplicas((r) => predict(r, bareRps), meets(o, llm, predict, bareRps), maxR)
    if (bare.replicas + 1 > replicas) {
      replicas = Math.min(maxR, bare.replicas + 1)
      n1Why = ` (+1 N+1: ${bare.replicas} carry the forecast without headroom)`
    } else n1Why = ` (N+1: survives losing one, ${bare.replicas} carry the forecast)`
  }
  replicas = Math.max(minReplicas, replicas)
  // A recent surge that was over within a cold start stretches the look-back to the surge memory.
  const recurring = surges.length >= 1
  const lookBackMs = recurring ? Math.max(o.scaleDownAfterMs, SURGE_MEMORY_MS) : o.scaleDownAfterMs
  const kept = state.needs.filter((n) => now - n.atMs < Math.max(o.scaleDownAfterMs, SURGE_MEMORY_MS))
  const needs = [...kept, { atMs: now, replicas }]
  let desired = state.desired
  let lastScaleMs = state.lastScaleMs
  const have = state.desired
  const metricName = llm && o.metric === 'ttft' ? 'ttft' : 'e2e'
  const perReplica = capacityRps(
    (rps) => predict(replicas, rps * replicas),
    (p) => p.valueMs <= o.sloMs,
    Math.max(1, target / replicas),
  )
  const pv = need.prediction.valueMs
  const why =
    `forecast ${forecast.rps.toFixed(1)} req/s in ${(forecast.horizonMs / 1000).toFixed(0)} s ` +
    `(now ${forecast.shortRps.toFixed(1)}, 60 s ${forecast.longRps.toFixed(1)}, trend ${signed(forecast.trendRpsPerMin)} req/s/min` +
    `${forecast.burst > 1 ? `, burst ×${forecast.burst.toFixed(1)}` : ''}${backlogRps > 0 ? `, backlog ${obs.queueDepth}` : ''}), ` +
    `headroom ${(headroom * 100).toFixed(0)}%${budgetWhy}, capacity ${perReplica.toFixed(1)} req/s/replica${learned.basis === 'responses' ? ' (from response times)' : ''} at ${metricName} p${o.percentile * 100} ≤ ${o.sloMs} ms ` +
    (need.fits
      ? `(predicted ${fmtMs(pv)}${describeLlmPrediction(need.prediction)}${need.below ? `; ${need.replicas - 1} would give ${fmtMs(need.below.valueMs)}` : ''}), `
      : `(even the maximum of ${maxR} would give ${fmtMs(pv)}${describeLlmPrediction(need.prediction)}), `) +
    `need ${replicas}${n1Why}, have ${have}`
  if (replicas > desired) {
    desired = replicas
    lastScaleMs = now
    actions.push({ kind: 'scale', desiredReplicas: desired, reason: `tailguard up: ${why}` })
  } else if (replicas < desired) {
    const floor = needs.reduce(
      (m, n) => (now - n.atMs < lookBackMs ? Math.max(m, n.replicas) : m),
      minReplicas,
    )
    // With less than half a look-back window of history (just started), the window cannot vouch for a cut.
    const seen = now - (needs[0]?.atMs ?? now) >= o.scaleDownAfterMs / 2
    // And one fewer must carry the forecast or the 10 s rate, whichever is higher, with twice the headroom and at
    // least 25% more: near a replica's limit the prediction turns from fine to ∞ within a few percent of load (and
    // of the learned tokens per request), and a cut there (or one sized on the 60 s window as the rate turns up) is
    // undone seconds later, at the price of a cold start (seen at the Azure trace's peak: down, up 8 s later).
    const cutRps =
      (Math.max(forecast.rps, forecast.shortRps) + backlogRps) * (1 + Math.max(2 * headroom, CUT_MARGIN))
    const carries = () => meets(o, llm, predict, cutRps)(predict(desired - 1, cutRps), desired - 1)
    if (seen && floor < desired && now - lastScaleMs >= o.scaleDownStepMs && carries()) {
      desired = desired - 1
      lastScaleMs = now
      actions.push({
        kind: 'scale',
        desiredReplicas: desired,
        reason: `tailguard down: ${why}; highest need in the last ${(lookBackMs / 1000).toFixed(0)} s ${floor}${recurring ? ` (${surges.length} surges in ${SURGE_MEMORY_MS / 60_000} min)` : ''}, one step at a time`,
      })
    }
  }
  let next: TailguardState = { ...base, desired, lastScaleMs, needs }
  // Batching (batch replicas).
  // Not from response times: those fit what a request sees at the server, not its batches, and a server that
  // reports nothing takes no batching setpoints either.
  const batches = !llm && learned.basis !== 'responses'
  if (o.features.batching && batches && now - state.lastBatchingMs >= BATCHING_EVERY_MS) {
    const perReady = shortRate(obs) / Math.max(1, obs.replicas.ready)
    const choice = chooseBatching(
      fit,
      learned.tail,
      perReady,
      o.sloMs,
      o.queueShare,
      { windowMs: state.windowMs, maxBatch: state.maxBatch },
      o.maxBatchCap,
      obs,
    )
    // Hysteresis: small moves of the fit are not worth a setpoint change (and a line in the decision log).
    const changed =
      (choice.mode === 'aimd' && choice.maxBatch !== state.maxBatch) ||
      Math.abs(choice.maxBatch - state.maxBatch) > Math.max(1, 0.1 * state.maxBatch) ||
      Math.abs(choice.windowMs - state.windowMs) > Math.max(0.5, 0.2 * state.windowMs)
    if (changed) {
      actions.push({
        kind: 'batching',
        windowMs: choice.windowMs,
        maxBatch: choice.maxBatch,
        reason: `tailguard ${choice.reason}`,
      })
      next = { ...next, windowMs: choice.windowMs, maxBatch: choice.maxBatch, lastBatchingMs: now }
    }
  }
  // Admission.
  if (o.features.admission) {
    const readyReplicas = Math.max(1, obs.replicas.ready)
    const at = (rps: number) => predict(readyReplicas, rps)
    let capacity = capacityRps(at, (p) => p.valueMs <= o.sloMs, Math.max(1, target))
    // What the ready replicas can serve at all (the prediction stays finite), and the measured ceiling when a
    // backlog has shown it lower: then the model's capacity shrinks by the same factor.
    let throughput = capacityRps(at, (p) => Number.isFinite(p.valueMs), Math.max(1, target))
    let ceilingWhy = ''
    if (ceiling !== null && ceiling * readyReplicas < throughput) {
      const f = (ceiling * readyReplicas) / throughput
      capacity *= f
      throughput = ceiling * readyReplicas
      ceilingWhy = `; measured under backlog ${ceiling.toFixed(1)} req/s/replica, model ×${f.toFixed(2)}`
    }
    const slots = llm ? readyReplicas * llmSlots(learned, next.maxBatch) : readyReplicas * next.maxBatch
    // Batch replicas: a full batch's time; from response times, what a request takes at the batch it shares now
    // (the same measure the fit's points were taken at).
    const serviceMs = llm
      ? firstTokenEstimate(learned)
      : (fit.model.fixedMs + fit.model.perItemMs * (batches ? next.maxBatch : perBusyReplica(obs))) *
        learned.tail
    const queueBudgetMs =
      llm && o.metric === 'ttft' ? Math.max(1, o.sloMs - serviceMs) : o.sloMs * o.queueShare
    const deadlineMs = Math.max(1, o.sloMs - (llm ? 0.5 * serviceMs : serviceMs))
    const seconds = obs.intervalMs / 1000
    const choice = chooseAdmission({
      classes: Math.max(state.classes, obs.queueDepthByClass.length),
      capacityRps: capacity,
      throughputRps: throughput,
      inServiceSlots: slots,
      queueBudgetMs,
      deadlineMs,
      queueDepth: obs.queueDepth,
      queueDepthByClass: obs.queueDepthByClass,
      lowerShare: state.lowerShare,
      offeredRps: (obs.completed + obs.shed) / seconds,
      shedRps: obs.shed / seconds,
      queueGrowthRps,
      horizonMs: obs.intervalMs,
      mayRelax: now - state.lastRelaxMs >= obs.intervalMs,
      note: ceilingWhy,
    })
    const prev = state.caps
    choice.caps.forEach((c, k) => {
      const p = prev?.[k]
      const moved =
        !p ||
        Math.abs(c.maxConcurrency - p.maxConcurrency) > 0.1 * p.maxConcurrency ||
        Math.abs(c.queueTimeoutMs - p.queueTimeoutMs) > 0.1 * p.queueTimeoutMs
      if (moved)
        actions.push({
          kind: 'admission',
          priorityClass: k,
          maxQueue: c.maxQueue,
          maxConcurrency: c.maxConcurrency,
          queueTimeoutMs: c.queueTimeoutMs,
          reason: `tailguard class ${k} ${choice.reason}`,
        })
    })
    const caps = choice.caps.map((c, k) => {
      const p = prev?.[k]
      const sent = actions.some((a) => a.kind === 'admission' && a.priorityClass === k)
      return sent || !p ? c : p
    })
    next = {
      ...next,
      caps,
      lowerShare: choice.lowerShare,
      classes: caps.length,
      lastRelaxMs: choice.lowerShare > state.lowerShare ? now : state.lastRelaxMs,
    }
  }
  return { state: next, actions }
}

function hold(
  state: TailguardState,
  reason: string,
  now: number,
): { state: TailguardState; actions: readonly Action[] } {
  const kind = reason.split(':')[0]!
  const already = state.holding !== null && state.holding.split(':')[0] === kind
  if (already) return { state, actions: [] }
  return {
    state: { ...state, holding: reason, holdingSinceMs: state.holding !== null ? state.holdingSinceMs : now },
    actions: [
      {
        kind: 'scale',
        desiredReplicas: state.desired,
        reason: `tailguard hold: ${reason}; keeping ${state.desired} replicas, batching and admission as they are`,
      },
    ],
  }
}

function headroomFor(
  o: ResolvedTailguardOptions,
  burn: number,
  remaining: number,
): { headroom: number; budgetWhy: string } {
  if (!o.features.budget) return { headroom: o.headroom, budgetWhy: '' }
  if (burn > 1) {
    const h = o.headroom * (1 + Math.min(2, burn - 1))
    return {
      headroom: h,
      budgetWhy: ` (error budget burning ${burn.toFixed(1)}×: +${((h - o.headroom) * 100).toFixed(0)} points)`,
    }
  }
  if (remaining > 0.5 && burn < 0.5) {
    const h = o.headroom * 0.5
    return {
      headroom: h,
      budgetWhy: ` (budget ${(remaining * 100).toFixed(0)}% left, burn ${burn.toFixed(2)}×: leaner by ${((o.headroom - h) * 100).toFixed(0)} points)`,
    }
  }
  return { headroom: o.headroom, budgetWhy: ` (burn ${burn.toFixed(2)}×)` }
}

function predictor(
  o: ResolvedTailguardOptions,
  state: TailguardState,
  llm: boolean,
  learned: LearnedCapacity,
  fit: FittedModel,
): (replicas: number, rps: number) => Prediction {
  if (llm) {
    const a = { maxRunning: state.maxBatch, metric: o.metric, outputTailFactor: o.outputTailFactor }
    return (r, rps) => predictLlm(learned, r, rps, a, o.percentile)
  }
  const budget = o.sloMs * o.queueShare
  return (r, rps) => {
    const batching =
      o.features.batching && fit.trusted && learned.basis !== 'responses'
        ? batchingFor(fit.model, learned.tail, rps / r, budget, o.maxBatchCap)
        : { windowMs: state.windowMs, maxBatch: state.maxBatch }
    return predictBatch(fit.model, learned.tail, r, rps, batching, o.percentile)
  }
}

/**
 * Whether a prediction meets the objective. For LLMs with a TTFT objective the end-to-end and TPOT objectives
 * count too, but only while more replicas would still help them: decode speed has a floor (the step time of a
 * nearly empty replica), and past the point where one more replica improves the tail by under 5% the policy
 * stops buying replicas for it.
 */
function meets(
  o: ResolvedTailguardOptions,
  llm: boolean,
  predict: (replicas: number, rps: number) => Prediction,
  rps: number,
): (p: Prediction, replicas: number) => boolean {
  return (p, r) => {
    if (!(p.valueMs <= o.sloMs)) return false
    if (!llm) return true
    const e2eMiss = o.e2eSloMs !== undefined && !((p.e2eTailMs ?? 0) <= o.e2eSloMs)
    const tpotMiss = o.tpotSloMs !== undefined && !((p.tpotMs ?? 0) <= o.tpotSloMs)
    if (!e2eMiss && !tpotMiss) return true
    const more = predict(r + 1, rps)
    const helps = (a: number | undefined, b: number | undefined) => (a ?? 0) > 1.05 * (b ?? 0)
    return !((e2eMiss && helps(p.e2eTailMs, more.e2eTailMs)) || (tpotMiss && helps(p.tpotMs, more.tpotMs)))
  }
}

function llmSlots(l: LearnedCapacity, maxBatch: number): number {
  const kv = l.kvPerSeq !== null && l.kvPerSeq > 0 ? Math.floor(0.95 / l.kvPerSeq) : Infinity
  return Math.max(1, Math.min(maxBatch, kv))
}

function firstTokenEstimate(l: LearnedCapacity): number {
  const m = llmStepModel(l)
  return (2 * (m.fixedMs + m.perItemMs) + 2 * (l.prefillMs ?? 0)) * l.ttftCorrection
}

function fmtMs(v: number): string {
  return formatQuantity(v, 0, 'ms')
}

function signed(x: number): string {
  return `${x >= 0 ? '+' : ''}${x.toFixed(1)}`
}

export { resolveTailguardOptions, TAILGUARD_DEFAULTS } from './options.js'
export type { TailguardOptions, TailguardFeatures } from './options.js'

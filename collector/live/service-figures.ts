import { mergeBuckets } from '../report/index.js'
import type { Metric } from '../report/index.js'
import { countAtOrBelow } from '../slo/math.js'
import type { SloEngine } from '../slo/engine.js'
import type { EpochMs, GpuInfo, Selector, Store, TimeRange } from '../store/types.js'
import {
  bucketFractionAtOrBelow,
  costPerMillion,
  goodputPerSecond,
  gpuHourPrice,
  joulesPerToken,
} from './figures.js'
import type { GpuPricing, PriceSource } from './figures.js'

/** A latency SLO as the goodput figure uses it: which requests it covers and its threshold. */
export interface LatencyThreshold {
  readonly name: string
  readonly selector: { readonly service?: string; readonly model?: string; readonly version?: string }
  readonly metric: Metric
  readonly thresholdMs: number
}

/** One derived figure: its value (null when it cannot be computed, with the reason) and the inputs it used. */
export interface Figure<I> {
  readonly value: number | null
  readonly unit: string
  readonly inputs: I
  readonly reason?: string
}

/** The GPUs a service's replicas hold, as the cost and energy figures count them. */
export interface HeldGpu {
  readonly node: string
  readonly uuid: string
  readonly migGpuInstanceId: number | null
  readonly name: string | null
  readonly usdPerHour: number | null
  readonly priceFrom: PriceSource | null
}

/** Every live figure of one service (optionally one model/version of it) over a window. */
export interface ServiceFigures {
  readonly service: string
  readonly model: string | null
  readonly version: string | null
  readonly windowSeconds: number
  readonly throughput: Figure<{ ok: number; error: number; shed: number; windowSeconds: number }>
  readonly goodput: Figure<{
    okPerSecond: number
    slos: Array<{
      name: string
      metric: Metric
      thresholdMs: number
      goodFraction: number | null
      precision: 'hdr' | 'buckets' | null
    }>
  }>
  readonly inputTokensPerSecond: Figure<{ tokens: number; windowSeconds: number; from: string }>
  readonly outputTokensPerSecond: Figure<{ tokens: number; windowSeconds: number; from: string }>
  readonly costPerMillionRequests: Figure<{
    usdPerHour: number | null
    gpus: HeldGpu[]
    requestsPerSecond: number
  }>
  readonly costPerMillionOutputTokens: Figure<{
    usdPerHour: number | null
    gpus: HeldGpu[]
    outputTokensPerSecond: number | null
  }>
  readonly energyPerOutputToken: Figure<{
    watts: number | null
    from: 'energy counter' | 'power' | null
    gpus: number
    outputTokensPerSecond: number | null
  }>
}

/**
 * The latency SLOs of an SLO engine as goodput uses them (availability SLOs have no threshold and are left out).
 *
 * @example latencyThresholds(engine) // [{ name: 'chat-latency', selector: { service: 'chat' }, metric: 'total', thresholdMs: 450 }]
 */
export function latencyThresholds(engine: Pick<SloEngine, 'list'>): LatencyThreshold[] {
  return engine.list().flatMap(({ slo }) =>
    slo.sli.kind === 'latency'
      ? [
          {
            name: slo.name,
            selector: slo.selector,
            metric: slo.sli.metric,
            thresholdMs: slo.sli.thresholdMs,
          },
        ]
      : [],
  )
}

/**
 * True when a latency SLO's selector covers the selected series (an SLO without a model covers every model).
 *
 * @example sloCovers({ service: 'chat' }, { service: 'chat', model: 'llama' }) // true
 */
export const sloCovers = (slo: LatencyThreshold['selector'], sel: Selector): boolean =>
  (slo.service === undefined || slo.service === sel.service) &&
  (slo.model === undefined || sel.model === undefined || slo.model === sel.model) &&
  (slo.version === undefined || sel.version === undefined || slo.version === sel.version)

/**
 * The GPUs (whole GPUs or MIG instances) where a process of the selected replicas ran in the newest report, priced.
 *
 * @example heldGpus(await store.gpus(), { service: "chat" }, pricing) // [{ node, uuid, usdPerHour: 4, priceFrom: "gpuModel", … }]
 */
export function heldGpus(gpus: readonly GpuInfo[], sel: Selector, pricing: GpuPricing): HeldGpu[] {
  const out = new Map<string, HeldGpu>()
  for (const g of gpus)
    for (const p of g.processes) {
      const r = p.replica
      if (r === null || r.service !== sel.service) continue
      if (sel.model !== undefined && r.model !== sel.model) continue
      if (sel.version !== undefined && r.version !== sel.version) continue
      const key = `${g.node}\u0000${g.uuid}\u0000${g.mig?.gpuInstanceId ?? ''}`
      if (out.has(key)) continue
      const price = gpuHourPrice(pricing, g.node, g.name)
      out.set(key, {
        node: g.node,
        uuid: g.uuid,
        migGpuInstanceId: g.mig?.gpuInstanceId ?? null,
        name: g.name,
        usdPerHour: price?.usd ?? null,
        priceFrom: price?.from ?? null,
      })
    }
  return [...out.values()]
}

/**
 * What the held GPUs cost per hour together: null with the reason when none is held or some has no price.
 *
 * @example hourlyPrice([{ usdPerHour: 4, … }, { usdPerHour: 2.5, … }]) // { usdPerHour: 6.5 }
 */
export function hourlyPrice(held: readonly HeldGpu[]): { usdPerHour: number | null; reason?: string } {
  if (held.length === 0)
    return { usdPerHour: null, reason: 'no GPU process attributed to this service (agent.replicas)' }
  if (!held.every((g) => g.usdPerHour !== null))
    return { usdPerHour: null, reason: 'no price for some GPUs (collector.pricing)' }
  return { usdPerHour: held.reduce((a, g) => a + g.usdPerHour!, 0) }
}

/**
 * Computes a service's live figures over `range` from the store: throughput and goodput (against the latency SLOs
 * that cover it, from HDR histograms or else imported buckets), tokens per second in and out (live signals, else
 * the spans' output tokens), cost per million requests and output tokens (from the GPUs its replicas hold and their
 * prices), and energy per output token (GPU energy counters, else mean power). Each figure carries its inputs.
 *
 * @example const f = await serviceFigures(store, { service: 'chat' }, { fromMs: now - 300_000, toMs: now }, pricing, slos, now)
 */
export async function serviceFigures(
  store: Store,
  sel: Selector & { readonly service: string },
  range: TimeRange,
  pricing: GpuPricing,
  slos: readonly LatencyThreshold[],
  nowMs: EpochMs,
): Promise<ServiceFigures> {
  const windowSeconds = (range.toMs - range.fromMs) / 1000
  const stepMs = Math.max(10_000, range.toMs - range.fromMs)
  const [counts, signals, gpus] = await Promise.all([
    store.counts(sel, range),
    store.signals(sel, range, stepMs),
    store.gpus(nowMs),
  ])
  const requestsPerSecond = (counts.ok + counts.error) / windowSeconds
  const throughput = {
    value: requestsPerSecond,
    unit: 'requests/s',
    inputs: { ok: counts.ok, error: counts.error, shed: counts.shed, windowSeconds },
  }

  const mine = slos.filter((s) => sloCovers(s.selector, sel))
  const sloInputs: ServiceFigures['goodput']['inputs']['slos'] = []
  for (const s of mine) {
    const h = (await store.histograms(sel, range, [s.metric])).get(s.metric)
    if (h !== undefined && h.totalCount > 0) {
      sloInputs.push({
        name: s.name,
        metric: s.metric,
        thresholdMs: s.thresholdMs,
        goodFraction: countAtOrBelow(h, Math.round(s.thresholdMs * 1000)) / h.totalCount,
        precision: 'hdr',
      })
      continue
    }
    const merged = mergeBuckets(
      signals.flatMap((x) => {
        const t = x.histograms[s.metric]?.total
        return t && t.boundsMs.length > 0 ? [t] : []
      }),
    )
    const fraction = merged ? bucketFractionAtOrBelow(merged.boundsMs, merged.counts, s.thresholdMs) : null
    sloInputs.push({
      name: s.name,
      metric: s.metric,
      thresholdMs: s.thresholdMs,
      goodFraction: fraction,
      precision: fraction === null ? null : 'buckets',
    })
  }
  const okPerSecond = counts.ok / windowSeconds
  const known = sloInputs.flatMap((s) => (s.goodFraction === null ? [] : [s.goodFraction]))
  const goodput: ServiceFigures['goodput'] =
    mine.length === 0
      ? {
          value: null,
          unit: 'requests/s',
          inputs: { okPerSecond, slos: [] },
          reason: 'no latency SLO covers this service',
        }
      : known.length === 0
        ? {
            value: null,
            unit: 'requests/s',
            inputs: { okPerSecond, slos: sloInputs },
            reason: 'no latencies in the window',
          }
        : {
            value: goodputPerSecond(okPerSecond, known),
            unit: 'requests/s',
            inputs: { okPerSecond, slos: sloInputs },
          }

  let inTokens = 0
  let outTokens = 0
  for (const x of signals)
    for (const p of x.points) {
      inTokens += p.counters.inputTokens ?? 0
      outTokens += p.counters.outputTokens ?? 0
    }
  const outFrom = outTokens > 0 ? 'live signals (outputTokens)' : 'request spans (outputTokens)'
  if (outTokens === 0) outTokens = counts.outputTokens
  const tokens = (n: number, from: string) => ({
    value: n / windowSeconds,
    unit: 'tokens/s',
    inputs: { tokens: n, windowSeconds, from },
  })
  const outputTokensPerSecond = outTokens / windowSeconds

  const held = heldGpus(gpus, sel, pricing)
  const { usdPerHour, reason: costReason } = hourlyPrice(held)
  const cost = (perSecond: number) => (usdPerHour === null ? null : costPerMillion(usdPerHour, 1, perSecond))
  const costPerMillionRequests = {
    value: cost(requestsPerSecond),
    unit: 'USD',
    inputs: { usdPerHour, gpus: held, requestsPerSecond },
    ...(costReason
      ? { reason: costReason }
      : requestsPerSecond > 0
        ? {}
        : { reason: 'no requests in the window' }),
  }
  const costPerMillionOutputTokens = {
    value: cost(outputTokensPerSecond),
    unit: 'USD',
    inputs: { usdPerHour, gpus: held, outputTokensPerSecond },
    ...(costReason
      ? { reason: costReason }
      : outputTokensPerSecond > 0
        ? {}
        : { reason: 'no output tokens in the window' }),
  }

  // Energy: the increase of each held GPU's energy counter (mJ) over the window, else its mean power.
  let watts: number | null = null
  let energyFrom: 'energy counter' | 'power' | null = null
  if (held.length > 0) {
    const keys = new Set(held.map((g) => `${g.node}\u0000${g.uuid}\u0000${g.migGpuInstanceId ?? ''}`))
    const pick = <T extends { node: string; uuid: string; mig: { gpuInstanceId: number } | null }>(
      xs: readonly T[],
    ) => xs.filter((x) => keys.has(`${x.node}\u0000${x.uuid}\u0000${x.mig?.gpuInstanceId ?? ''}`))
    const energy = pick(await store.gpuSeries({}, range, 'energyMj', stepMs))
    const joules = energy.map((g) => {
      const lo = Math.min(...g.points.map((p) => p.min))
      const hi = Math.max(...g.points.map((p) => p.max))
      return (hi - lo) / 1000
    })
    if (energy.length === held.length && joules.every((j) => j > 0)) {
      watts = joules.reduce((a, b) => a + b, 0) / windowSeconds
      energyFrom = 'energy counter'
    } else {
      const power = pick(await store.gpuSeries({}, range, 'powerW', stepMs))
      if (power.length > 0) {
        watts = power.reduce((a, g) => a + g.points.reduce((s, p) => s + p.mean, 0) / g.points.length, 0)
        energyFrom = 'power'
      }
    }
  }
  const energyPerOutputToken = {
    value: watts === null ? null : joulesPerToken(watts, outputTokensPerSecond),
    unit: 'J/token',
    inputs: {
      watts,
      from: energyFrom,
      gpus: held.length,
      outputTokensPerSecond: outTokens > 0 ? outputTokensPerSecond : null,
    },
    ...(held.length === 0
      ? { reason: 'no GPU process attributed to this service (agent.replicas)' }
      : watts === null
        ? { reason: 'no GPU energy or power readings in the window' }
        : outputTokensPerSecond > 0
          ? {}
          : { reason: 'no output tokens in the window' }),
  }

  return {
    service: sel.service,
    model: sel.model ?? null,
    version: sel.version ?? null,
    windowSeconds,
    throughput,
    goodput,
    inputTokensPerSecond: tokens(inTokens, 'live signals (inputTokens)'),
    outputTokensPerSecond: tokens(outTokens, outFrom),
    costPerMillionRequests,
    costPerMillionOutputTokens,
    energyPerOutputToken,
  }
}

import { Rng } from './rng.js'
import type { Trace, TraceRow } from './trace.js'
import { TraceFileReader } from './trace-file.js'
import type { TraceFileStats } from './trace-file.js'

/** One arrival, written into a reused object (no allocation per request). */
export interface ArrivalDraft {
  timeMs: number
  inputTokens: number
  outputTokens: number
}

/** A stream of arrivals in time order. */
export interface ArrivalSource {
  /** Fills `out` with the next arrival and returns true, or returns false when the stream is over. */
  next(out: ArrivalDraft): boolean
  /** Expected number of arrivals (for progress), if known. */
  readonly expectedCount: number
}

/** Token counts for synthetic requests (exponentially distributed around these means, at least 1). */
export interface TokenShape {
  readonly meanInputTokens: number
  readonly meanOutputTokens: number
}

/** How a synthetic or trace workload produces arrivals. Every synthetic pattern is seeded by the simulation seed. */
export type ArrivalSpec =
  | { readonly kind: 'trace'; readonly trace: Trace; readonly timeScale?: number }
  | {
      /** A trace file streamed from disk on every run (constant memory); `stats` from `scanTraceFile`. */
      readonly kind: 'trace-file'
      readonly path: string
      readonly stats: TraceFileStats
      readonly timeScale?: number
    }
  | ({ readonly kind: 'poisson'; readonly rps: number } & Limits)
  | ({
      readonly kind: 'mmpp'
      /** Rates of the two states (req/s) and mean dwell time in each (ms). */
      readonly rps: readonly [number, number]
      readonly meanDwellMs: readonly [number, number]
    } & Limits)
  | ({
      readonly kind: 'diurnal'
      /** rate(t) = meanRps · (1 + amplitude · sin(2πt/period − π/2)): starts at the trough. */
      readonly meanRps: number
      readonly amplitude: number
      readonly periodMs: number
    } & Limits)
  | ({
      readonly kind: 'step'
      /** Piecewise-constant rate: from each `atMs` on, `rps` (the first entry should be at 0). */
      readonly steps: ReadonlyArray<{ readonly atMs: number; readonly rps: number }>
    } & Limits)

interface Limits {
  /** Stop after this long (ms) or this many requests, whichever comes first (at least one must be set). */
  readonly durationMs?: number
  readonly maxRequests?: number
  readonly tokens?: TokenShape
}

const DEFAULT_TOKENS: TokenShape = { meanInputTokens: 1000, meanOutputTokens: 200 }

/**
 * Builds the arrival stream for a spec. Trace time is divided by `timeScale` (2 = replay twice as fast).
 *
 * @example const src = createArrivals({ kind: 'poisson', rps: 100, durationMs: 60_000 }, 42)
 */
export function createArrivals(spec: ArrivalSpec, seed: number): ArrivalSource {
  if (spec.kind === 'trace') return new TraceArrivals(spec.trace, spec.timeScale ?? 1)
  if (spec.kind === 'trace-file') return new TraceFileArrivals(spec.path, spec.stats, spec.timeScale ?? 1)
  const rng = new Rng(seed ^ 0x5eed)
  const tokens = spec.tokens ?? DEFAULT_TOKENS
  const limitMs = spec.durationMs ?? Infinity
  const limitN = spec.maxRequests ?? Infinity
  switch (spec.kind) {
    case 'poisson':
      return new RateArrivals(rng, tokens, limitMs, limitN, estimate(spec.rps, limitMs, limitN), {
        rateAt: () => spec.rps,
        maxRate: () => spec.rps,
      })
    case 'step': {
      const steps = [...spec.steps].sort((a, b) => a.atMs - b.atMs)
      const rateAt = (t: number): number => {
        let r = 0
        for (const s of steps) if (s.atMs <= t) r = s.rps
        return r
      }
      const maxRps = Math.max(...steps.map((s) => s.rps))
      const meanRps = Number.isFinite(limitMs) ? meanStepRate(steps, limitMs) : maxRps
      return new RateArrivals(rng, tokens, limitMs, limitN, estimate(meanRps, limitMs, limitN), {
        rateAt,
        maxRate: () => maxRps,
      })
    }
    case 'diurnal': {
      const max = spec.meanRps * (1 + Math.abs(spec.amplitude))
      return new RateArrivals(rng, tokens, limitMs, limitN, estimate(spec.meanRps, limitMs, limitN), {
        rateAt: (t) =>
          Math.max(
            0,
            spec.meanRps * (1 + spec.amplitude * Math.sin((2 * Math.PI * t) / spec.periodMs - Math.PI / 2)),
          ),
        maxRate: () => max,
      })
    }
    case 'mmpp':
      return new MmppArrivals(rng, tokens, limitMs, limitN, spec.rps, spec.meanDwellMs)
  }
}

function estimate(rps: number, limitMs: number, limitN: number): number {
  return Math.min(limitN, Number.isFinite(limitMs) ? Math.round((rps * limitMs) / 1000) : limitN)
}

function meanStepRate(steps: ReadonlyArray<{ atMs: number; rps: number }>, durationMs: number): number {
  let total = 0
  for (let i = 0; i < steps.length; i++) {
    const from = Math.max(0, steps[i]!.atMs)
    const to = Math.min(durationMs, i + 1 < steps.length ? steps[i + 1]!.atMs : durationMs)
    if (to > from) total += steps[i]!.rps * (to - from)
  }
  return total / durationMs
}

class TraceArrivals implements ArrivalSource {
  private i = 0
  readonly expectedCount: number
  constructor(
    private readonly trace: Trace,
    private readonly timeScale: number,
  ) {
    this.expectedCount = trace.arrivalMs.length
  }
  next(out: ArrivalDraft): boolean {
    const i = this.i
    if (i >= this.trace.arrivalMs.length) return false
    out.timeMs = this.trace.arrivalMs[i]! / this.timeScale
    out.inputTokens = this.trace.inputTokens[i]!
    out.outputTokens = this.trace.outputTokens[i]!
    this.i = i + 1
    return true
  }
}

/** Arrivals streamed from a trace file: offsets from the first request, divided by the time scale. */
class TraceFileArrivals implements ArrivalSource {
  private readonly reader: TraceFileReader
  private readonly row: TraceRow = { timeMs: 0, inputTokens: 0, outputTokens: 0 }
  readonly expectedCount: number
  constructor(
    path: string,
    private readonly stats: TraceFileStats,
    private readonly timeScale: number,
  ) {
    this.reader = new TraceFileReader(path)
    this.expectedCount = stats.requests
  }
  next(out: ArrivalDraft): boolean {
    if (!this.reader.next(this.row)) return false
    out.timeMs = (this.row.timeMs - this.stats.startEpochMs) / this.timeScale
    out.inputTokens = this.row.inputTokens
    out.outputTokens = this.row.outputTokens
    return true
  }
}

/** Non-homogeneous Poisson arrivals by thinning (Lewis–Shedler); homogeneous when the rate is constant. */
class RateArrivals implements ArrivalSource {
  private t = 0
  private n = 0
  private readonly constant: boolean
  constructor(
    private readonly rng: Rng,
    private readonly tokens: TokenShape,
    private readonly limitMs: number,
    private readonly limitN: number,
    readonly expectedCount: number,
    private readonly rate: { rateAt(t: number): number; maxRate(): number },
  ) {
    this.constant = rate.rateAt(0) === rate.maxRate() && rate.rateAt(1e12) === rate.maxRate()
  }
  next(out: ArrivalDraft): boolean {
    if (this.n >= this.limitN) return false
    const max = this.rate.maxRate()
    if (!(max > 0)) return false
    const meanGapMs = 1000 / max
    let t = this.t
    for (;;) {
      t += this.rng.exponential(meanGapMs)
      if (t > this.limitMs) return false
      if (this.constant || this.rng.next() * max < this.rate.rateAt(t)) break
    }
    this.t = t
    this.n++
    out.timeMs = t
    out.inputTokens = Math.max(1, Math.round(this.rng.exponential(this.tokens.meanInputTokens)))
    out.outputTokens = Math.max(1, Math.round(this.rng.exponential(this.tokens.meanOutputTokens)))
    return true
  }
}

/** Two-state Markov-modulated Poisson process: exponential dwell in each state, Poisson arrivals at its rate. */
class MmppArrivals implements ArrivalSource {
  private t = 0
  private n = 0
  private state = 0
  private switchAt: number
  readonly expectedCount: number
  constructor(
    private readonly rng: Rng,
    private readonly tokens: TokenShape,
    private readonly limitMs: number,
    private readonly limitN: number,
    private readonly rps: readonly [number, number],
    private readonly dwellMs: readonly [number, number],
  ) {
    this.switchAt = rng.exponential(dwellMs[0])
    const mean = (rps[0] * dwellMs[0] + rps[1] * dwellMs[1]) / (dwellMs[0] + dwellMs[1])
    this.expectedCount = estimate(mean, limitMs, limitN)
  }
  next(out: ArrivalDraft): boolean {
    if (this.n >= this.limitN) return false
    let t = this.t
    for (;;) {
      const rate = this.rps[this.state]!
      const gap = rate > 0 ? this.rng.exponential(1000 / rate) : Infinity
      if (t + gap < this.switchAt) {
        t += gap
        break
      }
      // Memoryless: restart from the switch time in the other state.
      t = this.switchAt
      if (t > this.limitMs) return false
      this.state ^= 1
      this.switchAt = t + this.rng.exponential(this.dwellMs[this.state]!)
    }
    if (t > this.limitMs) return false
    this.t = t
    this.n++
    out.timeMs = t
    out.inputTokens = Math.max(1, Math.round(this.rng.exponential(this.tokens.meanInputTokens)))
    out.outputTokens = Math.max(1, Math.round(this.rng.exponential(this.tokens.meanOutputTokens)))
    return true
  }
}

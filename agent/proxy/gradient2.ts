/** Options of {@link Gradient2Limit}; the defaults are Netflix concurrency-limits' Gradient2Limit's (20 … 1000, from 20). */
export interface Gradient2Options {
  readonly initialLimit?: number
  readonly minLimit?: number
  readonly maxLimit?: number
  /** How far the limit moves towards its new value per update (0..1). */
  readonly smoothing?: number
  /** How much the short-term RTT may exceed the long-term one before the limit shrinks. */
  readonly rttTolerance?: number
  /** Updates (windows) the long-term RTT average spans. */
  readonly longWindow?: number
  /** A window closes after this many samples … */
  readonly windowSamples?: number
  /** … or after this many ms, whichever comes first (with at least one sample). */
  readonly windowMs?: number
}

/**
 * Netflix's Gradient2 adaptive concurrency limit: it compares the short-term service time (one window's
 * average) with a long-term exponential average; while they agree the limit grows by about √limit per
 * window, and when the short-term time rises (queueing in the server) the limit shrinks by the ratio,
 * at most by half per window. It never grows while the limit is not the bottleneck (fewer than half the
 * limit in flight). The proxy applies it across all classes when no controller has set caps.
 *
 * @example
 * ```ts
 * const g = new Gradient2Limit({ initialLimit: 20 })
 * g.sample(12.5, 18, Date.now()) // service time in ms, requests in flight; returns the current limit
 * ```
 */
export class Gradient2Limit {
  readonly #o: Required<Gradient2Options>
  #limit: number
  #longRtt = 0
  #updates = 0
  #sum = 0
  #count = 0
  #maxInFlight = 0
  #windowStart = -1

  constructor(opts: Gradient2Options = {}) {
    this.#o = {
      initialLimit: opts.initialLimit ?? 20,
      minLimit: opts.minLimit ?? 20,
      maxLimit: opts.maxLimit ?? 1000,
      smoothing: opts.smoothing ?? 0.2,
      rttTolerance: opts.rttTolerance ?? 1.5,
      longWindow: opts.longWindow ?? 600,
      windowSamples: opts.windowSamples ?? 20,
      windowMs: opts.windowMs ?? 250,
    }
    this.#limit = this.#o.initialLimit
  }

  /** The current limit (requests in flight across all classes), rounded down, at least `minLimit`. */
  get limit(): number {
    return Math.max(this.#o.minLimit, Math.floor(this.#limit))
  }

  /** The long-term service-time average in ms (0 before the first window). */
  get longRttMs(): number {
    return this.#longRtt
  }

  /** Records one request's service time; closes the window when it is full. Returns the limit. */
  sample(rttMs: number, inFlight: number, now: number): number {
    if (!(rttMs > 0)) return this.limit
    if (this.#windowStart < 0) this.#windowStart = now
    this.#sum += rttMs
    this.#count++
    if (inFlight > this.#maxInFlight) this.#maxInFlight = inFlight
    if (this.#count >= this.#o.windowSamples || now - this.#windowStart >= this.#o.windowMs) this.#update()
    if (this.#count === 0) this.#windowStart = now
    return this.limit
  }

  #update(): void {
    const shortRtt = this.#sum / this.#count
    const maxInFlight = this.#maxInFlight
    this.#sum = 0
    this.#count = 0
    this.#maxInFlight = 0
    this.#updates++
    // The long-term average: a plain mean over the first windows (warm-up), then an EMA.
    if (this.#updates <= 10) this.#longRtt += (shortRtt - this.#longRtt) / this.#updates
    else this.#longRtt += (shortRtt - this.#longRtt) * (2 / (this.#o.longWindow + 1))
    // After a sustained drop in latency, let the long-term average catch up faster.
    if (this.#longRtt / shortRtt > 2) this.#longRtt *= 0.95
    // App-limited: the limit is not what holds requests back, so there is nothing to learn.
    if (maxInFlight < this.#limit / 2) return
    const gradient = Math.max(0.5, Math.min(1, (this.#o.rttTolerance * this.#longRtt) / shortRtt))
    let next = this.#limit * gradient + Math.sqrt(this.#limit)
    next = this.#limit * (1 - this.#o.smoothing) + next * this.#o.smoothing
    this.#limit = Math.max(this.#o.minLimit, Math.min(this.#o.maxLimit, next))
  }
}

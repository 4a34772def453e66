/** min, mean (time-weighted), max and last of one gauge over one interval. */
export interface GaugeStat {
  readonly min: number
  readonly mean: number
  readonly max: number
  readonly last: number
}

/**
 * Folds a gauge that changes at discrete moments (requests in flight, requests queued) into min, max, last
 * and a time-weighted mean over an interval. `set` is a few comparisons and one multiply: the proxy calls it
 * on every admission and release.
 *
 * @example
 * ```ts
 * const g = new GaugeFold(Date.now())
 * g.set(3, Date.now())
 * g.take(Date.now()) // { min: 0, mean: …, max: 3, last: 3 }, and a new interval starts at 3
 * ```
 */
export class GaugeFold {
  #value = 0
  #min = 0
  #max = 0
  #since: number
  #start: number
  #integral = 0

  constructor(now: number) {
    this.#since = now
    this.#start = now
  }

  get value(): number {
    return this.#value
  }

  set(v: number, now: number): void {
    if (now > this.#since) {
      this.#integral += this.#value * (now - this.#since)
      this.#since = now
    }
    this.#value = v
    if (v < this.#min) this.#min = v
    if (v > this.#max) this.#max = v
  }

  add(delta: number, now: number): void {
    this.set(this.#value + delta, now)
  }

  /** The interval's statistics; a new interval starts at the current value. */
  take(now: number): GaugeStat {
    this.set(this.#value, now)
    const span = now - this.#start
    const out = {
      min: this.#min,
      mean: span > 0 ? this.#integral / span : this.#value,
      max: this.#max,
      last: this.#value,
    }
    this.#min = this.#max = this.#value
    this.#integral = 0
    this.#start = this.#since = now
    return out
  }
}

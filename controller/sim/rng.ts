/**
 * A small, fast, seeded pseudo-random generator (xoshiro128**, seeded through splitmix32) so that every
 * simulation is reproducible: same seed, same result.
 *
 * @example new Rng(42).exponential(10) // an exponential sample with mean 10, the same for every run
 */
export class Rng {
  private a: number
  private b: number
  private c: number
  private d: number
  private spare = NaN

  /**
   * @example const rng = new Rng(42); rng.next() // a double in [0, 1)
   */
  constructor(seed: number) {
    let s = seed >>> 0
    const split = (): number => {
      s = (s + 0x9e3779b9) | 0
      let z = s
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = split()
    this.b = split()
    this.c = split()
    this.d = split() | 1
  }

  /** Next 32-bit unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.b, 5), 7), 9) >>> 0
    const t = this.b << 9
    this.c ^= this.a
    this.d ^= this.b
    this.b ^= this.c
    this.a ^= this.d
    this.c ^= t
    this.d = rotl(this.d, 11)
    return result
  }

  /** Uniform double in [0, 1) with 53 random bits. */
  next(): number {
    return ((this.nextUint32() >>> 5) * 67108864 + (this.nextUint32() >>> 6)) / 9007199254740992
  }

  /** Exponential with the given mean. */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean
  }

  /** Standard normal (Box–Muller, caching the second value). */
  normal(): number {
    if (!Number.isNaN(this.spare)) {
      const v = this.spare
      this.spare = NaN
      return v
    }
    const u = 1 - this.next()
    const v = this.next()
    const r = Math.sqrt(-2 * Math.log(u))
    this.spare = r * Math.sin(2 * Math.PI * v)
    return r * Math.cos(2 * Math.PI * v)
  }

  /** Log-normal factor with mean 1 and coefficient of variation `cv`. */
  lognormalFactor(cv: number): number {
    const s2 = Math.log(1 + cv * cv)
    return Math.exp(-s2 / 2 + Math.sqrt(s2) * this.normal())
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k))
}

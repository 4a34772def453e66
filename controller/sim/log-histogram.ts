/**
 * A tiny fixed log-bucket histogram (1% buckets, 1 µs to 1 h) for per-interval percentiles inside the
 * simulator: recording is one log and one increment, resetting is one fill. Whole-run percentiles use the
 * HDR codec instead.
 *
 * @example const h = new LogHistogram(); h.recordMs(12.5); h.percentileMs(0.99) // ≈ 12.5 (within 1%)
 */
export class LogHistogram {
  private static readonly LOG_BASE = Math.log(1.01)
  private static readonly BINS = 2300
  private readonly counts = new Uint32Array(LogHistogram.BINS)
  count = 0
  private lo = LogHistogram.BINS
  private hi = -1

  /**
   * @example const h = new LogHistogram(); h.recordMs(12.5); h.percentileMs(0.99) // ≈ 12.5 (within 1%)
   */
  recordMs(ms: number): void {
    const us = ms * 1000
    let i = us <= 1 ? 0 : Math.floor(Math.log(us) / LogHistogram.LOG_BASE) + 1
    if (i >= LogHistogram.BINS) i = LogHistogram.BINS - 1
    this.counts[i]!++
    this.count++
    if (i < this.lo) this.lo = i
    if (i > this.hi) this.hi = i
  }

  /** Nearest-rank percentile in ms (upper edge of its bucket), or null when empty. */
  percentileMs(q: number): number | null {
    if (this.count === 0) return null
    const rank = Math.max(1, Math.ceil(q * this.count))
    let seen = 0
    for (let i = this.lo; i <= this.hi; i++) {
      seen += this.counts[i]!
      if (seen >= rank) return i === 0 ? 0.001 : Math.exp(i * LogHistogram.LOG_BASE) / 1000
    }
    return null
  }

  reset(): void {
    if (this.count === 0) return
    this.counts.fill(0, this.lo, this.hi + 1)
    this.count = 0
    this.lo = LogHistogram.BINS
    this.hi = -1
  }
}

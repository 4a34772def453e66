/**
 * Per-SLO good/total counts per bucket, kept between evaluation cycles so that a cycle only reads the
 * buckets that are new since the last one (acceptance: 1,000 SLOs over 30 days in well under a second).
 *
 * Recent time (the last 6 to 7 hours) is kept at the fine step (1 min, or the time-slice length); older
 * time at 1 h. A window sum adds fine buckets, whole hours, and a pro-rata share of the hour that
 * straddles the window's start (only windows longer than 6 h reach that far).
 */
import type { Metric } from '../report/index.js'
import type { Histogram } from '../report/index.js'
import { HOUR_MS, MINUTE_MS, burnDownStepMs, countAtOrBelow, trimToData } from './math.js'
import type { Budgeting, Sli, SloSelector } from './definition.js'

/**
 * The part of the store the SLO engine reads (STYLE.md section 8). `Store` from collector/store satisfies it.
 */
export interface SloDataSource {
  timeseries(
    selector: SloSelector,
    range: { readonly fromMs: number; readonly toMs: number },
    metric: Metric,
    stepMs: number,
  ): Promise<ReadonlyArray<{ readonly tMs: number; readonly histogram: Histogram }>>
  countSeries(
    selector: SloSelector,
    range: { readonly fromMs: number; readonly toMs: number },
    stepMs: number,
  ): Promise<
    ReadonlyArray<{
      readonly tMs: number
      readonly counts: { readonly ok: number; readonly error: number; readonly shed: number }
    }>
  >
}

/** How far back the fine buckets reach: the start of the hour 6 hours before `endMs`. */
export const FINE_SPAN_MS = 6 * HOUR_MS
/** Fine buckets this recent are read again each cycle, so reports that arrive late are counted. */
export const DEFAULT_SETTLE_MS = 2 * MINUTE_MS

const floorTo = (t: number, step: number) => Math.floor(t / step) * step

/**
 * Reads good/total per bucket of one step for one SLI (latency: events at or under the threshold).
 *
 * @example await readBuckets(store, { service: 'chat' }, slo.sli, fromMs, toMs, 60_000) // [{ tMs, good, total }, …]
 */
export async function readBuckets(
  source: SloDataSource,
  selector: SloSelector,
  sli: Sli,
  fromMs: number,
  toMs: number,
  stepMs: number,
): Promise<Array<{ tMs: number; good: number; total: number }>> {
  if (!(fromMs < toMs)) return []
  const range = { fromMs, toMs }
  if (sli.kind === 'latency') {
    const thresholdUs = sli.thresholdMs * 1000
    const rows = await source.timeseries(selector, range, sli.metric, stepMs)
    return rows.map((r) => ({
      tMs: r.tMs,
      good: countAtOrBelow(r.histogram, thresholdUs),
      total: r.histogram.totalCount,
    }))
  }
  const rows = await source.countSeries(selector, range, stepMs)
  return rows.map((r) => ({
    tMs: r.tMs,
    good: r.counts.ok,
    total: r.counts.ok + r.counts.error + (sli.shedIsBad ? r.counts.shed : 0),
  }))
}

/** Ordered buckets: parallel arrays, oldest first. */
class Buckets {
  t: number[] = []
  good: number[] = []
  total: number[] = []
  /** Removes buckets with t < fromMs. */
  dropBefore(fromMs: number): void {
    let i = 0
    while (i < this.t.length && this.t[i]! < fromMs) i++
    if (i > 0) {
      this.t.splice(0, i)
      this.good.splice(0, i)
      this.total.splice(0, i)
    }
  }
  /** Removes buckets with t >= fromMs (to be replaced by a fresh read). */
  dropFrom(fromMs: number): void {
    let n = this.t.length
    while (n > 0 && this.t[n - 1]! >= fromMs) n--
    this.t.length = n
    this.good.length = n
    this.total.length = n
  }
  push(t: number, good: number, total: number): void {
    this.t.push(t)
    this.good.push(good)
    this.total.push(total)
  }
  /** Sums buckets with fromMs ≤ t < toMs, walking back from the newest. */
  sum(fromMs: number, toMs: number): { good: number; total: number } {
    let good = 0
    let total = 0
    for (let i = this.t.length - 1; i >= 0; i--) {
      const t = this.t[i]!
      if (t < fromMs) break
      if (t >= toMs) continue
      good += this.good[i]!
      total += this.total[i]!
    }
    return { good, total }
  }
}

/**
 * The cached bucket series of one SLO.
 *
 * @example
 * ```ts
 * const s = new SloSeries(slo.selector, slo.sli, slo.budgeting)
 * await s.advance(source, endMs, 30 * DAY_MS)
 * s.sum(endMs - HOUR_MS, endMs) // { good, total } over the last hour
 * ```
 */
export class SloSeries {
  readonly fineStepMs: number
  private readonly fine = new Buckets()
  private readonly coarse = new Buckets()
  /** Fine buckets hold [fineStartMs, fetchedUntilMs); coarse buckets hold [coarseFromMs, fineStartMs). */
  private fineStartMs = Number.NaN
  private fetchedUntilMs = Number.NaN
  private coarseFromMs = Number.NaN

  constructor(
    private readonly selector: SloSelector,
    private readonly sli: Sli,
    private readonly budgeting: Budgeting,
    private readonly settleMs = DEFAULT_SETTLE_MS,
  ) {
    this.fineStepMs = budgeting.kind === 'timeslices' ? budgeting.sliceMs : MINUTE_MS
  }

  /** The end of the data that {@link advance} has read (a fine-step boundary). */
  get endMs(): number {
    return this.fetchedUntilMs
  }

  /** Turns raw good/total per fine bucket into the units the budget counts (events, or slices). */
  private units(b: { good: number; total: number }): { good: number; total: number } {
    if (this.budgeting.kind === 'occurrences') return b
    if (b.total <= 0) return { good: 0, total: 0 }
    return { good: b.good / b.total >= this.budgeting.sliceTarget ? 1 : 0, total: 1 }
  }

  /**
   * Brings the series up to `endMs` (rounded down to the fine step), reading only what is new, and keeps
   * `spanMs` of history (the longest window any query will ask for).
   */
  async advance(source: SloDataSource, endMs: number, spanMs: number): Promise<void> {
    const end = floorTo(endMs, this.fineStepMs)
    const fineStart = floorTo(end, HOUR_MS) - FINE_SPAN_MS
    const coarseFrom = floorTo(end - spanMs, HOUR_MS)
    if (
      Number.isNaN(this.fetchedUntilMs) ||
      end < this.fetchedUntilMs ||
      fineStart - this.fineStartMs > spanMs
    ) {
      // Cold start (or the clock went back): read everything.
      this.fine.dropFrom(-Infinity)
      this.coarse.dropFrom(-Infinity)
      await this.readCoarse(source, coarseFrom, fineStart)
      this.coarseFromMs = coarseFrom
      this.fineStartMs = fineStart
      await this.readFine(source, fineStart, end)
      this.fetchedUntilMs = end
      return
    }
    if (fineStart > this.fineStartMs) {
      // Fold the fine buckets of hours that left the fine span into hourly buckets.
      for (let h = this.fineStartMs; h < fineStart; h += HOUR_MS) {
        const s = this.fine.sum(h, h + HOUR_MS)
        if (s.total > 0 || s.good > 0) this.coarse.push(h, s.good, s.total)
      }
      this.fine.dropBefore(fineStart)
      this.fineStartMs = fineStart
    }
    if (coarseFrom > this.coarseFromMs) {
      this.coarse.dropBefore(coarseFrom)
      this.coarseFromMs = coarseFrom
    } else if (coarseFrom < this.coarseFromMs) {
      // A longer span than before (a longer window was added): read the missing older hours.
      const older = new SloSeries(this.selector, this.sli, this.budgeting)
      await older.readCoarse(source, coarseFrom, this.coarseFromMs)
      this.coarse.t.unshift(...older.coarse.t)
      this.coarse.good.unshift(...older.coarse.good)
      this.coarse.total.unshift(...older.coarse.total)
      this.coarseFromMs = coarseFrom
    }
    const from = Math.max(this.fineStartMs, floorTo(this.fetchedUntilMs - this.settleMs, this.fineStepMs))
    this.fine.dropFrom(from)
    await this.readFine(source, from, end)
    this.fetchedUntilMs = end
  }

  private async readFine(source: SloDataSource, fromMs: number, toMs: number): Promise<void> {
    for (const b of await readBuckets(source, this.selector, this.sli, fromMs, toMs, this.fineStepMs)) {
      const u = this.units(b)
      this.fine.push(b.tMs, u.good, u.total)
    }
  }

  private async readCoarse(source: SloDataSource, fromMs: number, toMs: number): Promise<void> {
    if (this.budgeting.kind === 'occurrences') {
      for (const b of await readBuckets(source, this.selector, this.sli, fromMs, toMs, HOUR_MS))
        this.coarse.push(b.tMs, b.good, b.total)
      return
    }
    // Time slices: count good slices per hour from slice-sized buckets.
    let hour = Number.NaN
    let good = 0
    let total = 0
    for (const b of await readBuckets(source, this.selector, this.sli, fromMs, toMs, this.fineStepMs)) {
      const h = floorTo(b.tMs, HOUR_MS)
      if (h !== hour) {
        if (!Number.isNaN(hour)) this.coarse.push(hour, good, total)
        hour = h
        good = 0
        total = 0
      }
      const u = this.units(b)
      good += u.good
      total += u.total
    }
    if (!Number.isNaN(hour)) this.coarse.push(hour, good, total)
  }

  /** Good and total units over `[fromMs, toMs)` (`toMs` at most the end read so far). */
  sum(fromMs: number, toMs: number): { good: number; total: number } {
    const fine = this.fine.sum(Math.max(fromMs, this.fineStartMs), toMs)
    if (fromMs >= this.fineStartMs) return fine
    let good = fine.good
    let total = fine.total
    const firstWhole = Math.ceil(fromMs / HOUR_MS) * HOUR_MS
    const whole = this.coarse.sum(firstWhole, Math.min(toMs, this.fineStartMs))
    good += whole.good
    total += whole.total
    if (firstWhole > fromMs) {
      const partial = this.coarse.sum(firstWhole - HOUR_MS, firstWhole)
      const share = (firstWhole - fromMs) / HOUR_MS
      good += partial.good * share
      total += partial.total * share
    }
    return { good, total }
  }

  /**
   * Cumulative good/total per `stepMs` (an hour by default) from `fromMs` to the end.
   */
  cumulative(fromMs: number, stepMs = HOUR_MS): Array<{ tMs: number; good: number; total: number }> {
    const out: Array<{ tMs: number; good: number; total: number }> = []
    let good = 0
    let total = 0
    for (let h = floorTo(fromMs, stepMs); h < this.fetchedUntilMs; h += stepMs) {
      const s = this.sum(Math.max(h, fromMs), Math.min(h + stepMs, this.fetchedUntilMs))
      good += s.good
      total += s.total
      out.push({ tMs: Math.min(h + stepMs, this.fetchedUntilMs), good, total })
    }
    return out
  }

  /**
   * The input of the burn-down chart: cumulative good/total from `fromMs`, zoomed to the data (see
   * {@link trimToData}) and, when the data spans the fine buckets' reach, at a finer step than an hour
   * ({@link burnDownStepMs}).
   */
  burnDown(fromMs: number): Array<{ tMs: number; good: number; total: number }> {
    const hourly = trimToData(this.cumulative(fromMs))
    const firstData = hourly.find((p) => p.total > 0)
    if (!firstData) return hourly
    const startMs = Math.max(fromMs, floorTo(firstData.tMs - 1, HOUR_MS))
    if (!(startMs >= this.fineStartMs)) return hourly
    return trimToData(this.cumulative(startMs, burnDownStepMs(this.fetchedUntilMs - startMs)))
  }
}

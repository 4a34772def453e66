/**
 * Arrival forecast over the cold-start horizon: the long (60 s) window, plus its rising trend carried over the
 * horizon (and the half window it lags by), or the shortest window when it runs well above the long one (a
 * burst). Short blips are left to the queue and the admission valve: a replica ordered now arrives a cold start
 * later, after they are gone.
 */

/** One remembered short-window rate. */
export interface RatePoint {
  readonly atMs: number
  readonly rps: number
}

/** The forecast and the numbers behind it (for the reason). */
export interface ArrivalForecast {
  readonly rps: number
  readonly shortRps: number
  readonly longRps: number
  /** Least-squares slope of recent short-window rates, req/s per minute (0 when unknown). */
  readonly trendRpsPerMin: number
  /** Shortest window / long window when that ratio marks a burst, else 1. */
  readonly burst: number
  readonly horizonMs: number
}

/** How far back the trend looks, ms. */
export const TREND_WINDOW_MS = 180_000
/** Least time the trend's points must span, ms. */
const MIN_TREND_SPAN_MS = 60_000
/** The long window lags the present by half its length, ms. */
const LONG_LAG_MS = 30_000
/** A shortest-window rate this many times the long one is a burst. */
const BURST_RATIO = 1.5
const BURST_Z = 3
/** The long window, s, and how many standard deviations of its noise a trend must rise by. */
const LONG_WINDOW_S = 60
const TREND_Z = 3

/**
 * Least-squares slope of rate over time, req/s per second; 0 with fewer than 3 points or under a minute of them.
 *
 * @example rateSlope([{ atMs: 0, rps: 10 }, { atMs: 30_000, rps: 40 }, { atMs: 60_000, rps: 70 }]) // 1
 */
export function rateSlope(points: readonly RatePoint[], minSpanMs = MIN_TREND_SPAN_MS): number {
  const n = points.length
  if (n < 3) return 0
  // A trend needs some history: under a minute of points it is mostly noise.
  if (points[n - 1]!.atMs - points[0]!.atMs < minSpanMs) return 0
  let sx = 0
  let sy = 0
  for (const p of points) {
    sx += p.atMs / 1000
    sy += p.rps
  }
  const mx = sx / n
  const my = sy / n
  let sxx = 0
  let sxy = 0
  for (const p of points) {
    const dx = p.atMs / 1000 - mx
    sxx += dx * dx
    sxy += dx * (p.rps - my)
  }
  return sxx > 0 ? sxy / sxx : 0
}

/**
 * A trend that holds: the smaller of the slopes over the older and the newer half of the history (0 unless both
 * rise). A ramp rises in both halves; a step, seen through a 60 s window, rises in one only, and must not be
 * extrapolated as if it went on.
 *
 * @example sustainedSlope(ramp) // the ramp's slope; sustainedSlope(step) // 0
 */
export function sustainedSlope(history: readonly RatePoint[]): number {
  if (history.length < 6) return 0
  const mid = history[0]!.atMs + (history[history.length - 1]!.atMs - history[0]!.atMs) / 2
  const older = history.filter((p) => p.atMs <= mid)
  const newer = history.filter((p) => p.atMs >= mid)
  const a = rateSlope(older, MIN_TREND_SPAN_MS / 2)
  const b = rateSlope(newer, MIN_TREND_SPAN_MS / 2)
  return a > 0 && b > 0 ? Math.min(a, b) : 0
}

/**
 * The sustained slope of `history`, when it is more than noise: its points span at least the horizon it is
 * carried over (up to the trend window), and the rise it makes over them is at least 3 standard deviations of the
 * difference of two independent 60 s counts at `longRps` (Poisson). At 5 req/s that is a rise of 1.2 req/s, so a
 * minute-to-minute wobble of a small trace is not extrapolated; at 2,000 req/s, of 24 req/s.
 *
 * @example significantSlope(ramp, 100, 90_000) // the ramp's slope; significantSlope(wobble, 5, 90_000) // 0
 */
export function significantSlope(history: readonly RatePoint[], longRps: number, horizonMs: number): number {
  if (history.length < 2) return 0
  const spanMs = history[history.length - 1]!.atMs - history[0]!.atMs
  if (spanMs < Math.min(TREND_WINDOW_MS, horizonMs)) return 0
  const slope = sustainedSlope(history)
  const noise = Math.sqrt((2 * Math.max(0, longRps)) / LONG_WINDOW_S)
  return (slope * spanMs) / 1000 >= TREND_Z * noise ? slope : 0
}

/**
 * Forecasts the arrival rate `horizonMs` ahead: long + max(0, trend)·(horizon + 30 s) (the sustained, significant
 * trend of long-window rates in `history`, capped at doubling the rate), and at least the shortest window when it and the 10 s
 * window are ≥ 1.5× the long one and more than Poisson noise (z ≥ 3 on their counts): a burst.
 *
 * @example forecastArrivals({ 6: 100, 10: 100, 60: 100 }, [], 90_000).rps // 100
 */
export function forecastArrivals(
  arrivalRps: Readonly<Record<number, number>>,
  history: readonly RatePoint[],
  horizonMs: number,
): ArrivalForecast {
  const windows = Object.keys(arrivalRps)
    .map(Number)
    .sort((a, b) => a - b)
  const shortest = windows.length > 0 ? arrivalRps[windows[0]!]! : 0
  const shortRps = arrivalRps[10] ?? shortest
  const longRps = arrivalRps[60] ?? (windows.length > 0 ? arrivalRps[windows[windows.length - 1]!]! : 0)
  const base = longRps
  const slope = significantSlope(history, longRps, horizonMs)
  const rise = Math.min(base, (Math.max(0, slope) * (horizonMs + LONG_LAG_MS)) / 1000)
  // A burst must be ≥ 1.5× the long window and unlikely to be Poisson noise (z ≥ 3 on the window's count), in the
  // shortest window and in the 10 s one: a few seconds' cluster of a small trace passes the first alone, and is
  // over long before a replica ordered for it is ready. A real step passes both within seconds.
  const bursts = (rps: number, w: number) =>
    longRps > 0 &&
    rps >= BURST_RATIO * longRps &&
    ((rps - longRps) * Math.sqrt(w)) / Math.sqrt(longRps) >= BURST_Z
  const w = windows.length > 0 ? windows[0]! : 0
  const confirmed = arrivalRps[10] === undefined || w === 10 || bursts(arrivalRps[10], 10)
  const burst = bursts(shortest, w) && confirmed ? shortest / longRps : 1
  const rps = Math.max(base + rise, burst > 1 ? shortest : 0)
  return { rps, shortRps, longRps, trendRpsPerMin: slope * 60, burst, horizonMs }
}

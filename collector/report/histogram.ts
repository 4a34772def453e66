import { build, decodeFromCompressedBase64, encodeIntoCompressedBase64 } from 'hdr-histogram-js'
import type { Histogram } from 'hdr-histogram-js'

export type { Histogram }

/** Latencies are recorded in integer microseconds, from 1 µs to 1 h, at 3 significant digits (≤ 0.1% error). */
export const HISTOGRAM_LOWEST_US = 1
export const HISTOGRAM_HIGHEST_US = 3_600_000_000
export const HISTOGRAM_DIGITS = 3

/**
 * A new, empty latency histogram in tailguard's one configuration.
 *
 * @example
 * ```ts
 * const h = newHistogram()
 * h.recordValue(1500) // 1.5 ms
 * ```
 */
export function newHistogram(): Histogram {
  return build({
    lowestDiscernibleValue: HISTOGRAM_LOWEST_US,
    highestTrackableValue: HISTOGRAM_HIGHEST_US,
    numberOfSignificantValueDigits: HISTOGRAM_DIGITS,
    bitBucketSize: 32,
    autoResize: false,
    useWebAssembly: false,
  })
}

/**
 * Clamps a duration in µs into the trackable range and rounds it to an integer.
 * Returns `undefined` for values that must not be recorded (negative, NaN): callers count those as dropped.
 *
 * @example toRecordableUs(12.6) // 13
 */
export function toRecordableUs(us: number): number | undefined {
  if (!(us >= 0)) return undefined
  if (us > HISTOGRAM_HIGHEST_US) return HISTOGRAM_HIGHEST_US
  return Math.round(us)
}

/**
 * Encodes a histogram in the standard HdrHistogram compressed base64 form ("HISTFAAA…"), which
 * HdrHistogram libraries in other languages read too.
 *
 * @example const wire = encodeHistogram(h)
 */
export const encodeHistogram = (h: Histogram): string => encodeIntoCompressedBase64(h)

/**
 * Decodes {@link encodeHistogram}'s output. Throws on input that is not a valid encoded histogram;
 * callers at the edge validate with {@link tryDecodeHistogram}.
 *
 * @example const h = decodeHistogram(wire)
 */
export function decodeHistogram(encoded: string): Histogram {
  const decoded = decodeFromCompressedBase64(encoded, 32, false)
  // Re-home into our configuration so merges never change precision or range.
  const h = newHistogram()
  h.add(decoded)
  return h
}

/** Like {@link decodeHistogram} but returns an error message instead of throwing. */
export function tryDecodeHistogram(
  encoded: string,
): { ok: true; histogram: Histogram } | { ok: false; error: string } {
  try {
    const decoded = decodeFromCompressedBase64(encoded, 32, false)
    if (decoded.numberOfSignificantValueDigits < HISTOGRAM_DIGITS)
      return {
        ok: false,
        error: `histogram has ${decoded.numberOfSignificantValueDigits} significant digits, need ${HISTOGRAM_DIGITS}`,
      }
    if (decoded.maxValue > HISTOGRAM_HIGHEST_US)
      return { ok: false, error: 'histogram holds values above 1 h' }
    const h = newHistogram()
    h.add(decoded)
    return { ok: true, histogram: h }
  } catch (err) {
    return {
      ok: false,
      error: `not a valid HdrHistogram compressed base64 encoding (${(err as Error).message})`,
    }
  }
}

/** Summary statistics of a latency histogram, in milliseconds as floats (the API's unit). */
export interface LatencySummaryMs {
  readonly count: number
  readonly min: number | null
  readonly max: number | null
  readonly mean: number | null
  readonly quantiles: Readonly<Record<string, number | null>>
}

/**
 * Summarises a histogram in ms. Quantiles are nearest-rank from the merged histogram, keyed by their
 * decimal text as the caller gave them (`'0.99'`).
 *
 * @example summarizeMs(h, ['0.5', '0.99']) // { count: 1000, min: 0.1, …, quantiles: { '0.5': 50.0, '0.99': 99.0 } }
 */
export function summarizeMs(h: Histogram | null | undefined, quantiles: readonly string[]): LatencySummaryMs {
  const count = h ? h.totalCount : 0
  const q: Record<string, number | null> = {}
  for (const key of quantiles) {
    q[key] = h && count > 0 ? h.getValueAtPercentile(Number(key) * 100) / 1000 : null
  }
  if (!h || count === 0) return { count: 0, min: null, max: null, mean: null, quantiles: q }
  return {
    count,
    min: h.minNonZeroValue === Number.MAX_SAFE_INTEGER ? 0 : lowestOf(h) / 1000,
    max: h.maxValue / 1000,
    mean: h.mean / 1000,
    quantiles: q,
  }
}

function lowestOf(h: Histogram): number {
  // minNonZeroValue ignores recorded zeros; a histogram holding zeros has min 0.
  return h.getValueAtPercentile(0) === 0 ? 0 : h.minNonZeroValue
}

/**
 * Merges histograms into a new one; the inputs are left unchanged. Percentiles of the result are those
 * of the union of the samples (never an average of percentiles).
 *
 * @example const all = mergeHistograms([a, b])
 */
export function mergeHistograms(parts: Iterable<Histogram>): Histogram {
  const out = newHistogram()
  for (const p of parts) out.add(p)
  return out
}

/**
 * Adds an encoded histogram into `target` without the intermediate copy {@link decodeHistogram} makes: the
 * merge loop of storage queries. Same counts as `target.add(decodeHistogram(encoded))`, since `target` is
 * in tailguard's configuration either way. Throws on invalid input like {@link decodeHistogram}.
 *
 * @example
 * ```ts
 * const total = newHistogram()
 * for (const row of rows) addEncoded(total, row.histogram)
 * ```
 */
export function addEncoded(target: Histogram, encoded: string): void {
  target.add(decodeFromCompressedBase64(encoded, 32, false))
}

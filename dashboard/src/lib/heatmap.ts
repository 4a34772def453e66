/** `GET /api/v1/heatmap`: sample counts per log-spaced latency band and time step. */
export interface HeatmapResponse {
  readonly from: string
  readonly to: string
  readonly phase: string
  readonly stepMs: number
  readonly bandsPerDecade: number
  readonly bands: ReadonlyArray<{ readonly lowMs: number; readonly highMs: number }>
  readonly maxCount: number
  readonly points: ReadonlyArray<{
    readonly t: string
    readonly count: number
    readonly counts: readonly number[]
  }>
}

/** One drawn cell: a time step × a latency band with its count (cells with no samples are not drawn). */
export interface HeatmapCell {
  readonly tMs: number
  readonly band: number
  readonly lowMs: number
  readonly highMs: number
  readonly count: number
  /** Share of the step's samples in this band, in [0, 1]. */
  readonly share: number
  readonly color: string
}

/** Stops of the colour ramp (viridis-like: dark blue to yellow), readable on light and dark backgrounds. */
const RAMP: ReadonlyArray<readonly [number, number, number]> = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
]

const hex = (n: number) => Math.round(n).toString(16).padStart(2, '0')

/**
 * The colour of a cell with `count` samples when the fullest cell holds `max`, on a log scale (latency
 * counts span orders of magnitude): 1 sample is the ramp's first stop, `max` its last.
 *
 * @example heatColor(100, 100) // '#fde725'
 */
export function heatColor(count: number, max: number): string {
  const f =
    max <= 1 || count >= max ? (count > 0 && max > 0 ? 1 : 0) : Math.log(Math.max(1, count)) / Math.log(max)
  const x = Math.min(1, Math.max(0, f)) * (RAMP.length - 1)
  const i = Math.min(RAMP.length - 2, Math.floor(x))
  const a = RAMP[i]!
  const b = RAMP[i + 1]!
  const u = x - i
  return `#${[0, 1, 2].map((k) => hex(a[k]! + (b[k]! - a[k]!) * u)).join('')}`
}

/**
 * The cells of a heatmap response: one per step and band with samples, coloured against `maxCount`.
 *
 * @example heatmapCells(res).filter((c) => c.band === 0).length // steps with samples in the lowest band
 */
export function heatmapCells(res: HeatmapResponse): HeatmapCell[] {
  const out: HeatmapCell[] = []
  for (const p of res.points) {
    const tMs = Date.parse(p.t)
    p.counts.forEach((count, band) => {
      if (count <= 0) return
      const b = res.bands[band]
      if (!b) return
      out.push({
        tMs,
        band,
        lowMs: b.lowMs,
        highMs: b.highMs,
        count,
        share: p.count > 0 ? count / p.count : 0,
        color: heatColor(count, res.maxCount),
      })
    })
  }
  return out
}

/**
 * The legend's stops: counts from 1 to `max` spaced on the same log scale as the colours (at most `n`, no
 * repeats).
 *
 * @example heatLegend(1000, 4).map((s) => s.count) // [1, 10, 100, 1000]
 */
export function heatLegend(max: number, n = 5): Array<{ count: number; color: string }> {
  if (max <= 0) return []
  const counts = new Set<number>()
  for (let k = 0; k < n; k++) counts.add(Math.round(max ** (n === 1 ? 1 : k / (n - 1))))
  return [...counts].map((count) => ({ count, color: heatColor(count, max) }))
}

/**
 * Which band rows get an axis label so that labels stay at least `minGap` rows apart (always the lowest).
 *
 * @example labelledBands(20, 4) // [0, 4, 8, 12, 16]
 */
export function labelledBands(bands: number, minGap: number): number[] {
  const every = Math.max(1, Math.ceil(minGap))
  const out: number[] = []
  for (let k = 0; k < bands; k += every) out.push(k)
  return out
}

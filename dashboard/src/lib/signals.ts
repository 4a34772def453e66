/**
 * Types of `GET /api/v1/signals` and `GET /api/v1/requests` (collector/routes/signals.ts, requests.ts) as the
 * service page's signal and error-rate panels read them, and the pure transforms to chart rows. No DOM, no
 * React (unit-tested in test/dashboard/signals.test.ts).
 *
 * @example
 * ```ts
 * const rows = signalRows(response, [{ key: 'running', pick: gaugeMean('running'), combine: 'sum' }])
 * ```
 */

/** min/mean/max/last of a gauge over one bucket. */
export interface GaugeStat {
  readonly min: number
  readonly mean: number
  readonly max: number
  readonly last: number
}

/** One bucket of one series' signals. */
export interface SignalPoint {
  readonly t: string
  readonly gauges: Readonly<Partial<Record<string, GaugeStat>>>
  readonly counters: Readonly<Partial<Record<string, number>>>
  /** Counters divided by the step, per second. */
  readonly ratesPerS: Readonly<Partial<Record<string, number>>>
  /** Per priority class: what the proxy's admission control admitted and shed (by reason) in the bucket. */
  readonly byClass?: ReadonlyArray<{
    readonly priorityClass: number
    readonly admitted?: number
    readonly shed?: Readonly<Record<string, number>>
  }>
}

/** One imported (Prometheus bucket) latency histogram of one series, with its estimates per bucket. */
export interface ImportedHistogram {
  readonly precision: string
  readonly count: number
  readonly p50Ms: number | null
  readonly p99Ms: number | null
  readonly points: ReadonlyArray<{
    readonly t: string
    readonly count: number
    readonly p50Ms: number | null
    readonly p99Ms: number | null
  }>
}

/** One series of `GET /api/v1/signals`. */
export interface SignalSeries {
  readonly service: string
  readonly model: string
  readonly version: string
  readonly replica: string
  readonly node: string
  readonly sources: readonly string[]
  readonly points: readonly SignalPoint[]
  readonly histograms: Readonly<Partial<Record<string, ImportedHistogram>>>
}

/** `GET /api/v1/signals`. */
export interface SignalSeriesResponse {
  readonly from: string
  readonly to: string
  readonly stepMs: number
  readonly series: readonly SignalSeries[]
}

/** `GET /api/v1/requests`. */
export interface RequestsResponse {
  readonly from: string
  readonly to: string
  readonly stepMs: number
  readonly points: ReadonlyArray<{
    readonly t: string
    readonly ok: number
    readonly error: number
    readonly shed: number
    readonly errorRatio: number | null
    readonly shedRatio: number | null
  }>
}

/** Reads one number from a bucket of a series (undefined: not reported there). */
export type SignalPick = (p: SignalPoint) => number | undefined

/** The mean of a gauge over the bucket. @example gaugeMean('running')(point) // 12.5 */
export const gaugeMean =
  (gauge: string): SignalPick =>
  (p) =>
    p.gauges[gauge]?.mean

/** A gauge's min or max over the bucket. @example gaugeStat('batchSize', 'max')(point) // 32 */
export const gaugeStat =
  (gauge: string, stat: keyof GaugeStat): SignalPick =>
  (p) =>
    p.gauges[gauge]?.[stat]

/** A counter per second over the bucket. @example counterRate('outputTokens')(point) // 840 */
export const counterRate =
  (counter: string): SignalPick =>
  (p) =>
    p.ratesPerS[counter]

/** One line of a signal chart: its row key and how its value is read and combined across series. */
export interface SignalLine {
  readonly key: string
  readonly pick: SignalPick
  /**
   * `sum`: a fleet total (requests, tokens/s); `max`: the worst replica (KV-cache use); `min`: the lowest;
   * `mean`: the mean over the series that reported it.
   */
  readonly combine: 'sum' | 'max' | 'min' | 'mean'
}

/** One chart row: bucket start and one value per line (null: no series reported it in that bucket). */
export interface SignalRow {
  readonly tMs: number
  readonly [key: string]: number | null
}

/**
 * Chart rows for `lines` over every series of a signals response, one row per bucket any series reported in,
 * sorted by time: each line's values of the series in that bucket combined (summed, the max, min or mean).
 *
 * @example signalRows(res, [{ key: 'running', pick: gaugeMean('running'), combine: 'sum' }]) // [{ tMs, running: 7 }, …]
 */
export function signalRows(
  res: Pick<SignalSeriesResponse, 'series'>,
  lines: readonly SignalLine[],
): SignalRow[] {
  const rows = new Map<number, Record<string, number | null>>()
  const seen = new Map<string, number>()
  for (const s of res.series)
    for (const p of s.points) {
      const tMs = Date.parse(p.t)
      let row = rows.get(tMs)
      for (const line of lines) {
        const v = line.pick(p)
        if (v === undefined || !Number.isFinite(v)) continue
        if (!row) {
          row = { tMs, ...Object.fromEntries(lines.map((l) => [l.key, null])) }
          rows.set(tMs, row)
        }
        const prev = row[line.key] ?? null
        const n = seen.get(`${tMs}\u0000${line.key}`) ?? 0
        seen.set(`${tMs}\u0000${line.key}`, n + 1)
        row[line.key] =
          prev === null
            ? v
            : line.combine === 'sum'
              ? prev + v
              : line.combine === 'max'
                ? Math.max(prev, v)
                : line.combine === 'min'
                  ? Math.min(prev, v)
                  : prev + (v - prev) / (n + 1)
      }
    }
  return [...rows.values()].sort((a, b) => (a.tMs as number) - (b.tMs as number)) as SignalRow[]
}

/**
 * The replicas whose series carry an imported histogram of `metric`, and one chart row per bucket with each
 * replica's p99 estimate (`<replica>` key) — estimates from a server's buckets are never merged across replicas.
 *
 * @example importedP99Rows(res, 'ttft') // { replicas: ['chat-0'], precision: 'buckets', rows: [{ tMs, 'chat-0': 182.5 }] }
 */
export function importedP99Rows(
  res: Pick<SignalSeriesResponse, 'series'>,
  metric: string,
): { replicas: string[]; precision: string | null; rows: SignalRow[] } {
  const rows = new Map<number, Record<string, number | null>>()
  const replicas: string[] = []
  let precision: string | null = null
  for (const s of res.series) {
    const h = s.histograms[metric]
    if (!h || h.points.length === 0) continue
    const key = s.replica || `${s.service}/${s.model}`
    if (!replicas.includes(key)) replicas.push(key)
    precision ??= h.precision
    for (const p of h.points) {
      if (p.p99Ms === null) continue
      const tMs = Date.parse(p.t)
      const row = rows.get(tMs) ?? { tMs }
      row[key] = p.p99Ms
      rows.set(tMs, row)
    }
  }
  const sorted = [...rows.values()]
    .map((r) => ({ ...Object.fromEntries(replicas.map((k) => [k, null])), ...r }))
    .sort((a, b) => (a.tMs as number) - (b.tMs as number)) as SignalRow[]
  return { replicas, precision, rows: sorted }
}

/**
 * Error-rate chart rows: the error ratio (errors out of ok + error) and the shed ratio of each bucket with
 * requests, sorted by time.
 *
 * @example errorRateRows({ points: [{ t: '2026-01-01T00:00:00Z', ok: 99, error: 1, shed: 0, errorRatio: 0.01, shedRatio: 0 }] })
 * // [{ tMs: 1767225600000, errorRatio: 0.01, shedRatio: 0 }]
 */
export function errorRateRows(res: Pick<RequestsResponse, 'points'>): SignalRow[] {
  return res.points
    .map((p) => ({ tMs: Date.parse(p.t), errorRatio: p.errorRatio, shedRatio: p.shedRatio }))
    .sort((a, b) => a.tMs - b.tMs)
}

/** The newest non-null value of `key` in rows (null when none). @example lastValue(rows, 'running') // 7 */
export function lastValue(rows: readonly SignalRow[], key: string): number | null {
  for (let i = rows.length - 1; i >= 0; i--) {
    const v = rows[i]![key]
    if (typeof v === 'number') return v
  }
  return null
}

/** One signal panel: its title, chart name, lines (how each is read and combined) and unit. */
export interface SignalPanelSpec {
  readonly title: string
  readonly subtitle: string
  readonly chart: string
  readonly lines: ReadonlyArray<SignalLine & { readonly label: string }>
  /** How values are written: counts, ratios (as %), or per-second rates. */
  readonly unit: 'count' | 'ratio' | 'rate'
}

/**
 * The signal panels of the service page: the signals the API carries, in page order. Each is drawn only when some series reports one
 * of its lines. Fleet totals are summed over replicas; KV-cache use is the fullest replica's.
 */
export const SIGNAL_PANELS: readonly SignalPanelSpec[] = [
  {
    title: 'Running and waiting requests',
    subtitle: 'sequences running and waiting, summed over replicas (mean per bucket)',
    chart: 'running-waiting',
    lines: [
      { key: 'running', label: 'running', pick: gaugeMean('running'), combine: 'sum' },
      { key: 'waiting', label: 'waiting', pick: gaugeMean('waiting'), combine: 'sum' },
    ],
    unit: 'count',
  },
  {
    title: 'KV-cache use',
    subtitle: 'the fullest replica (mean per bucket)',
    chart: 'kv-cache',
    lines: [{ key: 'kv', label: 'KV cache', pick: gaugeMean('kvCacheUsage'), combine: 'max' }],
    unit: 'ratio',
  },
  {
    title: 'Queue depth',
    subtitle: 'requests in flight and queued at the proxy, summed over replicas',
    chart: 'queue-depth',
    lines: [
      { key: 'queued', label: 'queued', pick: gaugeMean('queued'), combine: 'sum' },
      { key: 'inFlight', label: 'in flight', pick: gaugeMean('inFlight'), combine: 'sum' },
    ],
    unit: 'count',
  },
  {
    title: 'Batch size',
    subtitle: 'dispatched batch size: smallest, mean and largest per bucket',
    chart: 'batch-size',
    lines: [
      { key: 'mean', label: 'mean', pick: gaugeMean('batchSize'), combine: 'mean' },
      { key: 'min', label: 'min', pick: gaugeStat('batchSize', 'min'), combine: 'min' },
      { key: 'max', label: 'max', pick: gaugeStat('batchSize', 'max'), combine: 'max' },
    ],
    unit: 'count',
  },
  {
    title: 'Tokens per second',
    subtitle: 'prompt tokens in and generated tokens out, summed over replicas',
    chart: 'tokens',
    lines: [
      { key: 'out', label: 'output tokens/s', pick: counterRate('outputTokens'), combine: 'sum' },
      { key: 'in', label: 'input tokens/s', pick: counterRate('inputTokens'), combine: 'sum' },
    ],
    unit: 'rate',
  },
  {
    title: 'Preemptions',
    subtitle: 'sequences evicted from the KV cache per second, summed over replicas',
    chart: 'preemptions',
    lines: [{ key: 'preemptions', label: 'preemptions/s', pick: counterRate('preemptions'), combine: 'sum' }],
    unit: 'rate',
  },
]

/**
 * The "shed by class" panel of a signals response: requests the proxy's admission control shed per second, one
 * line per priority class that shed anything (summed over replicas), with the reasons and their totals over the
 * range in the subtitle. Null when nothing was shed in the range.
 *
 * @example shedPanel(res)?.lines.map((l) => l.label) // ['class 1']
 */
export function shedPanel(res: Pick<SignalSeriesResponse, 'series' | 'stepMs'>): SignalPanelSpec | null {
  const reasons = new Map<string, number>()
  const classes = new Set<number>()
  for (const s of res.series)
    for (const p of s.points)
      for (const c of p.byClass ?? [])
        for (const [reason, n] of Object.entries(c.shed ?? {})) {
          if (!(n > 0)) continue
          classes.add(c.priorityClass)
          reasons.set(reason, (reasons.get(reason) ?? 0) + n)
        }
  if (classes.size === 0) return null
  const perS = Math.max(1, res.stepMs) / 1000
  const shedOf =
    (k: number): SignalPick =>
    (p) => {
      const c = p.byClass?.find((x) => x.priorityClass === k)
      if (!c?.shed) return undefined
      return Object.values(c.shed).reduce((a, b) => a + b, 0) / perS
    }
  const why = [...reasons.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([r, n]) => `${r.replace(/_/g, ' ')} ${n.toLocaleString('en-US')}`)
    .join(', ')
  return {
    title: 'Shed by class',
    subtitle: `requests the proxy's admission control refused per second, by priority class (0 highest); over the range: ${why}`,
    chart: 'shed-by-class',
    unit: 'rate',
    lines: [...classes]
      .sort((a, b) => a - b)
      .map((k) => ({ key: `class${k}`, label: `class ${k}`, pick: shedOf(k), combine: 'sum' as const })),
  }
}

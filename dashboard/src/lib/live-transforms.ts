/** The parts of `GET /api/v1/signals` the live tiles read. */
export interface SignalsResponse {
  readonly series: ReadonlyArray<{
    readonly sources: readonly string[]
    readonly points: ReadonlyArray<{
      readonly gauges: Readonly<Record<string, { readonly last: number } | undefined>>
    }>
    readonly histograms: Readonly<
      Record<string, { readonly precision: string; readonly count: number; readonly p99Ms: number | null }>
    >
  }>
}

/** The parts of `GET /api/v1/figures` the live tiles read. */
export interface FiguresResponse {
  readonly services: ReadonlyArray<
    Readonly<Record<string, unknown>> & {
      readonly service: string
    }
  >
}

/** One live tile: a label, its value (null: not reported) and how exact it is. */
export interface LiveTile {
  readonly label: string
  readonly value: number | null
  readonly unit: 'count' | 'ratio' | 'ms' | 'rate' | 'usd' | 'joules'
  /** `buckets` for a latency read from a server's Prometheus histogram: an estimate, never HDR-exact. */
  readonly precision?: string
}

const figure = (f: Record<string, unknown> | undefined, name: string): number | null => {
  const v = (f?.[name] as { value?: unknown } | undefined)?.value
  return typeof v === 'number' ? v : null
}

/**
 * The live tiles of one service: running, waiting and KV-cache use summed (KV: the highest) over its series' newest
 * points; TTFT p99 from imported histograms with their precision; goodput, tokens/s out, cost per million requests
 * and energy per output token from the figures. Tiles with nothing reported are left out.
 *
 * @example liveTiles(signals, figures, 'chat') // [{ label: 'running', value: 12, unit: 'count' }, …]
 */
export function liveTiles(
  signals: SignalsResponse | null,
  figures: FiguresResponse | null,
  service: string,
): LiveTile[] {
  const sum = (name: string): number | null => {
    let total: number | null = null
    for (const s of signals?.series ?? []) {
      const g = s.points[s.points.length - 1]?.gauges[name]
      if (g !== undefined) total = (total ?? 0) + g.last
    }
    return total
  }
  let kv: number | null = null
  for (const s of signals?.series ?? []) {
    const g = s.points[s.points.length - 1]?.gauges['kvCacheUsage']
    if (g !== undefined) kv = Math.max(kv ?? 0, g.last)
  }
  let ttft: { value: number; precision: string } | null = null
  for (const s of signals?.series ?? []) {
    const h = s.histograms['ttft']
    if (h && h.p99Ms !== null && (ttft === null || h.p99Ms > ttft.value))
      ttft = { value: h.p99Ms, precision: h.precision }
  }
  const f = figures?.services.find((x) => x.service === service)
  const tiles: LiveTile[] = [
    { label: 'running', value: sum('running') ?? sum('inFlight'), unit: 'count' },
    { label: 'waiting', value: sum('waiting') ?? sum('queued'), unit: 'count' },
    { label: 'KV cache', value: kv, unit: 'ratio' },
    ...(ttft
      ? [{ label: 'TTFT p99', value: ttft.value, unit: 'ms' as const, precision: ttft.precision }]
      : []),
    { label: 'goodput', value: figure(f, 'goodput'), unit: 'rate' },
    { label: 'output tokens/s', value: figure(f, 'outputTokensPerSecond'), unit: 'rate' },
    { label: '$ per 1M requests', value: figure(f, 'costPerMillionRequests'), unit: 'usd' },
    { label: 'J per output token', value: figure(f, 'energyPerOutputToken'), unit: 'joules' },
  ]
  return tiles.filter((t) => t.value !== null)
}

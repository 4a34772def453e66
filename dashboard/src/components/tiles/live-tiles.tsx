import { useApi } from '../../hooks/use-api.js'
import { formatCount, formatMs, formatPercent, formatRate } from '../../lib/format.js'
import { liveTiles } from '../../lib/live-transforms.js'
import type { FiguresResponse, LiveTile, SignalsResponse } from '../../lib/live-transforms.js'
import { NumberTile } from './number-tile.js'

/** Props of {@link LiveTiles}. */
export interface LiveTilesProps {
  readonly service: string
  readonly model?: string
  readonly refreshMs: number
}

function show(t: LiveTile): string {
  const v = t.value!
  switch (t.unit) {
    case 'count':
      return formatCount(Math.round(v))
    case 'ratio':
      return formatPercent(v)
    case 'ms':
      return `≈ ${formatMs(v)}`
    case 'rate':
      return formatRate(v)
    case 'usd':
      return `$${v.toFixed(2)}`
    case 'joules':
      return `${v.toFixed(2)} J`
  }
}

/**
 * Live saturation signals and figures of the last 5 minutes (`/api/v1/signals`, `/api/v1/figures`) as number
 * tiles; a latency read from a server's Prometheus buckets says so. Renders nothing when no source reports any.
 *
 * @example <LiveTiles service="chat" refreshMs={10_000} />
 */
export function LiveTiles({ service, model, refreshMs }: LiveTilesProps) {
  const signals = useApi<SignalsResponse>('signals', { service, model, from: '-5m', step: '1m' }, refreshMs)
  const figures = useApi<FiguresResponse>('figures', { service, model, window: '5m' }, refreshMs)
  const tiles = liveTiles(signals.response, figures.response, service)
  if (tiles.length === 0) return null
  return (
    <div className="tiles live-tiles" aria-label="live signals">
      {tiles.map((t) => (
        <NumberTile
          key={t.label}
          label={t.label}
          value={show(t)}
          {...(t.precision ? { hint: `precision: ${t.precision} (estimated, not HDR)` } : {})}
        />
      ))}
    </div>
  )
}

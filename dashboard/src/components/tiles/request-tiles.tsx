import type { ApiState } from '../../hooks/use-api.js'
import type { BreakdownResponse } from '../../lib/api-types.js'
import { formatCount, formatMs, formatPercent, formatRate, quantileLabel } from '../../lib/format.js'
import { phaseSummary, requestStats } from '../../lib/transforms.js'
import { NumberTile } from './number-tile.js'

/** Props of {@link RequestTiles}. */
export interface RequestTilesProps {
  readonly state: ApiState<BreakdownResponse>
  readonly quantiles: readonly string[]
  /** Seconds of the range with data (`dataSeconds` in lib/transforms); the rate divides by it when known. */
  readonly coveredSeconds?: number | null
  /** The phase whose latency the quantile tiles show (`total` when absent); see {@link phaseSummary}. */
  readonly phase?: string
}

/**
 * The request status counts of a range (ok, error, shed, with error classes), the request rate and the
 * latency of the selected phase (total by default) at the selected quantiles, as number tiles.
 *
 * @example <RequestTiles state={useBreakdown(q)} quantiles={['0.5', '0.99']} />
 */
export function RequestTiles({ state, quantiles, coveredSeconds, phase = 'total' }: RequestTilesProps) {
  const b = state.response
  if (!b) {
    return (
      <div
        className="tiles"
        data-state={state.status === 'error' ? 'error' : 'loading'}
        role={state.status === 'error' ? 'alert' : 'status'}
      >
        {state.status === 'error' ? (
          <p className="chart-error">Could not load request counts: {state.error?.message}</p>
        ) : (
          <p className="muted">Loading…</p>
        )}
      </div>
    )
  }
  const s = requestStats(b, coveredSeconds)
  const latency = phaseSummary(b, phase)
  const classes = Object.entries(b.requests.errorClasses).sort((x, y) => y[1] - x[1])
  return (
    <div className="tiles" data-state="ready" aria-label="request status counts">
      <NumberTile label="requests" value={formatCount(s.total)} hint={formatRate(s.ratePerSecond)} />
      <NumberTile label="ok" value={formatCount(b.requests.ok)} />
      <NumberTile
        label="errors"
        value={formatCount(b.requests.error)}
        tone={b.requests.error > 0 ? 'bad' : 'normal'}
        hint={
          classes.length > 0
            ? classes
                .slice(0, 3)
                .map(([k, n]) => `${k}: ${n}`)
                .join(', ')
            : formatPercent(s.errorRate)
        }
      />
      <NumberTile
        label="shed"
        value={formatCount(b.requests.shed)}
        tone={b.requests.shed > 0 ? 'warn' : 'normal'}
        hint={formatPercent(s.shedRate)}
      />
      {quantiles.map((q) => (
        <NumberTile key={q} label={`${phase} ${quantileLabel(q)}`} value={formatMs(latency?.quantiles[q])} />
      ))}
      {b.requests.outputTokens > 0 ? (
        <NumberTile label="output tokens" value={formatCount(b.requests.outputTokens)} />
      ) : null}
    </div>
  )
}

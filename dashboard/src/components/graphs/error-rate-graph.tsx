import { useRequests } from '../../hooks/use-signals.js'
import type { SeriesQuery } from '../../hooks/use-signals.js'
import { availabilitySlo } from '../../lib/controller.js'
import { formatPercent } from '../../lib/format.js'
import { errorRateRows } from '../../lib/signals.js'
import type { SloStatus } from '../../lib/slo-types.js'
import { SeriesGraph } from './series-graph.js'
import type { Threshold } from './series-graph.js'

/** Props of {@link ErrorRateGraph}. */
export interface ErrorRateGraphProps {
  readonly query: SeriesQuery
  readonly slos: readonly SloStatus[]
  readonly refreshMs: number
  readonly emptyText?: string
}

/**
 * The error ratio (errors out of served requests) and the shed ratio per bucket (`GET /api/v1/requests`), with
 * the error ratio an availability SLO of the service allows (1 − objective) as a dashed line.
 *
 * @example <ErrorRateGraph query={{ service: 'chat', from: '-1h' }} slos={slos} refreshMs={10_000} />
 */
export function ErrorRateGraph({ query, slos, refreshMs, emptyText }: ErrorRateGraphProps) {
  const state = useRequests(query, refreshMs)
  const res = state.response
  return (
    <SeriesGraph
      title="Error rate"
      subtitle="errors out of served requests, and shed out of all requests, per bucket"
      chart="error-rate"
      status={state.status}
      error={state.error}
      rows={res ? errorRateRows(res) : []}
      lines={[
        { key: 'errorRatio', label: 'errors', color: '#c0392b' },
        { key: 'shedRatio', label: 'shed', color: '#d9822b', dashed: true },
      ]}
      format={(v) => formatPercent(v)}
      domain={res ? [Date.parse(res.from), Date.parse(res.to)] : null}
      thresholds={allowedErrorLine(slos, query.service)}
      {...(emptyText !== undefined ? { emptyText } : {})}
    />
  )
}

/**
 * The error ratio an availability SLO of the service allows (1 − objective), as a threshold line; none without one.
 *
 * @example allowedErrorLine(slos, 'chat') // [{ y: 0.01, label: 'SLO chat-avail allows 1%', color: '#8e44ad' }]
 */
export function allowedErrorLine(slos: readonly SloStatus[], service: string): Threshold[] {
  const slo = availabilitySlo(slos, service)
  if (!slo) return []
  const allowed = Number((1 - slo.objective).toPrecision(6))
  return [{ y: allowed, label: `SLO ${slo.name} allows ${formatPercent(allowed)}`, color: '#8e44ad' }]
}

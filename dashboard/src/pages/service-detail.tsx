import { BreakdownGraph } from '../components/graphs/breakdown-graph.js'
import { LatencyGraph } from '../components/graphs/latency-graph.js'
import { RequestRateGraph } from '../components/graphs/request-rate-graph.js'
import { PhasePicker, QuantilePicker, TimeRangePicker } from '../components/pickers.js'
import { LiveTiles } from '../components/tiles/live-tiles.js'
import { RequestTiles } from '../components/tiles/request-tiles.js'
import { useBreakdown } from '../hooks/use-breakdown.js'
import { useNow } from '../hooks/use-now.js'
import { useServices } from '../hooks/use-services.js'
import { useTimeseries } from '../hooks/use-timeseries.js'
import type { ServiceRoute } from '../lib/route.js'
import { timeRange } from '../lib/time-range.js'
import { NotFound } from './not-found.js'
import { dataSeconds, emptyRangeText, groupServices } from '../lib/transforms.js'

/** Props of {@link ServiceDetail}. */
export interface ServiceDetailProps {
  readonly route: ServiceRoute
  readonly navigate: (to: ServiceRoute) => void
}

/**
 * One service (and model): request status tiles, the latency quantiles of a chosen phase over time, the
 * request rate, and the per-phase breakdown, for a chosen range and quantiles. Short ranges refresh every
 * 10 s, longer ones every minute.
 *
 * @example <ServiceDetail route={route} navigate={navigate} />
 */
export function ServiceDetail({ route, navigate }: ServiceDetailProps) {
  const range = timeRange(route.range)
  const refreshMs = range.durationMs <= 3_600_000 ? 10_000 : 60_000
  const base = { service: route.service, model: route.model, from: range.from, quantiles: route.quantiles }
  const breakdown = useBreakdown(base, refreshMs)
  const series = useTimeseries({ ...base, phase: route.phase }, refreshMs)
  const services = useServices(60_000)
  const nowMs = useNow(10_000)
  const mine = groupServices(services.response?.services ?? []).filter(
    (g) => g.service === route.service && (!route.model || g.model === route.model),
  )
  const lastSeenMs = mine.length > 0 ? Math.max(...mine.map((g) => g.lastSeenMs)) : null
  const emptyText = emptyRangeText(lastSeenMs, nowMs, range.durationMs)
  if (services.response && mine.length === 0) {
    const name = `${route.service}${route.model ? ` / ${route.model}` : ''}`
    return <NotFound what={name} reason={`No service named ${name} has reported to this collector.`} />
  }
  const phases = [
    'total',
    ...(breakdown.response?.phases ?? [])
      .filter((p) => p.count > 0 && p.phase !== 'total')
      .map((p) => p.phase),
  ]
  return (
    <main className="page">
      <div className="page-head">
        <a href="#/" className="back">
          ← Services
        </a>
        <h1>
          {route.service}
          {route.model ? <span className="model"> / {route.model}</span> : null}
        </h1>
      </div>
      <div className="toolbar">
        <TimeRangePicker value={range.key} onChange={(key) => navigate({ ...route, range: key })} />
        <PhasePicker
          value={route.phase}
          phases={phases}
          onChange={(phase) => navigate({ ...route, phase })}
        />
        <QuantilePicker value={route.quantiles} onChange={(quantiles) => navigate({ ...route, quantiles })} />
      </div>
      <RequestTiles
        state={breakdown}
        quantiles={route.quantiles}
        phase={route.phase}
        coveredSeconds={series.response ? dataSeconds(series.response) : null}
      />
      <LiveTiles
        service={route.service}
        {...(route.model ? { model: route.model } : {})}
        refreshMs={refreshMs}
      />
      <div className="grid">
        <LatencyGraph state={series} phase={route.phase} rangeMs={range.durationMs} emptyText={emptyText} />
        <RequestRateGraph state={series} rangeMs={range.durationMs} emptyText={emptyText} />
        <BreakdownGraph state={breakdown} quantiles={route.quantiles} emptyText={emptyText} />
      </div>
    </main>
  )
}

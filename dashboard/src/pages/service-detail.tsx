import { BreakdownGraph } from '../components/graphs/breakdown-graph.js'
import { ErrorRateGraph } from '../components/graphs/error-rate-graph.js'
import { HeatmapGraph } from '../components/graphs/heatmap-graph.js'
import { LatencyGraph } from '../components/graphs/latency-graph.js'
import { RequestRateGraph } from '../components/graphs/request-rate-graph.js'
import { PhasePicker, QuantilePicker, SplitPicker, TimeRangePicker } from '../components/pickers.js'
import { SignalPanels } from '../components/signal-panels.js'
import {
  SplitErrorRateGraph,
  SplitLatencyGraph,
  SplitPhaseLatency,
  SplitRateGraph,
} from '../components/split-charts.js'
import { LiveTiles } from '../components/tiles/live-tiles.js'
import { RequestTiles } from '../components/tiles/request-tiles.js'
import { useBreakdown } from '../hooks/use-breakdown.js'
import { useHeatmap } from '../hooks/use-heatmap.js'
import { useNow } from '../hooks/use-now.js'
import { useServices } from '../hooks/use-services.js'
import { useSlos } from '../hooks/use-slos.js'
import { useTimeseries, useTimeseriesSplit } from '../hooks/use-timeseries.js'
import { latencySlo } from '../lib/controller.js'
import { formatMs } from '../lib/format.js'
import type { ServiceRoute, SplitLabel } from '../lib/route.js'
import type { SloStatus } from '../lib/slo-types.js'
import { splitValues } from '../lib/split.js'
import type { SplitValues } from '../lib/split.js'
import { timeRange } from '../lib/time-range.js'
import { NotFound } from './not-found.js'
import { dataSeconds, emptyRangeText, groupServices } from '../lib/transforms.js'

/** Props of {@link ServiceDetail}. */
export interface ServiceDetailProps {
  readonly route: ServiceRoute
  readonly navigate: (to: ServiceRoute) => void
}

/**
 * One service (and model): request status tiles, the latency quantiles of a chosen phase over time with its
 * SLO threshold, the request rate, the error rate, TTFT and TPOT for LLM services, the per-phase breakdown,
 * and the live signal panels, for a chosen range and quantiles. Short ranges refresh every
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
  const split = route.split
  const values: SplitValues = split
    ? splitValues(services.response?.services ?? [], route, split, nowMs - range.durationMs)
    : { shown: [], rest: [] }
  const splitSeries = useTimeseriesSplit(
    { ...base, phase: route.phase },
    split ?? 'replica',
    values.shown,
    refreshMs,
  )
  const slos = useSlos(60_000).response?.slos ?? []
  const mine = groupServices(services.response?.services ?? []).filter(
    (g) => g.service === route.service && (!route.model || g.model === route.model),
  )
  const lastSeenMs = mine.length > 0 ? Math.max(...mine.map((g) => g.lastSeenMs)) : null
  const emptyText = emptyRangeText(lastSeenMs, nowMs, range.durationMs)
  if (services.response && mine.length === 0) {
    const name = `${route.service}${route.model ? ` / ${route.model}` : ''}`
    return <NotFound what={name} reason={`No service named ${name} has reported to this collector.`} />
  }
  const seriesQuery = { service: route.service, model: route.model, from: range.from }
  const splitProps = split ? { label: split, values, pending: services.response === null, emptyText } : null
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
        <SplitPicker
          value={route.split}
          onChange={(next) => {
            const { split: _, ...rest } = route
            navigate(next ? { ...rest, split: next } : rest)
          }}
        />
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
        {splitProps ? (
          <SplitLatencyGraph
            {...splitProps}
            states={splitSeries}
            phase={route.phase}
            quantiles={route.quantiles}
            threshold={sloThreshold(slos, route.service, route.phase)}
          />
        ) : (
          <LatencyGraph
            state={series}
            phase={route.phase}
            rangeMs={range.durationMs}
            emptyText={emptyText}
            threshold={sloThreshold(slos, route.service, route.phase)}
          />
        )}
        {split === undefined ? (
          <ServiceHeatmap route={route} refreshMs={refreshMs} emptyText={emptyText} />
        ) : (
          values.shown.map((value) => (
            <ServiceHeatmap
              key={value}
              route={route}
              label={{ name: split, value }}
              refreshMs={refreshMs}
              emptyText={emptyText}
            />
          ))
        )}
        {splitProps ? (
          <SplitRateGraph {...splitProps} states={splitSeries} />
        ) : (
          <RequestRateGraph state={series} rangeMs={range.durationMs} emptyText={emptyText} />
        )}
        {splitProps ? (
          <SplitErrorRateGraph {...splitProps} query={seriesQuery} slos={slos} refreshMs={refreshMs} />
        ) : (
          <ErrorRateGraph query={seriesQuery} slos={slos} refreshMs={refreshMs} emptyText={emptyText} />
        )}
        {['ttft', 'tpot']
          .filter((p) => p !== route.phase && phases.includes(p))
          .map((p) =>
            splitProps ? (
              <SplitPhaseLatency
                key={p}
                {...splitProps}
                query={{ ...base, phase: p }}
                threshold={sloThreshold(slos, route.service, p)}
                refreshMs={refreshMs}
              />
            ) : (
              <PhaseLatency key={p} route={route} phase={p} slos={slos} refreshMs={refreshMs} />
            ),
          )}
        <BreakdownGraph state={breakdown} quantiles={route.quantiles} emptyText={emptyText} />
      </div>
      <SignalPanels query={seriesQuery} slos={slos} refreshMs={refreshMs} />
    </main>
  )
}

/** The latency heatmap of the service, or of one value of the split label (one replica, node or version). */
function ServiceHeatmap(props: {
  route: ServiceRoute
  label?: { name: SplitLabel; value: string }
  refreshMs: number
  emptyText: string
}) {
  const { route, label } = props
  const range = timeRange(route.range)
  const state = useHeatmap(
    {
      service: route.service,
      model: route.model,
      ...(label ? { label } : {}),
      phase: route.phase,
      from: range.from,
    },
    props.refreshMs,
  )
  return (
    <HeatmapGraph
      state={state}
      phase={route.phase}
      rangeMs={range.durationMs}
      emptyText={props.emptyText}
      {...(label ? { split: label } : {})}
    />
  )
}

/** The threshold line of the service's latency SLO for a phase, or null when none applies. */
function sloThreshold(slos: readonly SloStatus[], service: string, phase: string) {
  const slo = latencySlo(slos, service, phase)
  return slo ? { y: slo.thresholdMs, label: `SLO ${slo.name} ${formatMs(slo.thresholdMs)}` } : null
}

/** The latency of one more phase (TTFT or TPOT of an LLM service) beside the chosen one, with its SLO line. */
function PhaseLatency(props: {
  route: ServiceRoute
  phase: string
  slos: readonly SloStatus[]
  refreshMs: number
}) {
  const { route, phase } = props
  const range = timeRange(route.range)
  const state = useTimeseries(
    { service: route.service, model: route.model, from: range.from, quantiles: route.quantiles, phase },
    props.refreshMs,
  )
  return (
    <LatencyGraph
      state={state}
      phase={phase}
      rangeMs={range.durationMs}
      chart={`latency-${phase}`}
      threshold={sloThreshold(props.slos, route.service, phase)}
    />
  )
}

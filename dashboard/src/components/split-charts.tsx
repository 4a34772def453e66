import type { ApiState } from '../hooks/use-api.js'
import { useRequestsSplit } from '../hooks/use-signals.js'
import type { SeriesQuery } from '../hooks/use-signals.js'
import { useTimeseriesSplit } from '../hooks/use-timeseries.js'
import type { TimeseriesQuery } from '../hooks/use-timeseries.js'
import type { TimeseriesResponse } from '../lib/api-types.js'
import { formatMs, formatPercent, formatRate, quantileLabel } from '../lib/format.js'
import { errorRateRows } from '../lib/signals.js'
import type { RequestsResponse } from '../lib/signals.js'
import type { SloStatus } from '../lib/slo-types.js'
import { quantileKey, timeseriesRows } from '../lib/transforms.js'
import { allowedErrorLine } from './graphs/error-rate-graph.js'
import type { Threshold } from './graphs/series-graph.js'
import { SplitSeriesGraph } from './graphs/split-series-graph.js'
import type { SplitChartProps } from './graphs/split-series-graph.js'

const tsSpan = (r: TimeseriesResponse) => ({
  domain: [Date.parse(r.from), Date.parse(r.to)] as const,
  stepMs: r.stepMs,
})

/**
 * The latency of one phase per label value: one line per replica, node or version at the highest chosen quantile,
 * with the SLO threshold.
 *
 * @example <SplitLatencyGraph states={states} phase="total" quantiles={['0.5', '0.99']} label="replica" … />
 */
export function SplitLatencyGraph(
  props: SplitChartProps & {
    readonly states: ReadonlyArray<ApiState<TimeseriesResponse>>
    readonly phase: string
    readonly quantiles: readonly string[]
    readonly threshold: Threshold | null
    readonly chart?: string
  },
) {
  const q = props.quantiles[props.quantiles.length - 1] ?? '0.99'
  return (
    <SplitSeriesGraph
      title={`Latency: ${props.phase} ${quantileLabel(q)}`}
      what={`${quantileLabel(q)} of ${props.phase}`}
      chart={props.chart ?? 'latency'}
      split={props}
      states={props.states}
      rows={timeseriesRows}
      field={quantileKey(q)}
      span={tsSpan}
      format={(v) => formatMs(v)}
      thresholds={props.threshold ? [props.threshold] : []}
      height={280}
    />
  )
}

/**
 * Requests per second per label value, from the same answers as {@link SplitLatencyGraph}; the last, still filling
 * bucket is left out as on the unsplit chart.
 *
 * @example <SplitRateGraph states={states} label="node" values={v} pending={false} />
 */
export function SplitRateGraph(
  props: SplitChartProps & { readonly states: ReadonlyArray<ApiState<TimeseriesResponse>> },
) {
  return (
    <SplitSeriesGraph
      title="Request rate"
      what="requests per second"
      chart="rate"
      split={props}
      states={props.states}
      rows={timeseriesRows}
      field="ratePerSecond"
      span={tsSpan}
      format={(v) => formatRate(v)}
    />
  )
}

/**
 * The error ratio per label value (`GET /api/v1/requests?version=…`), with the ratio an availability SLO allows.
 *
 * @example <SplitErrorRateGraph query={{ service: 'chat', from: '-1h' }} slos={slos} label="version" … />
 */
export function SplitErrorRateGraph(
  props: SplitChartProps & {
    readonly query: SeriesQuery
    readonly slos: readonly SloStatus[]
    readonly refreshMs: number
  },
) {
  const states = useRequestsSplit(props.query, props.label, props.values.shown, props.refreshMs)
  return (
    <SplitSeriesGraph
      title="Error rate"
      what="errors out of served requests"
      chart="error-rate"
      split={props}
      states={states}
      rows={(r: RequestsResponse) => errorRateRows(r)}
      field="errorRatio"
      span={(r) => ({ domain: [Date.parse(r.from), Date.parse(r.to)] as const, stepMs: r.stepMs })}
      format={(v) => formatPercent(v)}
      thresholds={allowedErrorLine(props.slos, props.query.service)}
    />
  )
}

/**
 * {@link SplitLatencyGraph} of one more phase (TTFT or TPOT of an LLM service), fetching its own answers.
 *
 * @example <SplitPhaseLatency query={{ service: 'chat', phase: 'ttft', from: '-1h', quantiles }} … />
 */
export function SplitPhaseLatency(
  props: SplitChartProps & {
    readonly query: TimeseriesQuery
    readonly threshold: Threshold | null
    readonly refreshMs: number
  },
) {
  const states = useTimeseriesSplit(props.query, props.label, props.values.shown, props.refreshMs)
  return (
    <SplitLatencyGraph
      {...props}
      states={states}
      phase={props.query.phase}
      quantiles={props.query.quantiles}
      chart={`latency-${props.query.phase}`}
    />
  )
}

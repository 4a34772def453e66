import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import type { ApiState } from '../../hooks/use-api.js'
import type { TimeseriesResponse } from '../../lib/api-types.js'
import { quantileColor } from '../../lib/colors.js'
import { formatMs, quantileLabel } from '../../lib/format.js'
import { hasTimeseriesData, quantileKey, timeseriesRows } from '../../lib/transforms.js'
import { ChartFrame } from '../chart-frame.js'
import { thresholdLine } from './series-graph.js'
import type { Threshold } from './series-graph.js'
import { timeAxisProps, tooltipTime } from './time-axis.js'

/** Props of {@link LatencyGraph}. */
export interface LatencyGraphProps {
  readonly state: ApiState<TimeseriesResponse>
  readonly phase: string
  /** Length of the selected range, for axis labels. */
  readonly rangeMs: number
  /** Text of the empty state; defaults to "No data in this range". */
  readonly emptyText?: string
  /** The latency SLO's threshold, drawn as a dashed line (the y axis stretches to show it). */
  readonly threshold?: Threshold | null
  /** `data-chart` of the chart element (default `latency`). */
  readonly chart?: string
}

/**
 * One line per selected quantile of one phase over time (ms), and the SLO threshold when one is given. Empty
 * buckets break the lines.
 *
 * @example <LatencyGraph state={useTimeseries(q)} phase="total" rangeMs={3_600_000} />
 */
export function LatencyGraph({ state, phase, rangeMs, emptyText, threshold, chart }: LatencyGraphProps) {
  const ts = state.response
  const rows = ts ? timeseriesRows(ts) : []
  const empty = !ts || !hasTimeseriesData(ts)
  return (
    <ChartFrame
      title={`Latency: ${phase}`}
      subtitle={ts ? `quantiles per ${formatMs(ts.stepMs)} bucket` : undefined}
      status={state.status}
      error={state.error}
      emptyText={emptyText}
      empty={empty}
    >
      {() => (
        <div
          className="chart"
          data-chart={chart ?? 'latency'}
          {...(threshold ? { 'data-threshold': threshold.y } : {})}
        >
          <ResponsiveContainer width="100%" height={280}>
            <LineChart data={rows} margin={{ top: 8, right: 16, bottom: 0, left: 8 }}>
              <CartesianGrid stroke="#e6e9ef" vertical={false} />
              <XAxis
                {...timeAxisProps(
                  ts ? [Date.parse(ts.from), Date.parse(ts.to)] : ['dataMin', 'dataMax'],
                  rangeMs,
                )}
              />
              <YAxis tickFormatter={(v: number) => formatMs(v)} stroke="#7a8394" fontSize={12} width={72} />
              <Tooltip
                labelFormatter={tooltipTime()}
                formatter={(v, name) => [formatMs(typeof v === 'number' ? v : null), name]}
              />
              <Legend />
              {threshold ? thresholdLine(threshold) : null}
              {(ts?.quantiles ?? []).map((q) => (
                <Line
                  key={q}
                  type="monotone"
                  dataKey={quantileKey(q)}
                  name={quantileLabel(q)}
                  stroke={quantileColor(q)}
                  strokeWidth={2}
                  dot={false}
                  isAnimationActive={false}
                />
              ))}
            </LineChart>
          </ResponsiveContainer>
        </div>
      )}
    </ChartFrame>
  )
}

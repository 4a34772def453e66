import { Area, AreaChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import type { ApiState } from '../../hooks/use-api.js'
import type { TimeseriesResponse } from '../../lib/api-types.js'
import { formatRate } from '../../lib/format.js'
import { hasTimeseriesData, timeseriesRows } from '../../lib/transforms.js'
import { ChartFrame } from '../chart-frame.js'
import { timeAxisProps, tooltipTime } from './time-axis.js'

/** Props of {@link RequestRateGraph}. */
export interface RequestRateGraphProps {
  readonly state: ApiState<TimeseriesResponse>
  readonly rangeMs: number
  /** Text of the empty state; defaults to "No data in this range". */
  readonly emptyText?: string
}

/**
 * Requests per second over time, from the counts of the same time series the latency chart draws.
 *
 * @example <RequestRateGraph state={useTimeseries(q)} rangeMs={3_600_000} />
 */
export function RequestRateGraph({ state, rangeMs, emptyText }: RequestRateGraphProps) {
  const ts = state.response
  const rows = ts ? timeseriesRows(ts) : []
  return (
    <ChartFrame
      title="Request rate"
      subtitle="requests per second"
      status={state.status}
      error={state.error}
      emptyText={emptyText}
      empty={!ts || !hasTimeseriesData(ts)}
    >
      {() => (
        <div className="chart" data-chart="rate">
          <ResponsiveContainer width="100%" height={180}>
            <AreaChart data={rows} margin={{ top: 8, right: 16, bottom: 0, left: 8 }}>
              <CartesianGrid stroke="#e6e9ef" vertical={false} />
              <XAxis
                {...timeAxisProps(
                  ts ? [Date.parse(ts.from), Date.parse(ts.to)] : ['dataMin', 'dataMax'],
                  rangeMs,
                )}
              />
              <YAxis tickFormatter={(v: number) => formatRate(v)} stroke="#7a8394" fontSize={12} width={72} />
              <Tooltip
                labelFormatter={tooltipTime()}
                formatter={(v) => [formatRate(typeof v === 'number' ? v : null), 'rate']}
              />
              <Area
                type="monotone"
                dataKey="ratePerSecond"
                stroke="#3a6ea5"
                fill="#3a6ea5"
                fillOpacity={0.15}
                isAnimationActive={false}
              />
            </AreaChart>
          </ResponsiveContainer>
        </div>
      )}
    </ChartFrame>
  )
}

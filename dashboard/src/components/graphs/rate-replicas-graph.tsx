import {
  Area,
  CartesianGrid,
  ComposedChart,
  Legend,
  Line,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts'
import type { ApiState } from '../../hooks/use-api.js'
import type { TimeseriesResponse } from '../../lib/api-types.js'
import type { ReplicaStep } from '../../lib/controller.js'
import { stepAt } from '../../lib/controller.js'
import { formatRate } from '../../lib/format.js'
import { timeseriesRows } from '../../lib/transforms.js'
import { ChartFrame } from '../chart-frame.js'
import { AXIS_STROKE, timeAxisProps, tooltipTime } from './time-axis.js'

/** Props of {@link RateReplicasGraph}. */
export interface RateReplicasGraphProps {
  /** The request rate of the target's service (null: the target's service is unknown). */
  readonly rate: ApiState<TimeseriesResponse> | null
  /** Desired replicas as a step line (from the decisions' setpoints). */
  readonly replicas: readonly ReplicaStep[]
  readonly status: ApiState<unknown>['status']
  readonly domain: readonly [number, number]
}

/**
 * The request rate of the target's service (area, left axis) and the desired replica count the controller set
 * or recommended (step line, right axis), over the same range as the decision timeline.
 *
 * @example <RateReplicasGraph rate={ts} replicas={replicaSteps(…)} status="success" domain={[from, to]} />
 */
export function RateReplicasGraph({ rate, replicas, status, domain }: RateReplicasGraphProps) {
  const rows = rate?.response ? timeseriesRows(rate.response) : []
  const hasRate = rows.some((r) => r.count > 0)
  // One data array for both series (recharts' tooltip reads every series at the hovered index): the desired
  // replicas at each rate bucket, or the steps alone when there is no rate to draw.
  const data: ReadonlyArray<{ tMs: number; desired: number | null; ratePerSecond?: number | null }> = hasRate
    ? rows.map((r) => ({ ...r, desired: stepAt(replicas, r.tMs) }))
    : replicas
  return (
    <ChartFrame
      title="Request rate and replicas"
      subtitle="requests per second, and the desired replicas the controller set (or recommended in observe mode)"
      status={status}
      error={null}
      empty={!hasRate && replicas.length === 0}
    >
      {() => (
        <div className="chart" data-chart="rate-replicas" data-replica-steps={replicas.length}>
          <ResponsiveContainer width="100%" height={220}>
            <ComposedChart data={[...data]} margin={{ top: 8, right: 8, bottom: 0, left: 8 }}>
              <CartesianGrid stroke="#e6e9ef" vertical={false} />
              <XAxis {...timeAxisProps([domain[0], domain[1]])} />
              <YAxis
                yAxisId="rate"
                tickFormatter={(v: number) => formatRate(v)}
                stroke={AXIS_STROKE}
                fontSize={12}
                width={72}
              />
              <YAxis
                yAxisId="replicas"
                orientation="right"
                allowDecimals={false}
                stroke={AXIS_STROKE}
                fontSize={12}
                width={40}
              />
              <Tooltip labelFormatter={tooltipTime()} />
              <Legend />
              <Area
                yAxisId="rate"
                type="monotone"
                dataKey="ratePerSecond"
                name="requests/s"
                stroke="#3a6ea5"
                fill="#3a6ea5"
                fillOpacity={0.15}
                isAnimationActive={false}
              />
              <Line
                yAxisId="replicas"
                type="stepAfter"
                dataKey="desired"
                name="desired replicas"
                stroke="#d9822b"
                strokeWidth={2}
                dot={false}
                isAnimationActive={false}
              />
            </ComposedChart>
          </ResponsiveContainer>
        </div>
      )}
    </ChartFrame>
  )
}

import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import type { ApiError } from '../../api.js'
import type { LoadStatus } from '../../hooks/use-api.js'
import { formatUnit } from '../../lib/gpu-transforms.js'
import type { GpuChartRow } from '../../lib/gpu-transforms.js'
import { ChartFrame } from '../chart-frame.js'
import { timeAxisProps, tooltipTime } from './time-axis.js'

/** Props of {@link GpuUsageGraph}. */
export interface GpuUsageGraphProps {
  readonly title: string
  readonly subtitle?: string
  readonly gpuKey: string
  readonly rows: readonly GpuChartRow[]
  readonly status: LoadStatus
  readonly error: ApiError | null
  readonly fromMs: number
  readonly toMs: number
}

/**
 * One GPU's utilization (mean and max per bucket, %) and memory used (GiB, right axis) over time. Buckets without
 * a report leave gaps.
 *
 * @example <GpuUsageGraph title="GPU 0" gpuKey={key} rows={gpuChartRows(util, mem, key)} status="success" error={null} fromMs={a} toMs={b} />
 */
export function GpuUsageGraph(props: GpuUsageGraphProps) {
  const span = props.toMs - props.fromMs
  return (
    <ChartFrame
      title={props.title}
      subtitle={props.subtitle}
      status={props.status}
      error={props.error}
      empty={props.rows.length === 0}
    >
      {() => (
        <div className="chart" data-chart="gpu-usage" data-gpu={props.gpuKey}>
          <ResponsiveContainer width="100%" height={200}>
            <LineChart data={[...props.rows]} margin={{ top: 8, right: 8, bottom: 0, left: 8 }}>
              <CartesianGrid stroke="#e6e9ef" vertical={false} />
              <XAxis {...timeAxisProps([props.fromMs, props.toMs], span)} />
              <YAxis
                yAxisId="pct"
                domain={[0, 100]}
                tickFormatter={(v: number) => `${v}%`}
                stroke="#7a8394"
                fontSize={12}
                width={48}
              />
              <YAxis
                yAxisId="mem"
                orientation="right"
                tickFormatter={(v: number) => `${v} GiB`}
                stroke="#7a8394"
                fontSize={12}
                width={64}
              />
              <Tooltip
                labelFormatter={tooltipTime()}
                formatter={(v, name) => [
                  formatUnit(typeof v === 'number' ? v : null, name === 'memory used' ? 'GiB' : '%'),
                  name,
                ]}
              />
              <Legend verticalAlign="top" height={24} iconType="plainline" />
              <Line
                yAxisId="pct"
                type="monotone"
                dataKey="utilPct"
                name="utilization (mean)"
                stroke="#3a6ea5"
                dot={false}
                connectNulls={false}
                isAnimationActive={false}
              />
              <Line
                yAxisId="pct"
                type="monotone"
                dataKey="utilMaxPct"
                name="utilization (max)"
                stroke="#9bb7d6"
                strokeDasharray="4 3"
                dot={false}
                connectNulls={false}
                isAnimationActive={false}
              />
              <Line
                yAxisId="mem"
                type="monotone"
                dataKey="memUsedGiB"
                name="memory used"
                stroke="#c0703a"
                dot={false}
                connectNulls={false}
                isAnimationActive={false}
              />
            </LineChart>
          </ResponsiveContainer>
        </div>
      )}
    </ChartFrame>
  )
}

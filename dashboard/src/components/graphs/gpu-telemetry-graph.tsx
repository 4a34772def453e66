import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import type { ApiError } from '../../api.js'
import type { LoadStatus } from '../../hooks/use-api.js'
import { chartsWithData } from '../../lib/gpu-telemetry.js'
import type { TelemetryRow } from '../../lib/gpu-telemetry.js'
import { formatUnit } from '../../lib/gpu-transforms.js'
import { ChartFrame } from '../chart-frame.js'
import { AXIS_STROKE, timeAxisProps, tooltipTime } from './time-axis.js'

const COLORS = ['#3a6ea5', '#c0703a']

/** Props of {@link GpuTelemetryGraph}. */
export interface GpuTelemetryGraphProps {
  readonly title: string
  readonly gpuKey: string
  readonly rows: readonly TelemetryRow[]
  readonly status: LoadStatus
  readonly error: ApiError | null
  readonly fromMs: number
  readonly toMs: number
}

/**
 * One GPU's power, temperature, clocks and tensor activity over time (bucket means), one small chart per
 * quantity the GPU reports; quantities it never reports are left out, and a GPU that reports none of them
 * shows the empty state.
 *
 * @example <GpuTelemetryGraph title="node-0 · GPU 0" gpuKey={key} rows={telemetryRows(byField, key)} status="success" error={null} fromMs={a} toMs={b} />
 */
export function GpuTelemetryGraph(props: GpuTelemetryGraphProps) {
  const charts = chartsWithData(props.rows)
  const span = props.toMs - props.fromMs
  return (
    <ChartFrame
      title={props.title}
      subtitle="power, temperature, clocks and tensor activity (mean per bucket)"
      status={props.status}
      error={props.error}
      empty={charts.length === 0}
      emptyText="This GPU reports no power, temperature, clocks or tensor activity in this range."
    >
      {() => (
        <div className="gpu-telemetry" data-gpu={props.gpuKey}>
          {charts.map((c) => (
            <div key={c.chart} className="chart" data-chart={c.chart} data-gpu={props.gpuKey}>
              <h3 className="chart-title">
                {c.title} <span className="muted">({c.unit})</span>
              </h3>
              <ResponsiveContainer width="100%" height={140}>
                <LineChart data={[...props.rows]} margin={{ top: 4, right: 8, bottom: 0, left: 0 }}>
                  <CartesianGrid stroke="#e6e9ef" vertical={false} />
                  <XAxis {...timeAxisProps([props.fromMs, props.toMs], span)} />
                  <YAxis
                    domain={c.unit === '%' ? [0, 100] : ['auto', 'auto']}
                    tickFormatter={(v: number) => formatUnit(v, c.unit)}
                    stroke={AXIS_STROKE}
                    fontSize={11}
                    width={64}
                  />
                  <Tooltip
                    labelFormatter={tooltipTime()}
                    formatter={(v, name) => [formatUnit(typeof v === 'number' ? v : null, c.unit), name]}
                  />
                  {c.fields.length > 1 ? (
                    <Legend verticalAlign="top" height={20} iconType="plainline" />
                  ) : null}
                  {c.fields.map((f, k) => (
                    <Line
                      key={f.field}
                      type="monotone"
                      dataKey={f.field}
                      name={f.name}
                      stroke={COLORS[k % COLORS.length]}
                      dot={false}
                      connectNulls={false}
                      isAnimationActive={false}
                    />
                  ))}
                </LineChart>
              </ResponsiveContainer>
            </div>
          ))}
        </div>
      )}
    </ChartFrame>
  )
}

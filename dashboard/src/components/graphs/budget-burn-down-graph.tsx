import {
  Area,
  AreaChart,
  CartesianGrid,
  ReferenceLine,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts'
import type { ApiState } from '../../hooks/use-api.js'
import { burnDownDomain, burnDownRows, burnDownTicks } from '../../lib/slo.js'
import type { SloDetailResponse } from '../../lib/slo-types.js'
import { ChartFrame } from '../chart-frame.js'
import { timeAxisProps, tooltipTime } from './time-axis.js'

/** Props of {@link BudgetBurnDownGraph}. */
export interface BudgetBurnDownGraphProps {
  readonly state: ApiState<SloDetailResponse>
}

/**
 * The error budget left over the SLO window (the API's `burnDown` series, zoomed to the data, by the minute
 * when the data is recent): 100% where the data starts, falling as bad events spend it, below zero when
 * overspent; y ticks evenly spaced.
 *
 * @example <BudgetBurnDownGraph state={useSlo('chat-latency', 10_000)} />
 */
export function BudgetBurnDownGraph({ state }: BudgetBurnDownGraphProps) {
  const detail = state.response
  const rows = detail ? burnDownRows(detail) : []
  const domain = burnDownDomain(rows)
  const first = rows[0]?.tMs ?? 0
  const last = rows.at(-1)?.tMs ?? 0
  const spanMs = last - first
  const overspent = domain[0] < 0
  return (
    <ChartFrame
      title="Error budget burn-down"
      subtitle={
        detail
          ? `remaining budget of the ${detail.window} window, since its data began`
          : 'remaining budget since the data began'
      }
      status={state.status}
      error={state.error}
      empty={rows.length === 0}
      emptyText="No evaluation yet: the burn-down appears after the first evaluation"
    >
      {() => (
        <div className="chart" data-chart="burn-down">
          <ResponsiveContainer width="100%" height={220}>
            <AreaChart data={rows} margin={{ top: 8, right: 16, bottom: 0, left: 8 }}>
              <CartesianGrid stroke="#e6e9ef" vertical={false} />
              <XAxis {...timeAxisProps([first, last], spanMs)} />
              <YAxis
                domain={domain}
                ticks={burnDownTicks(domain)}
                interval={0}
                tickFormatter={(v: number) => `${v}%`}
                stroke="#7a8394"
                fontSize={12}
                width={56}
              />
              {overspent ? <ReferenceLine y={0} stroke="#c0392b" strokeDasharray="4 3" /> : null}
              <Tooltip
                labelFormatter={tooltipTime('minute')}
                formatter={(v) => [
                  typeof v === 'number' ? `${Number(v.toPrecision(4))}%` : '–',
                  'budget remaining',
                ]}
              />
              <Area
                type="stepAfter"
                dataKey="remainingPct"
                stroke={overspent ? '#c0392b' : '#2f855a'}
                fill={overspent ? '#c0392b' : '#2f855a'}
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

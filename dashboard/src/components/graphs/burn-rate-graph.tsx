import {
  Bar,
  CartesianGrid,
  ComposedChart,
  Legend,
  ResponsiveContainer,
  Scatter,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts'
import type { ApiState } from '../../hooks/use-api.js'
import { burnRateRows, formatBurnRate } from '../../lib/slo.js'
import type { SloDetailResponse } from '../../lib/slo-types.js'
import { ChartFrame } from '../chart-frame.js'

/** Props of {@link BurnRateGraph}. */
export interface BurnRateGraphProps {
  readonly state: ApiState<SloDetailResponse>
}

const LONG = '#3a6ea5'
const SHORT = '#8fb3d9'
const FACTOR = '#c0392b'

/**
 * Burn rates per alert tier: the long and short windows' rates side by side, and the tier's threshold
 * (its factor) as a red mark. A tier's condition holds when both bars reach above its mark.
 *
 * @example <BurnRateGraph state={useSlo('chat-latency', 10_000)} />
 */
export function BurnRateGraph({ state }: BurnRateGraphProps) {
  const detail = state.response
  const rows = detail ? burnRateRows(detail) : []
  return (
    <ChartFrame
      title="Burn rates per alert tier"
      subtitle="long and short window against the tier's threshold (1× spends the budget exactly over the window)"
      status={state.status}
      error={state.error}
      empty={rows.length === 0 || detail?.evaluatedAt === null}
      emptyText="No evaluation yet"
    >
      {() => (
        <div className="chart" data-chart="burn-rates">
          <ResponsiveContainer width="100%" height={240}>
            <ComposedChart data={rows} margin={{ top: 8, right: 16, bottom: 0, left: 8 }}>
              <CartesianGrid stroke="#e6e9ef" vertical={false} />
              <XAxis dataKey="label" stroke="#7a8394" fontSize={12} interval={0} />
              <YAxis tickFormatter={(v: number) => `${v}×`} stroke="#7a8394" fontSize={12} width={56} />
              <Tooltip formatter={(v, name) => [formatBurnRate(typeof v === 'number' ? v : null), name]} />
              <Legend />
              <Bar dataKey="long" name="long window" fill={LONG} isAnimationActive={false} />
              <Bar dataKey="short" name="short window" fill={SHORT} isAnimationActive={false} />
              <Scatter
                dataKey="factor"
                name="threshold"
                fill={FACTOR}
                shape="diamond"
                isAnimationActive={false}
              />
            </ComposedChart>
          </ResponsiveContainer>
        </div>
      )}
    </ChartFrame>
  )
}

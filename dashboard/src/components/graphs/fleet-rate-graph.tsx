import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import type { ApiError } from '../../api.js'
import type { LoadStatus } from '../../hooks/use-api.js'
import { formatRate } from '../../lib/format.js'
import { FLEET_RATE_CHART_TITLE } from '../../lib/fleet.js'
import type { FleetRow } from '../../lib/fleet.js'
import { ChartFrame } from '../chart-frame.js'

/** Props of {@link FleetRateGraph}. */
export interface FleetRateGraphProps {
  readonly rows: readonly FleetRow[]
  readonly status: LoadStatus
  readonly error: ApiError | null
}

const RATE = '#3a6ea5'
const GOODPUT = '#2e8b57'

/**
 * Request rate and goodput per service, side by side, in the fleet table's order (what needs attention first).
 * A gap between the bars is traffic that errored, was shed or missed a latency SLO.
 *
 * @example <FleetRateGraph rows={rows} status="success" error={null} />
 */
export function FleetRateGraph({ rows, status, error }: FleetRateGraphProps) {
  const data = rows
    .filter((r) => r.ratePerSecond !== null)
    .map((r) => ({ service: r.service, rate: r.ratePerSecond, goodput: r.goodputPerSecond }))
  return (
    <ChartFrame
      title={FLEET_RATE_CHART_TITLE}
      subtitle="per service over the time with data in the range; goodput counts ok requests within the latency SLOs"
      status={status}
      error={error}
      empty={data.length === 0}
    >
      {() => (
        <div className="chart" data-chart="fleet-rate">
          <ResponsiveContainer width="100%" height={220}>
            <BarChart data={data} margin={{ top: 8, right: 16, bottom: 0, left: 8 }}>
              <CartesianGrid stroke="#e6e9ef" vertical={false} />
              <XAxis dataKey="service" stroke="#5f6878" fontSize={12} interval={0} />
              <YAxis tickFormatter={(v: number) => formatRate(v)} stroke="#5f6878" fontSize={12} width={64} />
              <Tooltip formatter={(v, name) => [formatRate(typeof v === 'number' ? v : null), name]} />
              <Legend />
              <Bar dataKey="rate" name="requests" fill={RATE} isAnimationActive={false} />
              <Bar dataKey="goodput" name="goodput" fill={GOODPUT} isAnimationActive={false} />
            </BarChart>
          </ResponsiveContainer>
        </div>
      )}
    </ChartFrame>
  )
}

import { Bar, BarChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import type { ApiState } from '../../hooks/use-api.js'
import type { BreakdownResponse } from '../../lib/api-types.js'
import { phaseColor } from '../../lib/colors.js'
import { formatCount, formatMs, formatPercent, quantileLabel } from '../../lib/format.js'
import { phaseTableRows, shareBar } from '../../lib/transforms.js'
import { ChartFrame } from '../chart-frame.js'

/** Props of {@link BreakdownGraph}. */
export interface BreakdownGraphProps {
  readonly state: ApiState<BreakdownResponse>
  readonly quantiles: readonly string[]
  /** Text of the empty state; defaults to "No data in this range". */
  readonly emptyText?: string
}

/**
 * Where the time of a request goes: a stacked bar of each phase's share of total time, and a table of each
 * phase's count, mean and selected quantiles (ttft/tpot are listed in the table only; they are not shares).
 *
 * @example <BreakdownGraph state={useBreakdown(q)} quantiles={['0.5', '0.99']} />
 */
export function BreakdownGraph({ state, quantiles, emptyText }: BreakdownGraphProps) {
  const b = state.response
  const bar = b ? shareBar(b) : { segments: [], row: {} }
  const rows = b ? phaseTableRows(b) : []
  return (
    <ChartFrame
      title="Breakdown by phase"
      subtitle="share of total request time, and per-phase latency"
      status={state.status}
      error={state.error}
      emptyText={emptyText}
      empty={rows.length === 0}
    >
      {() => (
        <div data-chart="breakdown">
          {bar.segments.length > 0 ? (
            <>
              <div className="chart">
                <ResponsiveContainer width="100%" height={64}>
                  <BarChart
                    data={[bar.row]}
                    layout="vertical"
                    margin={{ top: 4, right: 16, bottom: 4, left: 16 }}
                    barSize={28}
                  >
                    <XAxis type="number" domain={[0, (max: number) => Math.max(100, max)]} hide />
                    <YAxis type="category" dataKey="name" hide />
                    <Tooltip formatter={(v, name) => [`${typeof v === 'number' ? v : '–'}%`, name]} />
                    {bar.segments.map((s) => (
                      <Bar
                        key={s.phase}
                        dataKey={s.phase}
                        name={s.phase}
                        stackId="share"
                        fill={phaseColor(s.phase)}
                        isAnimationActive={false}
                      />
                    ))}
                  </BarChart>
                </ResponsiveContainer>
              </div>
              <ul className="share-legend">
                {bar.segments.map((s) => (
                  <li key={s.phase}>
                    <span className="swatch" style={{ background: phaseColor(s.phase) }} />
                    {s.phase} <strong>{formatPercent(s.share)}</strong>
                    {s.meanMs !== null ? <span className="muted"> · mean {formatMs(s.meanMs)}</span> : null}
                  </li>
                ))}
              </ul>
            </>
          ) : (
            <p className="muted">No phase timings were reported, only totals.</p>
          )}
          <table className="table phase-table">
            <thead>
              <tr>
                <th>phase</th>
                <th className="num">count</th>
                <th className="num">share</th>
                <th className="num">mean</th>
                {quantiles.map((q) => (
                  <th key={q} className="num">
                    {quantileLabel(q)}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.phase} className={r.phase === 'total' ? 'total-row' : undefined}>
                  <td>
                    <span className="swatch" style={{ background: phaseColor(r.phase) }} />
                    {r.phase}
                  </td>
                  <td className="num">{formatCount(r.count)}</td>
                  <td className="num">{formatPercent(r.share)}</td>
                  <td className="num">{formatMs(r.meanMs)}</td>
                  {quantiles.map((q) => (
                    <td key={q} className="num">
                      {formatMs(r.quantiles[q])}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </ChartFrame>
  )
}

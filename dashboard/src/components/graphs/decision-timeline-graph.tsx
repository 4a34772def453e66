import {
  CartesianGrid,
  ComposedChart,
  Legend,
  Line,
  ReferenceLine,
  ResponsiveContainer,
  Scatter,
  XAxis,
  YAxis,
} from 'recharts'
import type { ApiState } from '../../hooks/use-api.js'
import type { TimeseriesResponse } from '../../lib/api-types.js'
import type { DecisionsResponse, TimelineMark } from '../../lib/controller.js'
import { timelineMarks } from '../../lib/controller.js'
import { formatMs } from '../../lib/format.js'
import { timeseriesRows } from '../../lib/transforms.js'
import { ChartFrame } from '../chart-frame.js'
import { thresholdLine } from './series-graph.js'
import type { Threshold } from './series-graph.js'
import { AXIS_STROKE, timeAxisProps, tooltipTime } from './time-axis.js'

/**
 * A decision's dot: its outcome's colour, and its time, outcome and reason as the SVG title (the browser's own
 * tooltip, which also reaches screen readers).
 */
function DecisionDot(props: { cx?: number; cy?: number; mark?: TimelineMark }) {
  const m = props.mark
  if (!m || props.cx === undefined || props.cy === undefined) return <g />
  return (
    <circle
      cx={props.cx}
      cy={props.cy}
      r={5}
      fill={OUTCOME_COLORS[m.outcome] ?? AXIS_STROKE}
      stroke="#1f2a44"
      className="decision-dot"
      data-decision={m.id}
    >
      <title>{`${tooltipTime()(m.tMs)} #${m.id} ${m.outcome} (p99 ${formatMs(m.p99Ms)}): ${m.reason}`}</title>
    </circle>
  )
}

/** The colour of a decision's outcome on the timeline and in the table (≥ 4.5:1 on the page's greys: axe-core). */
export const OUTCOME_COLORS: Readonly<Record<string, string>> = {
  applied: '#1e6b41',
  failed: '#c0392b',
  skipped: '#5f6878',
  pending: '#9a5a12',
  unknown: '#6a4a9a',
}

/** Props of {@link DecisionTimelineGraph}. */
export interface DecisionTimelineGraphProps {
  readonly decisions: ApiState<DecisionsResponse>
  /** The p99 of the target's service over the range (null: the target's service is unknown). */
  readonly latency: ApiState<TimeseriesResponse> | null
  readonly threshold: Threshold | null
  readonly domain: readonly [number, number]
}

/**
 * The decision timeline: every decision as a vertical mark coloured by its outcome (applied, skipped in observe
 * mode, failed), over the service's p99 and the SLO threshold, with a dot at the p99 the decision saw. Hovering
 * a decision's dot shows its time, outcome and reason with their outcome and reason; the table below has each one's actions.
 *
 * @example <DecisionTimelineGraph decisions={d} latency={ts} threshold={{ y: 450, label: 'SLO' }} domain={[from, to]} />
 */
export function DecisionTimelineGraph({ decisions, latency, threshold, domain }: DecisionTimelineGraphProps) {
  const marks = decisions.response ? timelineMarks(decisions.response.decisions) : []
  const rows = latency?.response ? timeseriesRows(latency.response) : []
  const hasP99 = rows.some((r) => r['p99'] !== null && r['p99'] !== undefined)
  const dots = marks.filter((m): m is TimelineMark & { p99Ms: number } => m.p99Ms !== null)
  return (
    <ChartFrame
      title="Decision timeline"
      subtitle="each decision (green applied, grey observe-only or skipped, red failed, purple unknown) over the p99 and the SLO line"
      status={decisions.status}
      error={decisions.error}
      empty={marks.length === 0 && !hasP99}
      emptyText="No decisions and no latency in this range"
    >
      {() => (
        <div className="chart" data-chart="decision-timeline" data-marks={marks.length}>
          <ResponsiveContainer width="100%" height={280}>
            <ComposedChart data={rows} margin={{ top: 16, right: 16, bottom: 0, left: 8 }}>
              <CartesianGrid stroke="#e6e9ef" vertical={false} />
              <XAxis {...timeAxisProps([domain[0], domain[1]])} />
              <YAxis
                dataKey="p99"
                tickFormatter={(v: number) => formatMs(v)}
                stroke={AXIS_STROKE}
                fontSize={12}
                width={72}
              />
              <Legend />
              {threshold ? thresholdLine(threshold) : null}
              {marks.map((m) => (
                <ReferenceLine
                  key={m.id}
                  x={m.tMs}
                  stroke={OUTCOME_COLORS[m.outcome] ?? AXIS_STROKE}
                  strokeOpacity={0.7}
                  className={`decision-mark decision-${m.outcome}`}
                  ifOverflow="hidden"
                />
              ))}
              <Line
                type="monotone"
                dataKey="p99"
                name="p99"
                stroke="#3a6ea5"
                strokeWidth={2}
                dot={false}
                isAnimationActive={false}
              />
              {dots.length > 0 ? (
                <Scatter
                  data={dots.map((d) => ({ tMs: d.tMs, p99: d.p99Ms, mark: d }))}
                  dataKey="p99"
                  name="p99 the decision saw"
                  fill="#1f2a44"
                  isAnimationActive={false}
                  shape={DecisionDot}
                />
              ) : null}
            </ComposedChart>
          </ResponsiveContainer>
        </div>
      )}
    </ChartFrame>
  )
}

import {
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ReferenceLine,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts'
import type { ApiError } from '../../api.js'
import type { LoadStatus } from '../../hooks/use-api.js'
import type { SignalRow } from '../../lib/signals.js'
import { lastValue } from '../../lib/signals.js'
import { ChartFrame } from '../chart-frame.js'
import { AXIS_STROKE, timeAxisProps, tooltipTime } from './time-axis.js'

/** One line of a {@link SeriesGraph}. */
export interface SeriesLine {
  readonly key: string
  readonly label: string
  readonly color: string
  readonly dashed?: boolean
  /** Draw as a step that holds its value until the next point (setpoints). */
  readonly step?: boolean
}

/** A horizontal line across the chart (an SLO threshold). */
export interface Threshold {
  readonly y: number
  readonly label: string
  readonly color?: string
}

/**
 * The dashed line of a threshold, as a direct child of a recharts chart (recharts reads its direct children,
 * so this is a function, not a component). The y axis stretches to show it.
 *
 * @example <LineChart …>{thresholdLine({ y: 450, label: 'SLO 450 ms' })}</LineChart>
 */
export function thresholdLine(t: Threshold) {
  const color = t.color ?? '#c0392b'
  return (
    <ReferenceLine
      key={t.label}
      y={t.y}
      stroke={color}
      strokeDasharray="6 4"
      ifOverflow="extendDomain"
      label={{ value: t.label, position: 'insideTopRight', fontSize: 11, fill: color }}
    />
  )
}

/** Props of {@link SeriesGraph}. */
export interface SeriesGraphProps {
  readonly title: string
  readonly subtitle?: string
  readonly status: LoadStatus
  readonly error: ApiError | null
  readonly rows: readonly SignalRow[]
  readonly lines: readonly SeriesLine[]
  /** Formats values on the axis, the tooltip and the "now" figure. */
  readonly format: (v: number) => string
  /** The range the x axis spans, epoch ms. */
  readonly domain: readonly [number, number] | null
  /** `data-chart` of the chart element, for tests. */
  readonly chart: string
  readonly thresholds?: readonly Threshold[]
  readonly emptyText?: string
  readonly height?: number
  /**
   * The label the lines are split by (`replica`), set as `data-split`; the chart then also carries each line's
   * drawn points as `data-series` (`[[label, [[tMs, value], …]], …]`), which tests compare with the API.
   */
  readonly split?: string
}

/**
 * A time-series panel of a few lines over one range, with optional threshold lines (an SLO) and the newest value
 * of the first line in the header. Each data point is drawn as a dot, so gaps stay visible. Loading, error and
 * empty states come from {@link ChartFrame}.
 *
 * @example <SeriesGraph title="KV-cache use" chart="kv-cache" rows={rows} lines={[{ key: 'kv', label: 'KV', color: '#3a6ea5' }]} … />
 */
export function SeriesGraph(props: SeriesGraphProps) {
  const { rows, lines, format } = props
  const empty = !lines.some((l) => lastValue(rows, l.key) !== null)
  const now = lines[0] ? lastValue(rows, lines[0].key) : null
  const domain: [number, number] | ['dataMin', 'dataMax'] = props.domain
    ? [props.domain[0], props.domain[1]]
    : ['dataMin', 'dataMax']
  return (
    <ChartFrame
      title={props.title}
      subtitle={props.subtitle}
      status={props.status}
      error={props.error}
      empty={empty}
      {...(props.emptyText !== undefined ? { emptyText: props.emptyText } : {})}
      actions={
        now !== null && lines[0] ? (
          <span className="now-value" data-now={now}>
            {lines[0].label} now {format(now)}
          </span>
        ) : undefined
      }
    >
      {() => (
        <div
          className="chart"
          data-chart={props.chart}
          data-points={rows.length}
          {...(props.split ? { 'data-split': props.split, 'data-series': drawnSeries(rows, lines) } : {})}
        >
          <ResponsiveContainer width="100%" height={props.height ?? 200}>
            <LineChart data={[...rows]} margin={{ top: 8, right: 16, bottom: 0, left: 8 }}>
              <CartesianGrid stroke="#e6e9ef" vertical={false} />
              <XAxis {...timeAxisProps(domain)} />
              <YAxis tickFormatter={(v: number) => format(v)} stroke={AXIS_STROKE} fontSize={12} width={72} />
              <Tooltip
                labelFormatter={tooltipTime()}
                formatter={(v, name) => [typeof v === 'number' ? format(v) : '–', name]}
              />
              {lines.length > 1 || (props.thresholds?.length ?? 0) > 0 ? <Legend /> : null}
              {(props.thresholds ?? []).map(thresholdLine)}
              {lines.map((l) => (
                <Line
                  key={l.key}
                  type={l.step ? 'stepAfter' : 'monotone'}
                  dataKey={l.key}
                  name={l.label}
                  stroke={l.color}
                  strokeWidth={2}
                  {...(l.dashed ? { strokeDasharray: '5 3' } : {})}
                  dot={l.step ? false : { r: 2 }}
                  connectNulls={l.step === true}
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

/** Each line's label and its non-null points, as JSON (`data-series` of a split chart). */
function drawnSeries(rows: readonly SignalRow[], lines: readonly SeriesLine[]): string {
  return JSON.stringify(
    lines.map((l) => [
      l.label,
      rows.flatMap((r) => {
        const v = r[l.key]
        return typeof v === 'number' ? [[r.tMs, v]] : []
      }),
    ]),
  )
}

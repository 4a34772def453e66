import type { ApiState, LoadStatus } from '../../hooks/use-api.js'
import { formatMs } from '../../lib/format.js'
import type { SplitLabel } from '../../lib/route.js'
import type { SignalRow } from '../../lib/signals.js'
import type { SplitValues } from '../../lib/split.js'
import { splitColor, splitKey, splitRows } from '../../lib/split.js'
import { SeriesGraph } from './series-graph.js'
import type { Threshold } from './series-graph.js'

/** The split every chart of the service page shares: the label, its values, and the empty text. */
export interface SplitChartProps {
  readonly label: SplitLabel
  readonly values: SplitValues
  /** True until the label's values are known (the services list has not answered yet). */
  readonly pending: boolean
  readonly emptyText?: string
}

/** Props of {@link SplitSeriesGraph}: one answer per shown value, in the order of `split.values.shown`. */
export interface SplitSeriesGraphProps<R> {
  readonly title: string
  /** What each line shows (`p99 of total`); the label, the step and the values not drawn are added to it. */
  readonly what: string
  readonly chart: string
  readonly split: SplitChartProps
  readonly states: ReadonlyArray<ApiState<R>>
  /** The rows of one answer; `field` of each row is drawn. */
  readonly rows: (response: R) => readonly SignalRow[]
  readonly field: string
  /** The range of an answer (epoch ms) for the x axis, and its step. */
  readonly span: (response: R) => { domain: readonly [number, number]; stepMs: number }
  readonly format: (v: number) => string
  readonly thresholds?: readonly Threshold[]
  readonly height?: number
}

/**
 * A chart split by a label: one line per value (a replica, node or version), each from its own answer of the API
 * for that selector, with a legend naming the values and a note naming the values beyond the 12 drawn.
 *
 * @example <SplitSeriesGraph title="Request rate" what="requests per second" split={{ label: "replica", values: v, pending: false }} states={states} … />
 */
export function SplitSeriesGraph<R>(props: SplitSeriesGraphProps<R>) {
  const { states } = props
  const { label, values, pending, emptyText } = props.split
  const answered = states.flatMap((s) => (s.response ? [s.response] : []))
  const first = answered[0]
  const span = first ? props.span(first) : null
  const rows = splitRows(
    states.map((s) => (s.response ? props.rows(s.response) : [])),
    props.field,
  )
  const error = states.find((s) => s.error)?.error ?? null
  let status: LoadStatus = 'success'
  if (pending || states.some((s) => s.status === 'loading')) status = 'loading'
  else if (error) status = 'error'
  const step = span ? `, per ${formatMs(span.stepMs)} bucket` : ''
  const rest =
    values.rest.length > 0
      ? ` · ${values.rest.length} more not drawn (at most ${values.shown.length}): ${values.rest.join(', ')}`
      : ''
  return (
    <SeriesGraph
      title={`${props.title} · per ${label}`}
      subtitle={`${props.what} per ${label}${step}${rest}`}
      chart={props.chart}
      split={label}
      status={status}
      error={error}
      rows={rows}
      lines={values.shown.map((v, i) => ({ key: splitKey(i), label: v, color: splitColor(i) }))}
      format={props.format}
      domain={span ? span.domain : null}
      {...(props.thresholds ? { thresholds: props.thresholds } : {})}
      {...(emptyText !== undefined ? { emptyText } : {})}
      {...(props.height !== undefined ? { height: props.height } : {})}
    />
  )
}

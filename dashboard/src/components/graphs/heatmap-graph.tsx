import { useState } from 'react'
import type { ApiState } from '../../hooks/use-api.js'
import { formatAxisTime, formatCount, formatMs, formatPercent } from '../../lib/format.js'
import { heatLegend, heatmapCells, labelledBands } from '../../lib/heatmap.js'
import type { HeatmapCell, HeatmapResponse } from '../../lib/heatmap.js'
import { ChartFrame } from '../chart-frame.js'
import { tooltipTime } from './time-axis.js'

/** Props of {@link HeatmapGraph}. */
export interface HeatmapGraphProps {
  readonly state: ApiState<HeatmapResponse>
  readonly phase: string
  readonly rangeMs: number
  readonly emptyText?: string
  /** The label value this heatmap is split to (`replica r0`), in its title and `data-split`; absent: the service. */
  readonly split?: { readonly name: string; readonly value: string }
}

const W = 720
const LEFT = 64
const RIGHT = 8
const TOP = 8
const BOTTOM = 22
/** Row height: at least 14, more for few bands so the grid stays about 160 tall. */
const rowHeight = (bands: number) => Math.max(14, Math.floor(160 / Math.max(1, bands)))
const TIME_TICKS = 5

/**
 * The latency heatmap: time across, log-spaced latency bands up, each cell coloured by how many samples of
 * the phase fell in that band during that step (log colour scale, legend below). Hovering a cell shows its
 * time, band, count and share of the step. An SVG grid: recharts has no heatmap.
 *
 * @example <HeatmapGraph state={useHeatmap(q)} phase="total" rangeMs={3_600_000} />
 */
export function HeatmapGraph({ state, phase, rangeMs, emptyText, split }: HeatmapGraphProps) {
  const res = state.response
  const [hover, setHover] = useState<HeatmapCell | null>(null)
  return (
    <ChartFrame
      title={`Latency heatmap · ${phase}${split ? ` · ${split.name} ${split.value}` : ''}`}
      subtitle="samples per latency band and time step, from the stored histograms"
      status={state.status}
      error={state.error}
      emptyText={emptyText}
      empty={!res || res.points.length === 0}
    >
      {() => {
        const r = res!
        const fromMs = Date.parse(r.from)
        const span = Math.max(1, Date.parse(r.to) - fromMs)
        const plotW = W - LEFT - RIGHT
        const ROW = rowHeight(r.bands.length)
        const plotH = r.bands.length * ROW
        const height = TOP + plotH + BOTTOM
        const x = (t: number) => LEFT + ((t - fromMs) / span) * plotW
        const cellW = Math.max(1, (r.stepMs / span) * plotW)
        const y = (band: number) => TOP + (r.bands.length - 1 - band) * ROW
        const cells = heatmapCells(r)
        const labels = labelledBands(r.bands.length, 14 / ROW)
        return (
          <div
            className="chart heatmap"
            data-chart="heatmap"
            {...(split ? { 'data-split': `${split.name}=${split.value}` } : {})}
            onMouseLeave={() => setHover(null)}
          >
            <svg
              viewBox={`0 0 ${W} ${height}`}
              width="100%"
              role="img"
              aria-label={`Latency heatmap of ${phase}: ${r.points.length} time steps, ${r.bands.length} latency bands`}
            >
              <rect className="heatmap-bg" x={LEFT} y={TOP} width={plotW} height={plotH} />
              {cells.map((c) => (
                <rect
                  key={`${c.tMs}-${c.band}`}
                  className="heatmap-cell"
                  data-t={new Date(c.tMs).toISOString()}
                  data-band={c.band}
                  data-count={c.count}
                  x={x(c.tMs)}
                  y={y(c.band)}
                  width={cellW}
                  height={ROW}
                  fill={c.color}
                  onMouseEnter={() => setHover(c)}
                >
                  <title>{cellText(c)}</title>
                </rect>
              ))}
              {labels.map((band) => (
                <text
                  key={band}
                  className="axis-label"
                  x={LEFT - 6}
                  y={y(band) + ROW + 4}
                  textAnchor="end"
                  fontSize={9}
                >
                  {formatMs(r.bands[band]!.lowMs)}
                </text>
              ))}
              <text className="axis-label" x={LEFT - 6} y={TOP + 8} textAnchor="end" fontSize={9}>
                {formatMs(r.bands[r.bands.length - 1]!.highMs)}
              </text>
              <line className="axis-line" x1={LEFT} x2={LEFT} y1={TOP} y2={TOP + plotH} />
              <line className="axis-line" x1={LEFT} x2={W - RIGHT} y1={TOP + plotH} y2={TOP + plotH} />
              {Array.from({ length: TIME_TICKS }, (_, k) => fromMs + (span * k) / (TIME_TICKS - 1)).map(
                (t, k) => (
                  <text
                    key={t}
                    className="axis-label"
                    x={x(t)}
                    y={TOP + plotH + 16}
                    fontSize={9}
                    textAnchor={k === 0 ? 'start' : k === TIME_TICKS - 1 ? 'end' : 'middle'}
                  >
                    {formatAxisTime(t, rangeMs)}
                  </text>
                ),
              )}
            </svg>
            <div className="heatmap-legend" aria-label="colour legend: samples per cell">
              <span>samples per cell</span>
              {heatLegend(r.maxCount).map((s) => (
                <span key={s.count} className="heatmap-legend-stop">
                  <span className="swatch" style={{ background: s.color }} />
                  {formatCount(s.count)}
                </span>
              ))}
            </div>
            <p className="heatmap-tip" role="status" data-tip={hover ? 'cell' : 'none'}>
              {hover ? cellText(hover) : 'Hover a cell for its time, latency band and count.'}
            </p>
          </div>
        )
      }}
    </ChartFrame>
  )
}

function cellText(c: HeatmapCell): string {
  return `${tooltipTime()(c.tMs)} · ${formatMs(c.lowMs)} – ${formatMs(c.highMs)}: ${formatCount(c.count)} samples (${formatPercent(c.share)} of the step)`
}

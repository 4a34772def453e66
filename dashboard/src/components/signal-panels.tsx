import { useSignals } from '../hooks/use-signals.js'
import type { SeriesQuery } from '../hooks/use-signals.js'
import { formatMs, formatPercent, formatRate } from '../lib/format.js'
import type { SloStatus } from '../lib/slo-types.js'
import { importedP99Rows, shedPanel, SIGNAL_PANELS, signalRows } from '../lib/signals.js'
import type { SignalPanelSpec, SignalSeriesResponse } from '../lib/signals.js'
import { latencySlo } from '../lib/controller.js'
import { SeriesGraph } from './graphs/series-graph.js'
import type { SeriesLine } from './graphs/series-graph.js'
import { StateMessage } from './state-message.js'

const COLORS = ['#3a6ea5', '#d9822b', '#2e8b57', '#8e44ad', '#c0392b', '#16a085', '#7f8c8d', '#b7950b']

const count = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Number(v.toFixed(2)).toString())

/** How each panel unit is written on axes, tooltips and the "now" figure. */
const PANEL_FORMATS: Readonly<Record<SignalPanelSpec['unit'], (v: number) => string>> = {
  count,
  ratio: (v) => formatPercent(v),
  rate: (v) => formatRate(v),
}

/** Imported (server-bucket) latency histograms drawn per replica. */
const IMPORTED = [
  { metric: 'ttft', title: 'TTFT p99 (server buckets)' },
  { metric: 'tpot', title: 'TPOT p99 (server buckets)' },
] as const

/** Props of {@link SignalPanels}. */
export interface SignalPanelsProps {
  readonly query: SeriesQuery
  readonly slos: readonly SloStatus[]
  readonly refreshMs: number
}

function lineStyle(spec: SignalPanelSpec): SeriesLine[] {
  return spec.lines.map((l, i) => ({ key: l.key, label: l.label, color: COLORS[i % COLORS.length]! }))
}

/**
 * The LLM and saturation panels of a service (`GET /api/v1/signals`): running and waiting requests, KV-cache
 * use, queue depth, batch size, tokens per second, preemptions, what the proxy shed per class (with the reasons),
 * and the TTFT/TPOT p99 a model server exports in
 * Prometheus buckets (per replica, marked as estimates, with the SLO threshold when one applies). Only the
 * panels the service reports are drawn; a service without signals gets one empty state saying why.
 *
 * @example <SignalPanels query={{ service: 'chat', from: '-1h' }} slos={slos} refreshMs={10_000} />
 */
export function SignalPanels({ query, slos, refreshMs }: SignalPanelsProps) {
  const state = useSignals(query, refreshMs)
  const res: SignalSeriesResponse | null = state.response
  if (!res) {
    return (
      <section className="panel wide" aria-label="Signals" data-state={state.status}>
        <StateMessage state={state.status === 'error' ? 'error' : 'loading'}>
          {state.status === 'error'
            ? `Could not load the signals: ${state.error?.message ?? 'unknown error'}`
            : 'Loading signals…'}
        </StateMessage>
      </section>
    )
  }
  const shed = shedPanel(res)
  const panels = [...SIGNAL_PANELS, ...(shed ? [shed] : [])]
    .map((spec) => ({ spec, rows: signalRows(res, spec.lines) }))
    .filter((p) => p.rows.length > 0)
  const imported = IMPORTED.map((m) => ({ ...m, ...importedP99Rows(res, m.metric) })).filter(
    (m) => m.rows.length > 0,
  )
  if (panels.length === 0 && imported.length === 0) {
    return (
      <section className="panel wide" aria-label="Signals" data-state="empty">
        <header className="panel-head">
          <h2>Signals</h2>
        </header>
        <StateMessage state="empty">
          No live signals in this range: running and waiting requests, KV cache, batch size and tokens come
          from a model-server scrape (vLLM, Triton, TGI) or the proxy (docs/scrape.md)
        </StateMessage>
      </section>
    )
  }
  const domain = [Date.parse(res.from), Date.parse(res.to)] as const
  const sources = [...new Set(res.series.flatMap((s) => s.sources))].sort()
  return (
    <>
      <h2 className="section-title" data-sources={sources.join(',')}>
        Signals <span className="muted">from {sources.join(', ')}</span>
      </h2>
      <div className="grid signal-grid">
        {panels.map(({ spec, rows }) => (
          <SeriesGraph
            key={spec.chart}
            title={spec.title}
            subtitle={spec.subtitle}
            chart={spec.chart}
            status={state.status}
            error={state.error}
            rows={rows}
            lines={lineStyle(spec)}
            format={PANEL_FORMATS[spec.unit]}
            domain={domain}
          />
        ))}
        {imported.map((m) => {
          const slo = latencySlo(slos, query.service, m.metric)
          return (
            <SeriesGraph
              key={m.metric}
              title={m.title}
              subtitle={`per replica; precision: ${m.precision ?? 'buckets'} (estimated from the server's buckets, not HDR)`}
              chart={`imported-${m.metric}`}
              status={state.status}
              error={state.error}
              rows={m.rows}
              lines={m.replicas.map((r, i) => ({ key: r, label: r, color: COLORS[i % COLORS.length]! }))}
              format={(v) => formatMs(v)}
              domain={domain}
              thresholds={
                slo ? [{ y: slo.thresholdMs, label: `SLO ${slo.name} ${formatMs(slo.thresholdMs)}` }] : []
              }
            />
          )
        })}
      </div>
    </>
  )
}

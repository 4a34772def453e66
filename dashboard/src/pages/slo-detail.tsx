import { AlertBadges } from '../components/alert-badges.js'
import { BudgetBurnDownGraph } from '../components/graphs/budget-burn-down-graph.js'
import { BurnRateGraph } from '../components/graphs/burn-rate-graph.js'
import { BudgetBarView } from '../components/tiles/budget-bar.js'
import { NumberTile } from '../components/tiles/number-tile.js'
import { useNow } from '../hooks/use-now.js'
import { useSlo } from '../hooks/use-slos.js'
import { formatCount } from '../lib/format.js'
import {
  budgetBar,
  forecastText,
  formatBurnRate,
  formatObjective,
  formatSli,
  formatSpan,
  selectorText,
  sliText,
  tierRows,
} from '../lib/slo.js'
import type { SloDetailResponse } from '../lib/slo-types.js'
import { StateMessage } from '../components/state-message.js'

/** How often the page refreshes. */
const REFRESH_MS = 10_000

const time = (iso: string | null) => (iso ? iso.replace('T', ' ').slice(0, 19) : '–')

function Tiles({ slo, nowMs }: { slo: SloDetailResponse; nowMs: number }) {
  const budget = slo.errorBudget
  const tone = budgetBar(slo.budgetRemaining).tone
  return (
    <div className="tiles" data-state="ready">
      <NumberTile
        label="SLI"
        value={formatSli(slo.sli)}
        hint={`objective ${formatObjective(slo.objective)} over ${slo.window}`}
        tone={slo.sli !== null && slo.sli < slo.objective ? 'bad' : 'normal'}
      />
      <NumberTile
        label="events"
        value={formatCount(slo.events.total)}
        hint={`${formatCount(slo.events.good)} good, ${formatCount(slo.events.total - slo.events.good)} bad`}
      />
      <div className={`tile tile-${tone === 'bad' ? 'bad' : tone === 'warn' ? 'warn' : 'normal'} tile-wide`}>
        <div className="tile-label">error budget remaining</div>
        <BudgetBarView remaining={slo.budgetRemaining} large />
        <div className="tile-hint">
          {budget
            ? `${formatCount(budget.remainingEvents)} of ${formatCount(budget.totalEvents)} bad events left; ${formatSpan(budget.remainingTimeMs)} of ${formatSpan(budget.totalTimeMs)} of full outage`
            : 'no events in the window yet'}
        </div>
      </div>
      <NumberTile
        label="burn rate (window)"
        value={formatBurnRate(slo.burnRates[slo.window])}
        hint="1× spends the budget exactly over the window"
      />
      <div className="tile tile-wide" data-forecast={slo.forecast.state}>
        <div className="tile-label">forecast</div>
        <div className="tile-text">{forecastText(slo.forecast, nowMs)}</div>
      </div>
    </div>
  )
}

function TierTable({ slo }: { slo: SloDetailResponse }) {
  const rows = tierRows(slo)
  return (
    <section className="panel" aria-label="Alert tiers" data-state={rows.length ? 'ready' : 'empty'}>
      <header className="panel-head">
        <div>
          <h2>Alert tiers</h2>
          <p className="panel-sub">
            a tier fires while both windows burn above its threshold; active: <AlertBadges slo={slo} />
          </p>
        </div>
      </header>
      {rows.length === 0 ? (
        <StateMessage state="empty">This SLO has no alert tiers.</StateMessage>
      ) : (
        <table className="table tier-table">
          <thead>
            <tr>
              <th>tier</th>
              <th>severity</th>
              <th className="num">threshold</th>
              <th className="num">long window</th>
              <th className="num">short window</th>
              <th>state</th>
              <th>fired</th>
              <th>resolved</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((t) => (
              <tr key={t.tier} data-tier={t.tier} data-state={t.state}>
                <td>{t.tier}</td>
                <td>{t.severity}</td>
                <td className="num">{formatBurnRate(t.factor)}</td>
                <td className={`num${t.longOver ? ' bad' : ''}`}>
                  {formatBurnRate(t.longBurnRate)} <span className="muted">/ {t.longWindow}</span>
                </td>
                <td className={`num${t.shortOver ? ' bad' : ''}`}>
                  {formatBurnRate(t.shortBurnRate)} <span className="muted">/ {t.shortWindow}</span>
                </td>
                <td>
                  <span className={`badge badge-${t.state}`}>{t.state}</span>
                </td>
                <td className="muted">{time(t.firedAt)}</td>
                <td className="muted">{time(t.resolvedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

/**
 * One SLO: SLI, events and error budget (bar, events, time), the forecast, the budget burn-down chart,
 * burn rates per alert tier against their thresholds, and the tiers' alert states. Refreshes every 10 s.
 *
 * @example <SloDetail name="chat-latency" />
 */
export function SloDetail({ name }: { name: string }) {
  const state = useSlo(name, REFRESH_MS)
  const nowMs = useNow(10_000)
  const slo = state.response
  let body
  if (state.status === 'loading') {
    body = (
      <section className="panel" data-state="loading" aria-label="SLO">
        <StateMessage state="loading">Loading the SLO…</StateMessage>
      </section>
    )
  } else if (!slo) {
    body = (
      <section className="panel" data-state="error" aria-label="SLO">
        <StateMessage state="error">
          {state.error?.statusCode === 404
            ? `No SLO is named ${name}.`
            : `Could not load the SLO: ${state.error?.message ?? 'unknown error'}`}
        </StateMessage>
      </section>
    )
  } else {
    body = (
      <>
        {state.status === 'error' && state.error ? (
          <p className="stale" role="alert">
            Refresh failed ({state.error.message}); showing the last data.
          </p>
        ) : null}
        <p className="slo-meta">
          <span className="kind">{slo.kind}</span> {sliText(slo)} · {selectorText(slo.selector)} ·{' '}
          {formatObjective(slo.objective)} over {slo.window} · {slo.budgeting} · from {slo.source}
          {slo.evaluatedAt ? ` · evaluated ${time(slo.evaluatedAt)} UTC` : ' · not evaluated yet'}
        </p>
        <Tiles slo={slo} nowMs={nowMs} />
        <div className="grid">
          <BudgetBurnDownGraph state={state} />
          <BurnRateGraph state={state} />
          <TierTable slo={slo} />
        </div>
      </>
    )
  }
  return (
    <main className="page">
      <div className="page-head">
        <a href="#/slos" className="back">
          ← SLOs
        </a>
        <h1>{name}</h1>
        {slo?.description ? <p className="muted">{slo.description}</p> : null}
      </div>
      {body}
    </main>
  )
}

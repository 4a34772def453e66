import { AlertBadges } from '../components/alert-badges.js'
import { BudgetBarView } from '../components/tiles/budget-bar.js'
import { useSlos } from '../hooks/use-slos.js'
import { formatRoute } from '../lib/route.js'
import {
  NO_SLOS,
  formatBurnRate,
  formatObjective,
  formatSli,
  sliText,
  sloState,
  tierRows,
} from '../lib/slo.js'
import type { SloStatus } from '../lib/slo-types.js'
import { StateMessage } from '../components/state-message.js'

/** How often the list refreshes (the collector evaluates once a minute by default). */
const REFRESH_MS = 10_000

function SloRow({ slo }: { slo: SloStatus }) {
  const state = sloState(slo)
  return (
    <tr data-slo={slo.name} data-state={state}>
      <td>
        <a href={formatRoute({ page: 'slo', name: slo.name })} className="slo-link">
          {slo.name}
        </a>
        {slo.description ? <div className="muted small">{slo.description}</div> : null}
      </td>
      <td>
        <span className="kind">{slo.kind}</span>
        <div className="muted small">{sliText(slo)}</div>
      </td>
      <td className="num">{formatObjective(slo.objective)}</td>
      <td className="num">{slo.window}</td>
      <td className={`num${slo.sli !== null && slo.sli < slo.objective ? ' bad' : ''}`}>
        {formatSli(slo.sli)}
      </td>
      <td className="budget-cell">
        <BudgetBarView remaining={slo.budgetRemaining} />
      </td>
      <td>
        <div className="burns">
          {slo.evaluatedAt === null ? (
            <span className="muted">not evaluated yet</span>
          ) : (
            tierRows(slo).map((t) => (
              <span
                key={t.tier}
                className={`burn${t.longOver && t.shortOver ? ' burn-over' : ''}`}
                title={`${t.tier}: ${formatBurnRate(t.longBurnRate)} over ${t.longWindow}, ${formatBurnRate(t.shortBurnRate)} over ${t.shortWindow}; alerts above ${formatBurnRate(t.factor)}`}
              >
                {t.longWindow} {formatBurnRate(t.longBurnRate)}
              </span>
            ))
          )}
        </div>
      </td>
      <td>
        <AlertBadges slo={slo} />
      </td>
    </tr>
  )
}

/**
 * Every SLO: what it measures, objective and window, SLI, remaining error budget, the burn rates of its
 * alert windows and its alerts. Refreshes every 10 s. Every figure is the API's.
 *
 * @example <SloList />
 */
export function SloList() {
  const { response, error, status } = useSlos(REFRESH_MS)
  const slos = response?.slos ?? []
  let body
  if (status === 'loading') {
    body = <StateMessage state="loading">Loading SLOs…</StateMessage>
  } else if (!response) {
    body = <StateMessage state="error">Could not load the SLOs: {error?.message}</StateMessage>
  } else if (slos.length === 0) {
    body = <StateMessage state="empty">{NO_SLOS}</StateMessage>
  } else {
    body = (
      <table className="table slo-table">
        <thead>
          <tr>
            <th>SLO</th>
            <th>kind</th>
            <th className="num">objective</th>
            <th className="num">window</th>
            <th className="num">SLI</th>
            <th>budget remaining</th>
            <th>burn rates (long windows)</th>
            <th>alerts</th>
          </tr>
        </thead>
        <tbody>
          {slos.map((s) => (
            <SloRow key={s.name} slo={s} />
          ))}
        </tbody>
      </table>
    )
  }
  return (
    <main className="page">
      <div className="page-head">
        <h1>SLOs</h1>
        <p className="muted">
          Service level objectives with their error budgets and burn-rate alerts; refreshed every 10 seconds.
        </p>
      </div>
      {status === 'error' && response ? (
        <p className="stale" role="alert">
          Refresh failed ({error?.message}); showing the last list.
        </p>
      ) : null}
      <section
        className="panel"
        aria-label="slos"
        data-state={status === 'loading' ? 'loading' : !response ? 'error' : slos.length ? 'ready' : 'empty'}
      >
        {body}
      </section>
    </main>
  )
}

import { Suspense, lazy } from 'react'
import { BudgetBarView } from '../components/tiles/budget-bar.js'
import { NumberTile } from '../components/tiles/number-tile.js'
import { ChartFrame } from '../components/chart-frame.js'
import { LoadBoundary } from '../components/load-boundary.js'
import { TimeRangePicker } from '../components/pickers.js'
import { StateMessage } from '../components/state-message.js'
import { TableHead } from '../components/table-head.js'
import { ApiError, requestEarly } from '../api.js'
import { useApi } from '../hooks/use-api.js'
import { SLOS_PATH, useSlos } from '../hooks/use-slos.js'
import { FLEET_RATE_CHART_TITLE, fleetRows, fleetTotals } from '../lib/fleet.js'
import type { FleetResponse, FleetRow } from '../lib/fleet.js'
import { formatMs, formatPercent, formatRate } from '../lib/format.js'
import { SERVICE_ROUTE_DEFAULTS, formatRoute } from '../lib/route.js'
import type { FleetRoute, Route } from '../lib/route.js'
import { formatBurnRate } from '../lib/slo.js'
import { timeRange } from '../lib/time-range.js'

/** The chart's panel when its chunk could not be loaded: the table above still works. */
const chartFailed = (error: Error) => (
  <ChartFrame
    title={FLEET_RATE_CHART_TITLE}
    status="error"
    error={new ApiError(0, 'LOAD_FAILED', `${error.message}; reload the page`)}
    empty
  >
    {() => null}
  </ChartFrame>
)

/**
 * The chart below the table comes in its own chunk with recharts, so the table (what the page is for) renders from the
 * entry bundle alone: with recharts in the entry, the first load of 50 services took 1.1-1.7 s on the 2-core machine.
 */
const FleetRateGraph = lazy(() =>
  import('../components/graphs/fleet-rate-graph.js').then((m) => ({ default: m.FleetRateGraph })),
)

/** The chart's panel until its chunk and the data are in. */
const chartLoading = (
  <ChartFrame title={FLEET_RATE_CHART_TITLE} status="loading" error={null} empty={false}>
    {() => null}
  </ChartFrame>
)

/** How often the page refreshes. */
const REFRESH_MS = 10_000

const ATTENTION_TEXT: Record<FleetRow['attention'], string> = {
  firing: 'alert firing',
  burning: 'burning budget',
  slow: 'p99 over objective',
  ok: 'ok',
  idle: 'no traffic',
}

function FleetTableRow({
  row,
  range,
  gpus,
  cost,
}: {
  row: FleetRow
  range: string
  gpus: boolean
  /** Whether the page has a cost column. */
  cost: boolean
}) {
  const href = formatRoute({
    page: 'service',
    service: row.service,
    model: '',
    ...SERVICE_ROUTE_DEFAULTS,
    range,
  })
  const overObjective =
    row.objectiveMs !== null && row.latencyMs.p99 !== null && row.latencyMs.p99 > row.objectiveMs
  return (
    <tr data-service={row.service} data-attention={row.attention}>
      <td>
        <a href={href} className="service-link">
          {row.service}
        </a>
        <div className="muted small">{row.models.join(', ') || '(no model)'}</div>
      </td>
      <td>
        <span className={`attention attention-${row.attention}`}>{ATTENTION_TEXT[row.attention]}</span>
      </td>
      <td className="budget-cell" data-field="budget">
        {row.slos.length === 0 ? (
          <span className="muted">no SLO</span>
        ) : (
          <BudgetBarView remaining={row.budgetRemaining} />
        )}
      </td>
      <td className={`num${(row.burnRate ?? 0) > 1 ? ' bad' : ''}`} data-field="burn">
        {row.burnRate === null ? '–' : `${formatBurnRate(row.burnRate)} (${row.burnWindow})`}
      </td>
      <td className={`num${row.firing > 0 ? ' bad' : ''}`} data-field="firing">
        {row.firing}
        {row.pending > 0 ? <span className="muted small"> +{row.pending} pending</span> : null}
      </td>
      <td className={`num${overObjective ? ' bad' : ''}`} data-field="p99">
        {formatMs(row.latencyMs.p99)}
        {row.objectiveMs !== null ? (
          <span className="muted small"> / {formatMs(row.objectiveMs)}</span>
        ) : null}
      </td>
      <td className="num" data-field="rate">
        {formatRate(row.ratePerSecond)}
      </td>
      <td className="num" data-field="goodput" title={row.goodputReason}>
        {formatRate(row.goodputPerSecond)}
      </td>
      <td className={`num${row.errorRatio ? ' bad' : ''}`} data-field="errors">
        {formatPercent(row.errorRatio)}
      </td>
      <td className={`num${row.shedRatio ? ' warn' : ''}`} data-field="shed">
        {formatPercent(row.shedRatio)}
      </td>
      <td className="num" data-field="replicas">
        {row.replicas}
      </td>
      {gpus ? (
        <td className="num" data-field="gpu">
          {row.gpus.count === 0
            ? '–'
            : `${formatPercent(row.gpus.utilPct === null ? null : row.gpus.utilPct / 100)} of ${row.gpus.count}`}
        </td>
      ) : null}
      {cost ? (
        <td className="num" data-field="cost" title={row.costPerMillionRequests.reason}>
          {row.costPerMillionRequests.usd === null ? '–' : `$${row.costPerMillionRequests.usd.toFixed(2)}`}
        </td>
      ) : null}
    </tr>
  )
}

/** The query of the page's figures (one place, for the page and for {@link requestFleetEarly}). */
function fleetQuery(route: FleetRoute): { from: string; to: string } {
  return { from: timeRange(route.range).from, to: 'now' }
}

/**
 * Sends the fleet page's two requests (its figures and the SLOs) before React renders it, when the address opens
 * the fleet page with a token: the collector answers while the bundle runs and the page renders its frame. On the
 * 2-core machine the first request otherwise left 400-700 ms after navigation start (issue #17's 1 s first load).
 *
 * @example const token = initialToken(); if (token) requestFleetEarly(parseRoute(location.hash), token)
 */
export function requestFleetEarly(route: Route, token: string): void {
  if (route.page !== 'fleet') return
  requestEarly('fleet', fleetQuery(route), token)
  requestEarly(SLOS_PATH, {}, token)
}

/**
 * The landing page: every service with the state of its SLOs (budget left, burn rate, alerts firing), p99 against
 * its latency objective, request rate and goodput, error and shed ratios, replicas and GPU utilization, over the
 * shared time range; what needs attention first. One request for the figures (`/api/v1/fleet`, cost per million
 * requests included) and one for the SLOs, whatever the number of services.
 *
 * @example <FleetPage route={{ page: 'fleet', range: '1h' }} navigate={navigate} />
 */
export function FleetPage({ route, navigate }: { route: FleetRoute; navigate: (to: Route) => void }) {
  const range = timeRange(route.range)
  const fleet = useApi<FleetResponse>('fleet', fleetQuery(route), REFRESH_MS)
  const slos = useSlos(REFRESH_MS)
  const rows = fleet.response ? fleetRows(fleet.response.services, slos.response?.slos ?? []) : []
  const totals = fleetTotals(rows)
  // The GPU column only where some service's replicas hold a GPU (a fleet without NVML or DCGM has none).
  const withGpus = rows.some((r) => r.gpus.count > 0)
  // The cost column only where some service has a cost (none without a GPU price in the collector's config).
  // The fleet answer carries it: the collector prices the GPUs each service holds from its config.
  const withCost = rows.some((r) => r.costPerMillionRequests.usd !== null)
  let body
  if (fleet.status === 'loading') body = <StateMessage state="loading">Loading the fleet…</StateMessage>
  else if (!fleet.response)
    body = <StateMessage state="error">Could not load the fleet: {fleet.error?.message}</StateMessage>
  else if (rows.length === 0)
    body = (
      <StateMessage state="empty">
        No service has reported yet. Start an agent (<code>tailguard agent</code>) that ships to this
        collector.
      </StateMessage>
    )
  else
    body = (
      <div className="table-scroll">
        <table className="table fleet-table">
          <TableHead
            columns={[
              'service',
              'state',
              'budget left',
              { label: 'burn rate', num: true },
              { label: 'firing', num: true },
              { label: 'p99 / objective', num: true },
              { label: 'requests', num: true },
              { label: 'goodput', num: true },
              { label: 'errors', num: true },
              { label: 'shed', num: true },
              { label: 'replicas', num: true },
              withGpus && { label: 'GPU util', num: true },
              withCost && { label: '$ / 1M requests', num: true },
            ]}
          />
          <tbody>
            {rows.map((r) => (
              <FleetTableRow key={r.service} row={r} range={range.key} gpus={withGpus} cost={withCost} />
            ))}
          </tbody>
        </table>
      </div>
    )
  return (
    <main className="page" data-page="fleet">
      <div className="page-head">
        <h1>Fleet</h1>
        <p className="muted">
          Every service over the last {range.label}, what needs attention first; refreshed every 10 seconds.
          SLO budgets and burn rates are over each SLO&apos;s own window.
        </p>
      </div>
      <div className="toolbar">
        <TimeRangePicker value={range.key} onChange={(key) => navigate({ ...route, range: key })} />
      </div>
      {fleet.status === 'error' && fleet.response ? (
        <p className="stale" role="alert">
          Refresh failed ({fleet.error?.message}); showing the last figures.
        </p>
      ) : null}
      {slos.status === 'error' ? (
        <p className="stale" role="alert">
          Could not load the SLOs ({slos.error?.message}); budgets and alerts are not shown.
        </p>
      ) : null}
      {fleet.response && rows.length > 0 ? (
        <div className="tiles" aria-label="fleet totals">
          <NumberTile label="services" value={String(totals.services)} />
          <NumberTile
            label="need attention"
            value={String(totals.needAttention)}
            tone={totals.needAttention > 0 ? 'bad' : 'normal'}
          />
          <NumberTile
            label="alerts firing"
            value={String(totals.firing)}
            tone={totals.firing > 0 ? 'bad' : 'normal'}
          />
          <NumberTile label="requests" value={formatRate(totals.ratePerSecond)} hint="sum over services" />
        </div>
      ) : null}
      <section
        className="panel"
        aria-label="fleet"
        data-state={
          fleet.status === 'loading' ? 'loading' : !fleet.response ? 'error' : rows.length ? 'ready' : 'empty'
        }
      >
        {body}
      </section>
      {/* The chart's chunk is asked for once the table has its data: fetched and parsed earlier, it competed with
          the table's request for the CPU (on two cores, the answer came 300-700 ms late instead of ~50 ms). */}
      {fleet.status === 'loading' ? (
        chartLoading
      ) : (
        <LoadBoundary fallback={chartFailed}>
          <Suspense fallback={chartLoading}>
            <FleetRateGraph rows={rows} status={fleet.status} error={fleet.error} />
          </Suspense>
        </LoadBoundary>
      )}
    </main>
  )
}

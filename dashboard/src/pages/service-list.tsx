import { useBreakdown } from '../hooks/use-breakdown.js'
import { useNow } from '../hooks/use-now.js'
import { useServices } from '../hooks/use-services.js'
import { useTimeseries } from '../hooks/use-timeseries.js'
import { formatAgo, formatMs, formatPercent, formatRate } from '../lib/format.js'
import { formatRoute } from '../lib/route.js'
import { SERVICE_ROUTE_DEFAULTS } from '../lib/route.js'
import { dataSeconds, groupServices, requestStats } from '../lib/transforms.js'
import type { ServiceGroup } from '../lib/transforms.js'
import { StateMessage } from '../components/state-message.js'

/** How often the list refreshes. */
const REFRESH_MS = 10_000
/** The window the list's rates and percentiles cover. */
const WINDOW = '-5m'
const LIST_QUANTILES = ['0.5', '0.99'] as const

function ServiceRow({ group, nowMs }: { group: ServiceGroup; nowMs: number }) {
  const { response, status, error } = useBreakdown(
    { service: group.service, model: group.model, from: WINDOW, quantiles: LIST_QUANTILES },
    REFRESH_MS,
  )
  // The rate divides by the time with data in the window (a service that started 1 min ago is not at 1/5 its rate).
  const series = useTimeseries(
    { service: group.service, model: group.model, phase: 'total', from: WINDOW, quantiles: ['0.5'] },
    REFRESH_MS,
  )
  const stats = response
    ? requestStats(response, series.response ? dataSeconds(series.response) : null)
    : null
  const href = formatRoute({
    page: 'service',
    service: group.service,
    model: group.model,
    ...SERVICE_ROUTE_DEFAULTS,
  })
  const stale = nowMs - group.lastSeenMs > 60_000
  const cell = (text: string) =>
    status === 'loading' ? <span className="muted">…</span> : status === 'error' && !response ? '–' : text
  return (
    <tr data-service={group.service} className={stale ? 'stale-row' : undefined}>
      <td>
        <a href={href} className="service-link">
          {group.service}
        </a>
        {status === 'error' && error ? (
          <div className="row-error" role="alert">
            {error.message}
          </div>
        ) : null}
      </td>
      <td>{group.model || <span className="muted">(none)</span>}</td>
      <td className="muted">{group.versions.filter((v) => v !== '').join(', ') || '–'}</td>
      <td className="num">{group.replicas}</td>
      <td className="num">{cell(formatRate(stats?.ratePerSecond))}</td>
      <td className={`num${stats?.errorRate ? ' bad' : ''}`}>{cell(formatPercent(stats?.errorRate))}</td>
      <td className="num">{cell(formatMs(response?.total.quantiles['0.5']))}</td>
      <td className="num">{cell(formatMs(response?.total.quantiles['0.99']))}</td>
      <td className="num" title={new Date(group.lastSeenMs).toISOString()}>
        <span className={`dot ${stale ? 'dot-stale' : 'dot-live'}`} aria-hidden="true" />
        {formatAgo(group.lastSeenMs, nowMs)}
      </td>
    </tr>
  )
}

/**
 * Every service/model that reports, with request rate, error rate, p50/p99 of total latency over the last
 * 5 minutes and when it last reported. Refreshes every 10 s.
 *
 * @example <ServiceList />
 */
export function ServiceList() {
  const { response, error, status } = useServices(REFRESH_MS)
  const nowMs = useNow(5_000)
  const groups = response ? groupServices(response.services) : []
  let body
  if (status === 'loading') {
    body = <StateMessage state="loading">Loading services…</StateMessage>
  } else if (!response) {
    body = <StateMessage state="error">Could not load the services: {error?.message}</StateMessage>
  } else if (groups.length === 0) {
    body = (
      <StateMessage state="empty">
        No service has reported yet. Start an agent (<code>tailguard agent</code>) that ships to this
        collector.
      </StateMessage>
    )
  } else {
    body = (
      <table className="table service-table">
        <thead>
          <tr>
            <th>service</th>
            <th>model</th>
            <th>versions</th>
            <th className="num">replicas</th>
            <th className="num">requests</th>
            <th className="num">errors</th>
            <th className="num">p50</th>
            <th className="num">p99</th>
            <th className="num">last seen</th>
          </tr>
        </thead>
        <tbody>
          {groups.map((g) => (
            <ServiceRow key={`${g.service}\u0000${g.model}`} group={g} nowMs={nowMs} />
          ))}
        </tbody>
      </table>
    )
  }
  return (
    <main className="page">
      <div className="page-head">
        <h1>Services</h1>
        <p className="muted">Rates and latency over the last 5 minutes; refreshed every 10 seconds.</p>
      </div>
      {status === 'error' && response ? (
        <p className="stale" role="alert">
          Refresh failed ({error?.message}); showing the last list.
        </p>
      ) : null}
      <section
        className="panel"
        aria-label="services"
        data-state={
          status === 'loading' ? 'loading' : !response ? 'error' : groups.length ? 'ready' : 'empty'
        }
      >
        {body}
      </section>
    </main>
  )
}

import { useState } from 'react'
import type { FormEvent, ReactNode } from 'react'
import { ApiError, apiSend } from '../api.js'
import { useAuth } from '../auth.js'
import { TimeRangePicker } from '../components/pickers.js'
import { StateMessage } from '../components/state-message.js'
import { TableHead } from '../components/table-head.js'
import { useApi } from '../hooks/use-api.js'
import type { ApiState } from '../hooks/use-api.js'
import { useNow } from '../hooks/use-now.js'
import { useSlos } from '../hooks/use-slos.js'
import { alertRows, matchersText, silenceBody } from '../lib/alerts.js'
import type {
  AlertRow,
  AlertsResponse,
  DeliveriesResponse,
  Delivery,
  Silence,
  SilenceDraft,
  SilencesResponse,
} from '../lib/alerts.js'
import { formatAgo } from '../lib/format.js'
import { formatRoute } from '../lib/route.js'
import type { AlertsRoute, Route } from '../lib/route.js'
import { formatBurnRate } from '../lib/slo.js'
import type { SloStatus } from '../lib/slo-types.js'
import { timeRange } from '../lib/time-range.js'

/** How often the page refreshes. */
const REFRESH_MS = 10_000

/** An action's outcome, shown beside the form or the table it came from. */
type Outcome = { kind: 'ok'; text: string } | { kind: 'error'; text: string } | null

/** The collector's refusal as a sentence, e.g. for a read token on an admin route. */
function refusal(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.statusCode === 403)
      return `Refused: ${err.message}. Sign in with an admin token to change silences.`
    return `The collector refused (${err.statusCode || 'network'}): ${err.message}`
  }
  return 'The request failed unexpectedly.'
}

/**
 * A titled panel for one API answer: its loading, error and empty states (also as `data-state` for tests), or
 * its content; `before` shows above them all (the silence form).
 */
function DataPanel<T>(props: {
  title: string
  /** What is loaded, in the loading and error lines: `alerts`, `silences`. */
  what: string
  sub?: string
  state: ApiState<T>
  empty: boolean
  emptyText: string
  before?: ReactNode
  children: ReactNode
}) {
  const { state: s } = props
  const dataState =
    s.status === 'loading' ? 'loading' : !s.response ? 'error' : props.empty ? 'empty' : 'ready'
  return (
    <section className="panel" aria-label={props.title.toLowerCase()} data-state={dataState}>
      <header className="panel-head">
        <div>
          <h2>{props.title}</h2>
          {props.sub ? <p className="panel-sub">{props.sub}</p> : null}
        </div>
      </header>
      {props.before}
      {dataState === 'loading' ? (
        <StateMessage state="loading">Loading {props.what}…</StateMessage>
      ) : dataState === 'error' ? (
        <StateMessage state="error">
          Could not load the {props.what}: {s.error?.message}
        </StateMessage>
      ) : dataState === 'empty' ? (
        <StateMessage state="empty">{props.emptyText}</StateMessage>
      ) : (
        props.children
      )}
    </section>
  )
}

function time(iso: string | null, nowMs: number) {
  if (iso === null) return <span className="muted">–</span>
  return (
    <time dateTime={iso} title={iso}>
      {formatAgo(Date.parse(iso), nowMs)}
    </time>
  )
}

function AlertTable({
  rows,
  nowMs,
  onSilence,
}: {
  rows: readonly AlertRow[]
  nowMs: number
  onSilence: (r: AlertRow) => void
}) {
  return (
    <div className="table-scroll">
      <table className="table alert-table">
        <TableHead
          columns={[
            'state',
            'SLO',
            'tier',
            { label: 'long window', num: true },
            { label: 'short window', num: true },
            { label: 'threshold', num: true },
            'fired',
            'resolved',
            { label: 'actions', hidden: true },
          ]}
        />
        <tbody>
          {rows.map((r) => (
            <tr key={`${r.slo}\u0000${r.tier}`} data-alert={`${r.slo}/${r.tier}`} data-state={r.state}>
              <td>
                <span className={`badge badge-${r.state}`}>{r.state}</span>
              </td>
              <td>
                <a href={formatRoute({ page: 'slo', name: r.slo })}>{r.slo}</a>
              </td>
              <td>
                {r.tier}
                {r.severity ? <span className="muted small"> · {r.severity}</span> : null}
              </td>
              <td className="num" data-field="long">
                {r.longWindow === null ? '–' : `${formatBurnRate(r.longBurnRate)} over ${r.longWindow}`}
              </td>
              <td className="num" data-field="short">
                {r.shortWindow === null ? '–' : `${formatBurnRate(r.shortBurnRate)} over ${r.shortWindow}`}
              </td>
              <td className="num">{r.factor === null ? '–' : formatBurnRate(r.factor)}</td>
              <td>{time(r.firedAt ?? r.activeSince, nowMs)}</td>
              <td>{time(r.resolvedAt, nowMs)}</td>
              <td>
                {r.state === 'firing' || r.state === 'pending' ? (
                  <button type="button" className="link-action" onClick={() => onSilence(r)}>
                    Silence…
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

/** One matcher of the silence form: a select of the known values, `any` for none. */
function MatcherSelect(props: {
  label: string
  options: readonly string[]
  value: string
  onChange: (e: { target: { value: string } }) => void
}) {
  return (
    <label>
      <span>{props.label}</span>
      <select value={props.value} onChange={props.onChange}>
        <option value="">any</option>
        {props.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  )
}

/** An action's outcome: a status line when it worked, an alert with the reason when it did not. */
function OutcomeLine({ outcome }: { outcome: Outcome }) {
  if (outcome === null) return null
  return (
    <p
      className={outcome.kind === 'ok' ? 'outcome-ok' : 'login-error'}
      role={outcome.kind === 'ok' ? 'status' : 'alert'}
    >
      {outcome.text}
    </p>
  )
}

const EMPTY_DRAFT: SilenceDraft = { slo: '', tier: '', severity: '', duration: '2h', comment: '' }

function SilenceForm({
  draft,
  setDraft,
  slos,
  onCreated,
}: {
  draft: SilenceDraft
  setDraft: (d: SilenceDraft) => void
  slos: readonly SloStatus[]
  onCreated: () => void
}) {
  const { token } = useAuth()
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<Outcome>(null)
  const tiers = [
    ...new Set(
      slos.filter((s) => !draft.slo || s.name === draft.slo).flatMap((s) => s.alerts.map((a) => a.tier)),
    ),
  ]
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const b = silenceBody(draft)
    if (!b.ok) {
      setOutcome({ kind: 'error', text: b.problem })
      return
    }
    if (token === null) return
    setBusy(true)
    apiSend<Silence>('POST', 'silences', b.body, token).then(
      (s) => {
        setBusy(false)
        setOutcome({
          kind: 'ok',
          text: `Silence created: ${matchersText(s.matchers)} until ${new Date(s.endsAt).toLocaleString()}.`,
        })
        setDraft(EMPTY_DRAFT)
        onCreated()
      },
      (err: unknown) => {
        setBusy(false)
        setOutcome({ kind: 'error', text: refusal(err) })
      },
    )
  }
  const field = (k: keyof SilenceDraft) => ({
    value: draft[k],
    onChange: (e: { target: { value: string } }) => setDraft({ ...draft, [k]: e.target.value }),
  })
  return (
    <form className="silence-form" aria-label="new silence" onSubmit={submit}>
      <MatcherSelect label="SLO" options={slos.map((x) => x.name)} {...field('slo')} />
      <MatcherSelect label="tier" options={tiers} {...field('tier')} />
      <MatcherSelect label="severity" options={['page', 'ticket']} {...field('severity')} />
      <label>
        <span>for</span>
        <input {...field('duration')} size={5} placeholder="2h" />
      </label>
      <label className="grow">
        <span>comment</span>
        <input {...field('comment')} placeholder="why (shown with the silence)" />
      </label>
      <button type="submit" className="primary" disabled={busy}>
        Create silence
      </button>
      <OutcomeLine outcome={outcome} />
    </form>
  )
}

function SilenceTable({
  silences,
  nowMs,
  onExpired,
}: {
  silences: readonly Silence[]
  nowMs: number
  onExpired: () => void
}) {
  const { token } = useAuth()
  const [outcome, setOutcome] = useState<Outcome>(null)
  const expire = (s: Silence) => {
    if (token === null) return
    apiSend<Silence>('DELETE', `silences/${encodeURIComponent(s.id)}`, undefined, token).then(
      () => {
        setOutcome({ kind: 'ok', text: `Silence ${matchersText(s.matchers)} expired.` })
        onExpired()
      },
      (err: unknown) => setOutcome({ kind: 'error', text: refusal(err) }),
    )
  }
  return (
    <>
      <OutcomeLine outcome={outcome} />
      <div className="table-scroll">
        <table className="table silence-table">
          <TableHead
            columns={['state', 'matchers', 'comment', 'by', 'ends', { label: 'actions', hidden: true }]}
          />
          <tbody>
            {silences.map((s) => (
              <tr key={s.id} data-silence={s.id} data-state={s.state}>
                <td>
                  <span className={`badge badge-${s.state === 'active' ? 'silenced' : s.state}`}>
                    {s.state}
                  </span>
                </td>
                <td>{matchersText(s.matchers)}</td>
                <td>{s.comment}</td>
                <td>{s.createdBy}</td>
                <td>
                  <time dateTime={s.endsAt} title={s.endsAt}>
                    {s.state === 'expired'
                      ? formatAgo(Date.parse(s.endsAt), nowMs)
                      : new Date(s.endsAt).toLocaleString()}
                  </time>
                </td>
                <td>
                  {s.state === 'expired' ? null : (
                    <button type="button" className="link-action" onClick={() => expire(s)}>
                      Expire
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  )
}

/** When a delivery happened, or what it waits for. */
function deliveryWhen(d: Delivery, nowMs: number) {
  if (d.deliveredAt !== null) return time(d.deliveredAt, nowMs)
  if (d.failedAt !== null) return <>gave up {time(d.failedAt, nowMs)}</>
  // A receiver's notifications go in order: one never tried waits behind the one being retried.
  if (d.attempts === 0) return 'waiting its turn'
  if (d.nextAttemptAt === null) return '–'
  return (
    <>
      next <time dateTime={d.nextAttemptAt}>{new Date(d.nextAttemptAt).toLocaleTimeString()}</time>
    </>
  )
}

function DeliveryTable({
  deliveries,
  nowMs,
}: {
  deliveries: DeliveriesResponse['deliveries']
  nowMs: number
}) {
  return (
    <div className="table-scroll">
      <table className="table delivery-table">
        <TableHead
          columns={[
            'status',
            'receiver',
            'alert',
            { label: 'attempts', num: true },
            'queued',
            'delivered / next try',
            'last error',
          ]}
        />
        <tbody>
          {deliveries.map((d) => (
            <tr key={d.seq} data-delivery={d.seq} data-status={d.status}>
              <td>
                <span className={`badge badge-delivery-${d.status}`}>{d.status}</span>
              </td>
              <td>{d.receiver}</td>
              <td>
                {d.notification} {d.slo} {d.tier}
              </td>
              <td className="num">{d.attempts}</td>
              <td>{time(d.createdAt, nowMs)}</td>
              <td>{deliveryWhen(d, nowMs)}</td>
              <td className={d.lastError ? 'bad' : undefined}>{d.lastError ?? '–'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

/**
 * Alerts: burn-rate alerts with their SLO, tier and burn rates (firing first; resolved ones within the shared
 * range), silences (create and expire need an admin token; a read token gets the collector's refusal on screen),
 * and the webhook deliveries of alert notifications with their status and attempts.
 *
 * @example <AlertsPage route={{ page: 'alerts', range: '1h' }} navigate={navigate} />
 */
export function AlertsPage({ route, navigate }: { route: AlertsRoute; navigate: (to: Route) => void }) {
  const range = timeRange(route.range)
  const [reload, setReload] = useState(0)
  const bump = () => setReload((n) => n + 1)
  const nowMs = useNow(5_000)
  const alerts = useApi<AlertsResponse>('alerts', {}, REFRESH_MS, reload)
  const slos = useSlos(REFRESH_MS)
  const silences = useApi<SilencesResponse>('silences', {}, REFRESH_MS, reload)
  const deliveries = useApi<DeliveriesResponse>('alerts/deliveries', {}, REFRESH_MS, reload)
  const [draft, setDraft] = useState<SilenceDraft>(EMPTY_DRAFT)
  const rows = alerts.response
    ? alertRows(alerts.response.alerts, slos.response?.slos ?? [], nowMs, range.durationMs)
    : []
  const silenceList = silences.response?.silences ?? []
  const deliveryList = deliveries.response?.deliveries ?? []
  const receivers = deliveries.response?.receivers ?? []

  return (
    <main className="page" data-page="alerts">
      <div className="page-head">
        <h1>Alerts</h1>
        <p className="muted">
          Burn-rate alerts (resolved ones from the last {range.label}), silences and webhook deliveries;
          refreshed every 10 seconds.
        </p>
      </div>
      <div className="toolbar">
        <TimeRangePicker value={range.key} onChange={(key) => navigate({ ...route, range: key })} />
      </div>
      <DataPanel
        title="Alerts"
        what="alerts"
        state={alerts}
        empty={rows.length === 0}
        emptyText="No alert is firing, pending or silenced, and none resolved in this range."
      >
        <AlertTable
          rows={rows}
          nowMs={nowMs}
          onSilence={(r) => setDraft({ ...EMPTY_DRAFT, slo: r.slo, tier: r.tier, comment: draft.comment })}
        />
      </DataPanel>
      <DataPanel
        title="Silences"
        what="silences"
        sub="A silenced alert still evaluates but sends no notification. Needs an admin token."
        state={silences}
        empty={silenceList.length === 0}
        emptyText="No silence."
        before={
          <SilenceForm draft={draft} setDraft={setDraft} slos={slos.response?.slos ?? []} onCreated={bump} />
        }
      >
        <SilenceTable silences={silenceList} nowMs={nowMs} onExpired={bump} />
      </DataPanel>
      <DataPanel
        title="Webhook deliveries"
        what="deliveries"
        sub={`${receivers.length > 0 ? `Receivers: ${receivers.join(', ')}. ` : ''}Newest first; failed attempts retry with backoff.`}
        state={deliveries}
        empty={deliveryList.length === 0}
        emptyText={
          receivers.length === 0
            ? 'No webhook receiver is configured, so no notification is sent (see docs/slos.md).'
            : 'No notification has been sent yet.'
        }
      >
        <DeliveryTable deliveries={deliveryList} nowMs={nowMs} />
      </DataPanel>
    </main>
  )
}

import { useState } from 'react'
import { ControllerActions } from '../components/controller-actions.js'
import { DecisionTimelineGraph, OUTCOME_COLORS } from '../components/graphs/decision-timeline-graph.js'
import { RateReplicasGraph } from '../components/graphs/rate-replicas-graph.js'
import { TimeRangePicker } from '../components/pickers.js'
import { StateMessage } from '../components/state-message.js'
import type { ApiState } from '../hooks/use-api.js'
import { useControllers, useDecisions } from '../hooks/use-controllers.js'
import { useNow } from '../hooks/use-now.js'
import { useServices } from '../hooks/use-services.js'
import { useSlos } from '../hooks/use-slos.js'
import { useTimeseries } from '../hooks/use-timeseries.js'
import type { TimeseriesResponse } from '../lib/api-types.js'
import { describeAction, formatCap, latencySlo, replicaSteps, targetSelector } from '../lib/controller.js'
import type {
  Controller,
  ControllersResponse,
  Decision,
  DecisionsResponse,
  Setpoints,
  TargetSelector,
} from '../lib/controller.js'
import { formatAgo, formatMs } from '../lib/format.js'
import type { ControllerRoute } from '../lib/route.js'
import type { SloStatus } from '../lib/slo-types.js'
import { timeRange } from '../lib/time-range.js'
import { NotFound } from './not-found.js'

/** Props of {@link ControllerDetail}. */
export interface ControllerDetailProps {
  readonly route: ControllerRoute
  readonly navigate: (to: ControllerRoute) => void
}

/**
 * One controlled target: mode and leader, the operator's levers (mode switch, rollback: admin token, with a
 * confirmation), the current setpoints and conditions, the decision timeline over the service's p99 and SLO
 * line, the request rate with the desired replicas, and every decision with its actions, reason and outcome.
 *
 * @example <ControllerDetail route={{ page: 'controller', target: 'chat', range: '1h', service: '' }} navigate={navigate} />
 */
export function ControllerDetail({ route, navigate }: ControllerDetailProps) {
  const range = timeRange(route.range)
  const [reloadKey, setReloadKey] = useState(0)
  const [answered, setAnswered] = useState<{ c: Controller; seen: ControllersResponse | null } | null>(null)
  const controllers = useControllers(5_000, reloadKey)
  const decisions = useDecisions(route.target, range.from, 10_000, reloadKey)
  const services = useServices(60_000)
  const slos = useSlos(60_000).response?.slos ?? []
  const nowMs = useNow(10_000)
  const listed = controllers.response?.controllers.find((c) => c.target === route.target) ?? null
  // The collector's answer to an action shows at once, until the list is fetched again after it (the reload
  // aborts any fetch that started before the action, so the next response is newer).
  const c = answered && controllers.response === answered.seen ? answered.c : (listed ?? answered?.c ?? null)
  if (controllers.response && !listed)
    return (
      <NotFound
        what={`controller ${route.target}`}
        reason={`No controller target named ${route.target} is registered with this collector.`}
      />
    )
  const sel: TargetSelector | null = route.service
    ? { service: route.service, model: '', version: '' }
    : targetSelector(route.target, services.response?.services ?? [])
  const domain = [nowMs - range.durationMs, nowMs] as const
  const steps = replicaSteps(decisions.response?.decisions ?? [], c, domain[0], domain[1])
  const serviceNames = [...new Set((services.response?.services ?? []).map((s) => s.service))].sort()
  return (
    <main className="page" data-page="controller">
      <div className="page-head">
        <a href="#/controllers" className="back">
          ← Controllers
        </a>
        <h1>{route.target}</h1>
        {c ? (
          <p className="slo-meta" data-mode={c.mode}>
            <span className={`badge mode-${c.mode}`}>{c.mode}</span> mode (set by {c.modeSource}) · policy{' '}
            {c.policy} · leader {c.leader ?? 'none'} · status {formatAgo(Date.parse(c.updatedAt), nowMs)}
            {c.rollbackRequestedAt ? ' · rollback requested, waiting for the leader' : ''}
          </p>
        ) : null}
      </div>
      {c ? (
        <ControllerActions
          controller={c}
          onChanged={(next) => {
            setAnswered({ c: next, seen: controllers.response })
            setReloadKey((k) => k + 1)
          }}
        />
      ) : controllers.status === 'error' ? (
        <StateMessage state="error">Could not load the controller: {controllers.error?.message}</StateMessage>
      ) : (
        <StateMessage state="loading">Loading the controller…</StateMessage>
      )}
      <div className="toolbar">
        <TimeRangePicker value={range.key} onChange={(key) => navigate({ ...route, range: key })} />
        <label className="service-pick">
          Service charted{' '}
          <select
            value={sel?.service ?? ''}
            onChange={(e) => navigate({ ...route, service: e.target.value })}
            aria-label="service charted"
          >
            <option value="">{sel && !route.service ? `${sel.service} (from the name)` : 'choose…'}</option>
            {serviceNames.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <div className="grid">
        {sel ? (
          <ServiceCharts
            sel={sel}
            decisions={decisions}
            slos={slos}
            from={range.from}
            domain={domain}
            steps={steps}
          />
        ) : (
          <>
            <DecisionTimelineGraph decisions={decisions} latency={null} threshold={null} domain={domain} />
            <RateReplicasGraph rate={null} replicas={steps} status={decisions.status} domain={domain} />
          </>
        )}
        {c ? <SetpointsPanel setpoints={c.setpoints} /> : null}
        {c ? <ConditionsPanel controller={c} nowMs={nowMs} /> : null}
        <DecisionTable state={decisions} />
      </div>
    </main>
  )
}

/** The timeline and rate charts over the service a target controls. */
function ServiceCharts(props: {
  sel: TargetSelector
  decisions: ApiState<DecisionsResponse>
  slos: readonly SloStatus[]
  from: string
  domain: readonly [number, number]
  steps: ReturnType<typeof replicaSteps>
}) {
  const { sel } = props
  const latency: ApiState<TimeseriesResponse> = useTimeseries(
    { service: sel.service, model: sel.model, phase: 'total', from: props.from, quantiles: ['0.99'] },
    10_000,
  )
  const slo = latencySlo(props.slos, sel.service, 'total')
  return (
    <>
      <DecisionTimelineGraph
        decisions={props.decisions}
        latency={latency}
        threshold={slo ? { y: slo.thresholdMs, label: `SLO ${slo.name} ${formatMs(slo.thresholdMs)}` } : null}
        domain={props.domain}
      />
      <RateReplicasGraph
        rate={latency}
        replicas={props.steps}
        status={latency.status}
        domain={props.domain}
      />
    </>
  )
}

/** The setpoints in force (or recommended, in observe mode). */
function SetpointsPanel({ setpoints }: { setpoints: Setpoints | null }) {
  return (
    <section className="panel" aria-label="Setpoints" data-state={setpoints ? 'ready' : 'empty'}>
      <header className="panel-head">
        <h2>Setpoints</h2>
      </header>
      {setpoints ? (
        <>
          <div className="tiles setpoints">
            <div className="tile" data-field="desiredReplicas">
              <div className="tile-label">desired replicas</div>
              <div className="tile-value">{setpoints.desiredReplicas}</div>
            </div>
            <div className="tile" data-field="batchWindowMs">
              <div className="tile-label">batching window</div>
              <div className="tile-value">{formatMs(setpoints.batchWindowMs)}</div>
            </div>
            <div className="tile" data-field="maxBatch">
              <div className="tile-label">max batch</div>
              <div className="tile-value">{setpoints.maxBatch}</div>
            </div>
          </div>
          {setpoints.admission.length > 0 ? (
            <table className="table admission-table">
              <thead>
                <tr>
                  <th>Priority class</th>
                  <th className="num">Max queue</th>
                  <th className="num">Max concurrency</th>
                  <th className="num">Queue timeout</th>
                </tr>
              </thead>
              <tbody>
                {setpoints.admission.map((a, i) => (
                  <tr key={i} data-class={i}>
                    <td>{i}</td>
                    <td className="num">{formatCap(a.maxQueue)}</td>
                    <td className="num">{formatCap(a.maxConcurrency)}</td>
                    <td className="num">
                      {a.queueTimeoutMs !== undefined ? formatMs(a.queueTimeoutMs) : '–'}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </>
      ) : (
        <StateMessage state="empty">No setpoints yet: no controller has led this target</StateMessage>
      )}
    </section>
  )
}

/** The target's Kubernetes-style conditions. */
function ConditionsPanel({ controller, nowMs }: { controller: Controller; nowMs: number }) {
  return (
    <section
      className="panel"
      aria-label="Conditions"
      data-state={controller.conditions.length ? 'ready' : 'empty'}
    >
      <header className="panel-head">
        <h2>Conditions</h2>
      </header>
      {controller.conditions.length === 0 ? (
        <StateMessage state="empty">No conditions reported yet</StateMessage>
      ) : (
        <table className="table conditions-table">
          <thead>
            <tr>
              <th>Type</th>
              <th>Status</th>
              <th>Reason</th>
              <th>Message</th>
              <th>Since</th>
            </tr>
          </thead>
          <tbody>
            {controller.conditions.map((k) => (
              <tr key={k.type} data-condition={k.type} data-status={k.status}>
                <td>{k.type}</td>
                <td>{k.status}</td>
                <td>{k.reason}</td>
                <td className="small">{k.message}</td>
                <td className="small">{formatAgo(Date.parse(k.lastTransitionTime), nowMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

/** The effect a decision had, measured some intervals later, in words. */
function effectText(d: Decision): string {
  const e = d.effect as {
    before?: { p99Ms?: number | null; replicasReady?: number }
    after?: { p99Ms?: number | null; replicasReady?: number }
  } | null
  if (!e?.before || !e.after) return 'not measured yet'
  return `p99 ${formatMs(e.before.p99Ms ?? null)} → ${formatMs(e.after.p99Ms ?? null)}, ready replicas ${
    e.before.replicasReady ?? '–'
  } → ${e.after.replicasReady ?? '–'}`
}

/** Every decision in the range, newest first: time, mode, actions, reason, outcome, prediction, effect. */
function DecisionTable({ state }: { state: ApiState<DecisionsResponse> }) {
  const list = [...(state.response?.decisions ?? [])].reverse()
  return (
    <section
      className="panel"
      aria-label="Decisions"
      data-state={
        state.status === 'loading' ? 'loading' : list.length ? 'ready' : state.response ? 'empty' : 'error'
      }
    >
      <header className="panel-head">
        <h2>Decisions</h2>
      </header>
      {state.status === 'loading' ? (
        <StateMessage state="loading">Loading decisions…</StateMessage>
      ) : !state.response ? (
        <StateMessage state="error">Could not load the decisions: {state.error?.message}</StateMessage>
      ) : list.length === 0 ? (
        <StateMessage state="empty">No decisions in this range</StateMessage>
      ) : (
        <table className="table decision-table">
          <thead>
            <tr>
              <th>Time (UTC)</th>
              <th>Mode</th>
              <th>Actions</th>
              <th>Reason</th>
              <th>Outcome</th>
              <th>Expected p99</th>
              <th>Effect</th>
            </tr>
          </thead>
          <tbody>
            {list.map((d) => (
              <tr key={d.id} data-decision={d.id} data-outcome={d.outcome}>
                <td className="small">{d.time.replace('T', ' ').slice(0, 19)}</td>
                <td>{d.mode}</td>
                <td className="small">
                  {d.actions.length ? d.actions.map(describeAction).join('; ') : 'none (hold)'}
                </td>
                <td className="small" data-field="reason">
                  {d.reason}
                </td>
                <td>
                  <span className="badge" style={{ color: OUTCOME_COLORS[d.outcome] }} data-field="outcome">
                    {d.outcome}
                  </span>
                  {d.outcomeDetail ? <div className="small muted">{d.outcomeDetail}</div> : null}
                </td>
                <td className="num">{formatMs(d.prediction?.expectedP99Ms ?? null)}</td>
                <td className="small">{effectText(d)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

import { StateMessage } from '../components/state-message.js'
import { useControllers } from '../hooks/use-controllers.js'
import { useNow } from '../hooks/use-now.js'
import { formatAgo } from '../lib/format.js'
import { formatRoute } from '../lib/route.js'
import type { Controller } from '../lib/controller.js'

/** The conditions worth a look: a False AbleToScale/ScalingActive, or a True MetricsStale/ScalingLimited/ConflictingController. */
export function troubledConditions(c: Pick<Controller, 'conditions'>): string[] {
  return c.conditions
    .filter((k) =>
      k.type === 'AbleToScale' || k.type === 'ScalingActive' ? k.status === 'False' : k.status === 'True',
    )
    .map((k) => k.type)
}

/**
 * The controlled targets (`GET /api/v1/controllers`): mode, policy, leader, desired replicas, the conditions
 * that need a look and the last decision. Click a target for its decision timeline.
 *
 * @example <ControllerList />
 */
export function ControllerList() {
  const state = useControllers(10_000)
  const nowMs = useNow(10_000)
  const list = state.response?.controllers ?? []
  return (
    <main className="page" data-page="controllers">
      <div className="page-head">
        <h1>Controllers</h1>
        <p className="muted">
          Each target the live controller runs: observe mode records recommendations, enforce mode applies
          them.
        </p>
      </div>
      <section
        className="panel"
        aria-label="controllers"
        data-state={
          state.status === 'loading' ? 'loading' : !state.response ? 'error' : list.length ? 'ready' : 'empty'
        }
      >
        {state.status === 'loading' ? (
          <StateMessage state="loading">Loading controllers…</StateMessage>
        ) : !state.response ? (
          <StateMessage state="error">Could not load the controllers: {state.error?.message}</StateMessage>
        ) : list.length === 0 ? (
          <StateMessage state="empty">
            No controller targets — run `tailguard controller` with a config (docs/controller.md)
          </StateMessage>
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th>Target</th>
                <th>Mode</th>
                <th>Policy</th>
                <th>Leader</th>
                <th className="num">Desired replicas</th>
                <th>Conditions</th>
                <th>Last decision</th>
              </tr>
            </thead>
            <tbody>
              {list.map((c) => {
                const troubled = troubledConditions(c)
                return (
                  <tr key={c.target} data-target={c.target}>
                    <td>
                      <a
                        className="service-link"
                        href={formatRoute({ page: 'controller', target: c.target, range: '1h', service: '' })}
                      >
                        {c.target}
                      </a>
                    </td>
                    <td>
                      <span className={`badge mode-${c.mode}`}>{c.mode}</span>
                    </td>
                    <td>{c.policy}</td>
                    <td className="small">{c.leader ?? 'none'}</td>
                    <td className="num">{c.setpoints?.desiredReplicas ?? '–'}</td>
                    <td>
                      {troubled.length === 0 ? (
                        <span className="muted">ok</span>
                      ) : (
                        troubled.map((t) => (
                          <span key={t} className="badge badge-pending">
                            {t}
                          </span>
                        ))
                      )}
                    </td>
                    <td className="small">
                      {c.lastDecision
                        ? `${formatAgo(Date.parse(c.lastDecision.time), nowMs)}: ${c.lastDecision.reason}`
                        : 'none yet'}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        )}
      </section>
    </main>
  )
}

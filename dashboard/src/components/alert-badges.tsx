import { activeAlerts } from '../lib/slo.js'
import type { SloStatus } from '../lib/slo-types.js'

/**
 * An SLO's alerts that are not inactive, as badges (`firing page-1h · page`), most urgent first; `none`
 * when every tier is inactive.
 *
 * @example <AlertBadges slo={status} />
 */
export function AlertBadges({ slo }: { slo: Pick<SloStatus, 'alerts'> }) {
  const alerts = activeAlerts(slo)
  if (alerts.length === 0) return <span className="muted">none</span>
  return (
    <span className="alert-badges">
      {alerts.map((a) => (
        <span
          key={a.tier}
          className={`badge badge-${a.state}`}
          data-tier={a.tier}
          data-state={a.state}
          title={a.firedAt ? `since ${a.firedAt}` : undefined}
        >
          {a.state} {a.tier} · {a.severity}
        </span>
      ))}
    </span>
  )
}

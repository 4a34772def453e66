/**
 * The alerts page's data: alert records (`GET /api/v1/alerts`) joined with their SLO's tier (severity, factor,
 * burn rates from `GET /api/v1/slos`), silences (`GET /api/v1/silences`) and webhook deliveries
 * (`GET /api/v1/alerts/deliveries`). Types follow collector/routes/slos.ts.
 *
 * @example
 * ```ts
 * const rows = alertRows(alerts.alerts, slos.slos, Date.now(), 3_600_000)
 * ```
 */
import type { SloStatus } from './slo-types.js'

/** One alert record of `GET /api/v1/alerts`. */
export interface AlertRecord {
  readonly slo: string
  readonly tier: string
  /** `pending`, `firing`, `silenced` or `resolved` (inactive ones are left out by the API). */
  readonly state: string
  readonly activeSince: string | null
  readonly firedAt: string | null
  readonly resolvedAt: string | null
  readonly silenceId: string | null
  readonly updatedAt: string
}

/** `GET /api/v1/alerts`. */
export interface AlertsResponse {
  readonly alerts: readonly AlertRecord[]
}

/** A silence's matchers: at least one of them. */
export interface SilenceMatchers {
  readonly slo?: string
  readonly tier?: string
  readonly severity?: 'page' | 'ticket'
}

/** One silence of `GET /api/v1/silences`. */
export interface Silence {
  readonly id: string
  readonly matchers: SilenceMatchers
  readonly startsAt: string
  readonly endsAt: string
  /** `pending`, `active` or `expired`. */
  readonly state: string
  readonly createdBy: string
  readonly comment: string
  readonly createdAt: string
}

/** `GET /api/v1/silences`. */
export interface SilencesResponse {
  readonly silences: readonly Silence[]
}

/** One outbox row of `GET /api/v1/alerts/deliveries`. */
export interface Delivery {
  readonly seq: number
  readonly receiver: string
  readonly slo: string
  readonly tier: string
  /** `firing` or `resolved`. */
  readonly notification: string
  /** `delivered`, `retrying`, `pending` or `failed`. */
  readonly status: string
  readonly attempts: number
  readonly createdAt: string
  readonly nextAttemptAt: string | null
  readonly deliveredAt: string | null
  readonly failedAt: string | null
  readonly lastError: string | null
}

/** `GET /api/v1/alerts/deliveries`. */
export interface DeliveriesResponse {
  readonly receivers: readonly string[]
  readonly deliveries: readonly Delivery[]
}

/** An alert with its tier's definition and current burn rates. */
export interface AlertRow extends AlertRecord {
  readonly severity: string | null
  readonly factor: number | null
  readonly longWindow: string | null
  readonly shortWindow: string | null
  readonly longBurnRate: number | null
  readonly shortBurnRate: number | null
}

const STATE_ORDER = ['firing', 'pending', 'silenced', 'resolved']

/**
 * The alerts to show over a range: every alert that is not resolved, and those resolved within the range,
 * joined with their tier in the SLO list; firing first, then pending, silenced and resolved, the newest first.
 *
 * @example alertRows(alerts, slos, Date.now(), 3_600_000)[0].state // 'firing'
 */
export function alertRows(
  alerts: readonly AlertRecord[],
  slos: readonly SloStatus[],
  nowMs: number,
  rangeMs: number,
): AlertRow[] {
  const tiers = new Map(slos.flatMap((s) => s.alerts.map((a) => [`${s.name}\u0000${a.tier}`, a] as const)))
  return alerts
    .filter(
      (a) => a.state !== 'resolved' || (a.resolvedAt !== null && Date.parse(a.resolvedAt) >= nowMs - rangeMs),
    )
    .map((a) => {
      const t = tiers.get(`${a.slo}\u0000${a.tier}`)
      return {
        ...a,
        severity: t?.severity ?? null,
        factor: t?.factor ?? null,
        longWindow: t?.longWindow ?? null,
        shortWindow: t?.shortWindow ?? null,
        longBurnRate: t?.longBurnRate ?? null,
        shortBurnRate: t?.shortBurnRate ?? null,
      }
    })
    .sort((a, b) => {
      const rank = (s: string) => (STATE_ORDER.includes(s) ? STATE_ORDER.indexOf(s) : STATE_ORDER.length)
      const time = (r: AlertRecord) => Date.parse(r.resolvedAt ?? r.firedAt ?? r.activeSince ?? r.updatedAt)
      return rank(a.state) - rank(b.state) || time(b) - time(a) || a.slo.localeCompare(b.slo)
    })
}

/**
 * A silence's matchers as text.
 *
 * @example matchersText({ slo: 'chat-latency', severity: 'page' }) // 'slo=chat-latency, severity=page'
 */
export function matchersText(m: SilenceMatchers): string {
  return (['slo', 'tier', 'severity'] as const)
    .flatMap((k) => (m[k] === undefined ? [] : [`${k}=${m[k]}`]))
    .join(', ')
}

/** What the silence form holds. */
export interface SilenceDraft {
  readonly slo: string
  readonly tier: string
  readonly severity: string
  readonly duration: string
  readonly comment: string
}

/**
 * The body of `POST /api/v1/silences` for a draft, or the problem to show instead of sending it (the API checks
 * again and its message is shown as is).
 *
 * @example silenceBody({ slo: 'chat', tier: '', severity: '', duration: '2h', comment: 'deploy' }) // { ok: true, body: { matchers: { slo: 'chat' }, duration: '2h', comment: 'deploy', createdBy: 'dashboard' } }
 */
export function silenceBody(
  d: SilenceDraft,
): { ok: true; body: Record<string, unknown> } | { ok: false; problem: string } {
  const matchers: Record<string, string> = {}
  if (d.slo) matchers['slo'] = d.slo
  if (d.tier) matchers['tier'] = d.tier
  if (d.severity) matchers['severity'] = d.severity
  if (Object.keys(matchers).length === 0)
    return { ok: false, problem: 'Choose at least one of SLO, tier or severity to silence.' }
  if (!/^\d+(s|m|h|d)$/.test(d.duration.trim()))
    return { ok: false, problem: 'Duration: give a number and a unit, like 30m, 2h or 1d.' }
  if (d.comment.trim() === '')
    return { ok: false, problem: 'Comment: say why (it is shown with the silence).' }
  return {
    ok: true,
    body: { matchers, duration: d.duration.trim(), comment: d.comment.trim(), createdBy: 'dashboard' },
  }
}

/**
 * The fleet overview's data: the answer of `GET /api/v1/fleet` joined with the SLOs (`GET /api/v1/slos`) that
 * cover each service, and sorted by what needs attention. Every figure is the API's; this only joins and orders.
 *
 * @example
 * ```ts
 * const rows = fleetRows(fleet.services, slos.slos) // firing services first
 * ```
 */
import type { SloStatus } from './slo-types.js'

/** One service of `GET /api/v1/fleet` over the asked range. */
export interface FleetService {
  readonly service: string
  readonly models: readonly string[]
  readonly versions: readonly string[]
  /** Distinct replicas that reported in the range. */
  readonly replicas: number
  readonly lastSeen: string
  readonly requests: { readonly ok: number; readonly error: number; readonly shed: number }
  /** Seconds of the range with data; null without requests. */
  readonly dataSeconds: number | null
  /** (ok + error + shed) / dataSeconds. */
  readonly ratePerSecond: number | null
  readonly errorRatio: number | null
  readonly shedRatio: number | null
  /** ok requests per second within every covering latency SLO; null with `goodputReason`. */
  readonly goodputPerSecond: number | null
  readonly goodputReason?: string
  readonly latencyMs: { readonly count: number; readonly p50: number | null; readonly p99: number | null }
  readonly gpus: { readonly count: number; readonly utilPct: number | null }
  /** USD per million requests from the GPUs the replicas hold and their prices; null with the collector's reason. */
  readonly costPerMillionRequests: ServiceCost
}

/** `GET /api/v1/fleet`. */
export interface FleetResponse {
  readonly from: string
  readonly to: string
  readonly stepMs: number
  readonly services: readonly FleetService[]
}

/** Why a row is where it is, most urgent first. */
export type Attention = 'firing' | 'burning' | 'slow' | 'ok' | 'idle'

const ATTENTION_ORDER: readonly Attention[] = ['firing', 'burning', 'slow', 'ok', 'idle']

/** One row of the fleet table: the service's figures and the state of the SLOs that cover it. */
export interface FleetRow extends FleetService {
  /** Names of the SLOs whose selector covers the service. */
  readonly slos: readonly string[]
  /** The lowest remaining budget among them (0..1, negative when overspent); null without data. */
  readonly budgetRemaining: number | null
  /** The highest burn rate over the fastest alert tier's long window among them. */
  readonly burnRate: number | null
  /** That window (`1h` for a 30-day SLO). */
  readonly burnWindow: string | null
  /** Alerts firing (not silenced) across those SLOs. */
  readonly firing: number
  /** Alerts pending (condition holds, waiting for `for`). */
  readonly pending: number
  /** The tightest latency objective on total latency among them, to set p99 against. */
  readonly objectiveMs: number | null
  readonly attention: Attention
}

/** True when an SLO's selector covers the service (an SLO without a service selector covers every service). */
function covers(slo: Pick<SloStatus, 'selector'>, service: string): boolean {
  const s = slo.selector['service']
  return s === undefined || s === service
}

function minOrNull(xs: readonly (number | null)[]): number | null {
  const known = xs.filter((x): x is number => x !== null)
  return known.length > 0 ? Math.min(...known) : null
}

/** The title of the fleet page's rate chart, shared by the chart and the panels shown while its chunk loads. */
export const FLEET_RATE_CHART_TITLE = 'Request rate and goodput'

/**
 * Why a service needs attention: an alert firing; else its budget overspent, burning faster than it refills
 * (burn rate above 1) or an alert pending; else p99 over its latency objective; else nothing (`ok`), or no
 * request in the range (`idle`).
 *
 * @example attentionOf({ firing: 0, pending: 0, budgetRemaining: -0.2, burnRate: 3, objectiveMs: null, latencyMs: { p99: 90 }, dataSeconds: 60 }) // 'burning'
 */
export function attentionOf(
  r: Pick<FleetRow, 'firing' | 'pending' | 'budgetRemaining' | 'burnRate' | 'objectiveMs' | 'dataSeconds'> & {
    readonly latencyMs: { readonly p99: number | null }
  },
): Attention {
  if (r.firing > 0) return 'firing'
  if (r.pending > 0 || (r.budgetRemaining !== null && r.budgetRemaining < 0) || (r.burnRate ?? 0) > 1)
    return 'burning'
  if (r.objectiveMs !== null && r.latencyMs.p99 !== null && r.latencyMs.p99 > r.objectiveMs) return 'slow'
  return r.dataSeconds === null ? 'idle' : 'ok'
}

/**
 * Joins each service with the SLOs that cover it and sorts by attention ({@link attentionOf}), then by the
 * remaining budget (least first), the burn rate (highest first) and the name.
 *
 * @example fleetRows(fleet.services, slos.slos)[0].attention // 'firing' when any service has an alert firing
 */
export function fleetRows(services: readonly FleetService[], slos: readonly SloStatus[]): FleetRow[] {
  const rows = services.map((s): FleetRow => {
    const mine = slos.filter((slo) => covers(slo, s.service))
    let burnRate: number | null = null
    let burnWindow: string | null = null
    for (const slo of mine) {
      const fastest = slo.alerts[0]
      if (fastest && (burnRate === null || fastest.longBurnRate > burnRate)) {
        burnRate = fastest.longBurnRate
        burnWindow = fastest.longWindow
      }
    }
    const alerts = mine.flatMap((slo) => slo.alerts)
    const base = {
      ...s,
      slos: mine.map((slo) => slo.name),
      budgetRemaining: minOrNull(mine.map((slo) => slo.budgetRemaining)),
      burnRate,
      burnWindow,
      firing: alerts.filter((a) => a.state === 'firing').length,
      pending: alerts.filter((a) => a.state === 'pending').length,
      objectiveMs: minOrNull(
        mine.map((slo) =>
          slo.kind === 'latency' && (slo.phase === null || slo.phase === 'total') ? slo.thresholdMs : null,
        ),
      ),
    }
    return { ...base, attention: attentionOf(base) }
  })
  const rank = (r: FleetRow) => ATTENTION_ORDER.indexOf(r.attention)
  return rows.sort(
    (a, b) =>
      rank(a) - rank(b) ||
      (a.budgetRemaining ?? Infinity) - (b.budgetRemaining ?? Infinity) ||
      (b.burnRate ?? -Infinity) - (a.burnRate ?? -Infinity) ||
      a.service.localeCompare(b.service),
  )
}

/** Totals over the fleet table for the tiles above it. */
export interface FleetTotals {
  readonly services: number
  readonly needAttention: number
  readonly firing: number
  /** Sum of the services' rates (each over its own time with data). */
  readonly ratePerSecond: number
}

/**
 * Tiles' totals: services, how many need attention (firing, burning or slow), firing alerts, and the summed rate.
 *
 * @example fleetTotals(rows).needAttention // 2
 */
export function fleetTotals(rows: readonly FleetRow[]): FleetTotals {
  return {
    services: rows.length,
    needAttention: rows.filter((r) => r.attention !== 'ok' && r.attention !== 'idle').length,
    firing: rows.reduce((n, r) => n + r.firing, 0),
    ratePerSecond: rows.reduce((n, r) => n + (r.ratePerSecond ?? 0), 0),
  }
}

/** A service's cost per million requests (`costPerMillionRequests` of `GET /api/v1/fleet`): USD, or null with the reason. */
export interface ServiceCost {
  readonly usd: number | null
  readonly reason?: string
}

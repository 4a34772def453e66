/**
 * SLO API statuses for the dashboard's unit tests: a 99.9% availability SLO on `chat` over 30 days with half its
 * budget left and the workbook's first three tiers, every field overridable.
 *
 * @example sloStatus({ budgetRemaining: -0.2, alerts: [sloTier({ state: 'firing' })] })
 */
import type { SloAlertStatus, SloStatus } from '../../dashboard/src/lib/slo-types.js'

/** One alert tier (page-1h, inactive, burning at 0.5×). */
export const sloTier = (over: Partial<SloAlertStatus> = {}): SloAlertStatus => ({
  tier: 'page-1h',
  severity: 'page',
  factor: 14.4,
  longWindow: '1h',
  shortWindow: '5m',
  longBurnRate: 0.5,
  shortBurnRate: 0.5,
  condition: false,
  state: 'inactive',
  firedAt: null,
  resolvedAt: null,
  silenceId: null,
  ...over,
})

/** One SLO status. */
export const sloStatus = (over: Partial<SloStatus> = {}): SloStatus => ({
  name: 'chat-availability',
  description: '',
  source: 'file',
  kind: 'availability',
  selector: { service: 'chat' },
  objective: 0.999,
  window: '30d',
  budgeting: 'occurrences',
  thresholdMs: null,
  phase: null,
  sli: 0.9995,
  budgetRemaining: 0.5,
  events: { good: 19_990, total: 20_000 },
  errorBudget: null,
  burnRates: { '1h': 0.5, '5m': 0.5, '30d': 0.5 },
  forecast: { state: 'never', exhaustedAt: null },
  alerts: [
    sloTier({}),
    sloTier({ tier: 'page-6h', factor: 6, longWindow: '6h', shortWindow: '30m' }),
    sloTier({ tier: 'ticket-1d', severity: 'ticket', factor: 3, longWindow: '1d', shortWindow: '2h' }),
  ],
  windowStart: '2026-01-01T00:00:00.000Z',
  evaluatedAt: '2026-01-31T00:00:00.000Z',
  ...over,
})

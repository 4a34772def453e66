/**
 * The SLO engine's entry point: what the CLI and the collector app use.
 *
 * @example
 * ```ts
 * import { createSloEngine, loadSloFiles } from './slo/index.js'
 * ```
 */
export { createSloEngine, durationText, DEFAULT_MAX_SERIES_PER_SLO } from './engine.js'
export type { SloEngine, SloEngineOptions, SloEvaluation, TierStatus, CycleResult } from './engine.js'
export { loadSloFiles, parseSloText, formatProblems, SLO_FILE_VERSION } from './loader.js'
export type { SloFileProblem, SloLoadResult } from './loader.js'
export {
  validateSlo,
  sloToRaw,
  parseObjective,
  windowLengthMs,
  windowStartMs,
  SLO_WINDOWS,
} from './definition.js'
export type { SloDefinition, SloSelector, Sli, SloWindow, Budgeting, FieldProblem } from './definition.js'
export {
  burnRate,
  alertTiers,
  budgetConsumedBy,
  budgetTimeMs,
  errorBudget,
  forecastExhaustion,
  countAtOrBelow,
  DEFAULT_BURN_TIERS,
  REFERENCE_WINDOW_MS,
} from './math.js'
export type { BurnTier, Severity, ErrorBudget, BudgetForecast } from './math.js'
export { stepAlert, matchSilence, silenceActive } from './alerts.js'
export type { AlertRecord, AlertState, Silence, SilenceMatchers } from './alerts.js'
export { createSloPersistence } from './persistence.js'
export type { SloPersistence, OutboxRow, OutboxEntry } from './persistence.js'
export type { SloTables } from './tables.js'
export type { SloDataSource } from './series.js'
export {
  signatureHeader,
  verifySignature,
  alertmanagerPayload,
  slackPayload,
  backoffMs,
  SIGNATURE_HEADER,
  IDEMPOTENCY_HEADER,
} from './webhooks.js'
export type { WebhookReceiver, AlertNotification, SloLogger, DeliveryResult } from './webhooks.js'

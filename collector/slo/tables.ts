/**
 * The SLO engine's tables (migration `2026-11-21T2200_slo`). The lead merges this into the store's one
 * `DB` interface. Times are epoch ms in bigint columns (PostgreSQL's driver returns them as strings, so
 * persistence.ts converts with `Number`).
 */
import type { ColumnType } from 'kysely'

type Ms = ColumnType<number | string, number, number>
type MsNull = ColumnType<number | string | null, number | null, number | null>

/** SLOs created through the API (file SLOs live in their files). */
export interface SloDefinitionsTable {
  name: string
  /** The definition in tailguard's JSON form (sloToRaw). */
  spec: string
  created_ms: Ms
  updated_ms: Ms
}

/** The state of each (SLO, tier) alert. */
export interface SloAlertsTable {
  slo: string
  tier: string
  state: string
  active_since_ms: MsNull
  fired_at_ms: MsNull
  resolved_at_ms: MsNull
  /** 1 once a firing notification went out for the current episode. */
  notified_firing: number
  silence_id: string | null
  updated_ms: Ms
}

/** Silences: matchers on SLO, tier and severity, with an expiry. */
export interface SloSilencesTable {
  id: string
  /** JSON object of label matchers, e.g. {"slo":"chat-latency","tier":"page-1h"}. */
  matchers: string
  starts_ms: Ms
  ends_ms: Ms
  created_by: string
  comment: string
  created_ms: Ms
}

/** The durable notification outbox: one row per (receiver, notification). */
export interface SloOutboxTable {
  /** Global order of notifications (per receiver, delivery follows it). */
  seq: ColumnType<number | string, number, never>
  receiver: string
  idempotency_key: string
  /** The exact request body to send. */
  body: string
  created_ms: Ms
  attempts: number
  next_attempt_ms: Ms
  delivered_ms: MsNull
  failed_ms: MsNull
  last_error: string | null
}

/**
 * The SLO engine's part of the database schema.
 *
 * @example const db = new Kysely<SloTables>({ dialect })
 */
export interface SloTables {
  slo_definitions: SloDefinitionsTable
  slo_alerts: SloAlertsTable
  slo_silences: SloSilencesTable
  slo_outbox: SloOutboxTable
}

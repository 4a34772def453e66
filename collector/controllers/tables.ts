/**
 * The live controller's tables (migration `2026-11-23T1200_controller`). Times are epoch ms in bigint columns
 * (PostgreSQL's driver returns them as strings, so persistence.ts converts with `Number`); JSON lives in text.
 */
import type { ColumnType, Generated } from 'kysely'

type Ms = ColumnType<number | string, number, number>
type MsNull = ColumnType<number | string | null, number | null, number | null>

/** One controlled target: mode, the lease with its fencing token, and the status its leader last wrote. */
export interface ControllerTable {
  target: string
  /** `observe` or `enforce`. */
  mode: string
  /** `config` (follows the config file) or `api` (set through POST /controllers/{target}/mode). */
  mode_source: string
  policy: string
  lease_holder: string | null
  /** Incremented on every change of leader; actuators and decisions carry it. */
  fencing_token: ColumnType<number | string, number, number>
  lease_expires_ms: Ms
  /** JSON Setpoints the fleet was last set to (or recommended, in observe mode). */
  setpoints: string | null
  /** JSON array of Kubernetes-style conditions. */
  conditions: string
  last_decision_id: ColumnType<number | string | null, number | null, number | null>
  mode_changed_ms: Ms
  rollback_requested_ms: MsNull
  status_ms: Ms
}

/** One stored decision. */
export interface DecisionTable {
  id: Generated<number>
  target: string
  time_ms: Ms
  policy: string
  mode: string
  holder: string
  fencing_token: ColumnType<number | string, number, number>
  observation: string
  prediction: string
  actions: string
  setpoints_before: string
  setpoints_after: string
  reason: string
  /** `pending` while actuators run, then `applied`, `failed` or `skipped`. */
  outcome: string
  outcome_detail: string | null
  effect: string | null
  effect_ms: MsNull
}

/** Every controller table, merged into the store's `DB` interface. */
export interface ControllerTables {
  tg_controller: ControllerTable
  tg_decision: DecisionTable
}

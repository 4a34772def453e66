/**
 * Reads and writes the live controller's tables (targets, leases with fencing tokens, decisions) through
 * kysely, on SQLite or PostgreSQL alike. The collector's routes read them; `tailguard controller` writes them.
 */
import type { Kysely, Selectable } from 'kysely'
import { storeDatabase } from '../store/handle.js'
import type { Store } from '../store/types.js'
import type { ControllerTables, DecisionTable } from './tables.js'

/** `observe`: decide and store, change nothing. `enforce`: apply the decisions through the actuators. */
export type ControllerMode = 'observe' | 'enforce'

/**
 * What became of a decision: `pending` while its actuators run; `applied`, `failed` or `skipped` once known;
 * `unknown` when its leader stopped between storing it and recording the outcome (it may have reached the
 * actuators, so the next leader takes its setpoints as the ones in force).
 */
export type DecisionOutcome = 'pending' | 'applied' | 'failed' | 'skipped' | 'unknown'

/** The condition types a controller reports (Kubernetes style, as the HPA does). */
export const CONDITION_TYPES = [
  'AbleToScale',
  'ScalingActive',
  'ScalingLimited',
  'MetricsStale',
  'ConflictingController',
] as const
export type ConditionType = (typeof CONDITION_TYPES)[number]

/** A Kubernetes-style condition. */
export interface ControllerCondition {
  readonly type: ConditionType
  readonly status: 'True' | 'False' | 'Unknown'
  readonly reason: string
  readonly message: string
  readonly lastTransitionMs: number
}

/** One stored decision. `observation`, `prediction`, actions and setpoints are the controller's JSON. */
export interface DecisionRecord {
  readonly id: number
  readonly target: string
  readonly timeMs: number
  readonly policy: string
  readonly mode: ControllerMode
  readonly holder: string
  readonly fencingToken: number
  readonly observation: unknown
  readonly prediction: unknown
  readonly actions: readonly unknown[]
  readonly setpointsBefore: unknown
  readonly setpointsAfter: unknown
  readonly reason: string
  readonly outcome: DecisionOutcome
  readonly outcomeDetail: string | null
  readonly effect: unknown
  readonly effectMs: number | null
}

/** A decision to store (the id and effect come later). */
export type NewDecision = Omit<DecisionRecord, 'id' | 'effect' | 'effectMs' | 'holder' | 'fencingToken'>

/** One target's row: mode, lease and the status its leader last wrote. */
export interface ControllerRecord {
  readonly target: string
  readonly mode: ControllerMode
  readonly modeSource: 'config' | 'api'
  readonly modeChangedMs: number
  readonly policy: string
  readonly leaseHolder: string | null
  readonly fencingToken: number
  readonly leaseExpiresMs: number
  readonly setpoints: unknown
  readonly conditions: readonly ControllerCondition[]
  readonly lastDecisionId: number | null
  readonly rollbackRequestedMs: number | null
  readonly statusMs: number
}

/** The result of trying to take or keep a target's lease. */
export type LeaseResult =
  | { readonly held: true; readonly fencingToken: number; readonly acquired: boolean }
  | { readonly held: false; readonly holder: string | null; readonly expiresMs: number }

const num = (v: number | string): number => Number(v)
const numOrNull = (v: number | string | null): number | null => (v === null ? null : Number(v))
const parse = (s: string | null): unknown => (s === null ? null : (JSON.parse(s) as unknown))

function toDecision(r: Selectable<DecisionTable>): DecisionRecord {
  return {
    id: num(r.id),
    target: r.target,
    timeMs: num(r.time_ms),
    policy: r.policy,
    mode: r.mode as ControllerMode,
    holder: r.holder,
    fencingToken: num(r.fencing_token),
    observation: parse(r.observation),
    prediction: parse(r.prediction),
    actions: parse(r.actions) as unknown[],
    setpointsBefore: parse(r.setpoints_before),
    setpointsAfter: parse(r.setpoints_after),
    reason: r.reason,
    outcome: r.outcome as DecisionOutcome,
    outcomeDetail: r.outcome_detail,
    effect: parse(r.effect),
    effectMs: numOrNull(r.effect_ms),
  }
}

/**
 * The controller tables' persistence over a store made by `createStore` (it shares the store's connection
 * pool and migrations).
 *
 * Leases: one row per target; `acquireLease` takes an expired lease with a compare-and-set on the fencing
 * token (so two controllers racing for it cannot both win, on either dialect), and `recordDecision` inserts
 * only while the caller still holds the lease with the same token (the row is locked `FOR UPDATE` on
 * PostgreSQL; SQLite serialises writers). A controller that lost its lease can therefore never store, and so
 * never apply, a decision.
 *
 * @example
 * ```ts
 * const cs = createControllerStore(store)
 * const lease = await cs.acquireLease('chat', 'host-1:4242', Date.now(), 7_500)
 * if (lease.held) await cs.recordDecision(decision, 'host-1:4242', lease.fencingToken, Date.now())
 * ```
 */
export function createControllerStore(store: Store) {
  const kdb = storeDatabase(store)
  if (!kdb) throw new Error('createControllerStore needs a store made by createStore')
  const db = kdb as unknown as Kysely<ControllerTables>
  const postgres = store.dialect === 'postgres'

  const getRow = (target: string) =>
    db.selectFrom('tg_controller').selectAll().where('target', '=', target).executeTakeFirst()

  function toRecord(r: NonNullable<Awaited<ReturnType<typeof getRow>>>): ControllerRecord {
    return {
      target: r.target,
      mode: r.mode as ControllerMode,
      modeSource: r.mode_source as 'config' | 'api',
      modeChangedMs: num(r.mode_changed_ms),
      policy: r.policy,
      leaseHolder: r.lease_holder,
      fencingToken: num(r.fencing_token),
      leaseExpiresMs: num(r.lease_expires_ms),
      setpoints: parse(r.setpoints),
      conditions: (parse(r.conditions) as ControllerCondition[] | null) ?? [],
      lastDecisionId: numOrNull(r.last_decision_id),
      rollbackRequestedMs: numOrNull(r.rollback_requested_ms),
      statusMs: num(r.status_ms),
    }
  }

  return {
    /**
     * Registers a target from the config (idempotent). A mode set through the API outlives restarts; a
     * mode from the config follows the config.
     */
    async ensureTarget(
      target: string,
      cfg: { mode: ControllerMode; policy: string },
      nowMs: number,
    ): Promise<ControllerRecord> {
      await db
        .insertInto('tg_controller')
        .values({
          target,
          mode: cfg.mode,
          mode_source: 'config',
          policy: cfg.policy,
          lease_holder: null,
          fencing_token: 0,
          lease_expires_ms: 0,
          setpoints: null,
          conditions: '[]',
          last_decision_id: null,
          mode_changed_ms: nowMs,
          rollback_requested_ms: null,
          status_ms: nowMs,
        })
        .onConflict((oc) => oc.column('target').doNothing())
        .execute()
      await db
        .updateTable('tg_controller')
        .set({ mode: cfg.mode, policy: cfg.policy })
        .where('target', '=', target)
        .where('mode_source', '=', 'config')
        .execute()
      return toRecord((await getRow(target))!)
    },

    /**
     * Takes or renews the lease of `target` for `holder` until `nowMs + ttlMs`. A new leader gets the next
     * fencing token; a renewal keeps it.
     */
    async acquireLease(target: string, holder: string, nowMs: number, ttlMs: number): Promise<LeaseResult> {
      const row = await getRow(target)
      if (!row) return { held: false, holder: null, expiresMs: 0 }
      const token = num(row.fencing_token)
      const expires = num(row.lease_expires_ms)
      if (row.lease_holder === holder && expires > nowMs) {
        const r = await db
          .updateTable('tg_controller')
          .set({ lease_expires_ms: nowMs + ttlMs })
          .where('target', '=', target)
          .where('lease_holder', '=', holder)
          .where('fencing_token', '=', token)
          .executeTakeFirst()
        if (Number(r.numUpdatedRows) === 1) return { held: true, fencingToken: token, acquired: false }
        return { held: false, holder: null, expiresMs: 0 }
      }
      if (expires > nowMs) return { held: false, holder: row.lease_holder, expiresMs: expires }
      const r = await db
        .updateTable('tg_controller')
        .set({ lease_holder: holder, fencing_token: token + 1, lease_expires_ms: nowMs + ttlMs })
        .where('target', '=', target)
        .where('fencing_token', '=', token)
        .where('lease_expires_ms', '<=', nowMs)
        .executeTakeFirst()
      if (Number(r.numUpdatedRows) === 1) return { held: true, fencingToken: token + 1, acquired: true }
      const now = await getRow(target)
      return { held: false, holder: now?.lease_holder ?? null, expiresMs: num(now?.lease_expires_ms ?? 0) }
    },

    /** Gives the lease up (on a clean shutdown), so a standby takes over at once. */
    async releaseLease(target: string, holder: string, fencingToken: number): Promise<void> {
      await db
        .updateTable('tg_controller')
        .set({ lease_expires_ms: 0 })
        .where('target', '=', target)
        .where('lease_holder', '=', holder)
        .where('fencing_token', '=', fencingToken)
        .execute()
    },

    /**
     * Stores a decision if `holder` still holds the lease with `fencingToken` at `nowMs`; otherwise stores
     * nothing and answers `fenced`.
     */
    async recordDecision(
      d: NewDecision,
      holder: string,
      fencingToken: number,
      nowMs: number,
    ): Promise<{ kind: 'stored'; id: number } | { kind: 'fenced' }> {
      return db.transaction().execute(async (tx) => {
        let q = tx
          .selectFrom('tg_controller')
          .select(['lease_holder', 'fencing_token', 'lease_expires_ms'])
          .where('target', '=', d.target)
        if (postgres) q = q.forUpdate()
        const row = await q.executeTakeFirst()
        if (
          !row ||
          row.lease_holder !== holder ||
          num(row.fencing_token) !== fencingToken ||
          num(row.lease_expires_ms) <= nowMs
        )
          return { kind: 'fenced' as const }
        const ins = await tx
          .insertInto('tg_decision')
          .values({
            target: d.target,
            time_ms: d.timeMs,
            policy: d.policy,
            mode: d.mode,
            holder,
            fencing_token: fencingToken,
            observation: JSON.stringify(d.observation),
            prediction: JSON.stringify(d.prediction),
            actions: JSON.stringify(d.actions),
            setpoints_before: JSON.stringify(d.setpointsBefore),
            setpoints_after: JSON.stringify(d.setpointsAfter),
            reason: d.reason,
            outcome: d.outcome,
            outcome_detail: d.outcomeDetail,
            effect: null,
            effect_ms: null,
          })
          .returning('id')
          .executeTakeFirstOrThrow()
        const id = num(ins.id)
        await tx
          .updateTable('tg_controller')
          .set({ last_decision_id: id })
          .where('target', '=', d.target)
          .execute()
        return { kind: 'stored' as const, id }
      })
    },

    /** Records what the actuators did with a stored decision. */
    async setOutcome(id: number, outcome: DecisionOutcome, detail: string | null): Promise<void> {
      await db
        .updateTable('tg_decision')
        .set({ outcome, outcome_detail: detail })
        .where('id', '=', id)
        .execute()
    },

    /** Records the effect measured some intervals after the decision. */
    async setEffect(id: number, effect: unknown, nowMs: number): Promise<void> {
      await db
        .updateTable('tg_decision')
        .set({ effect: JSON.stringify(effect), effect_ms: nowMs })
        .where('id', '=', id)
        .execute()
    },

    /** Writes the leader's view of the target (setpoints, conditions); ignored unless it holds the lease. */
    async putStatus(
      target: string,
      holder: string,
      fencingToken: number,
      status: { setpoints: unknown; conditions: readonly ControllerCondition[]; nowMs: number },
    ): Promise<boolean> {
      const r = await db
        .updateTable('tg_controller')
        .set({
          setpoints: JSON.stringify(status.setpoints),
          conditions: JSON.stringify(status.conditions),
          status_ms: status.nowMs,
        })
        .where('target', '=', target)
        .where('lease_holder', '=', holder)
        .where('fencing_token', '=', fencingToken)
        .executeTakeFirst()
      return Number(r.numUpdatedRows) === 1
    },

    /** Sets the mode through the API (it then outlives config reloads); false when the target is unknown. */
    async setMode(target: string, mode: ControllerMode, nowMs: number): Promise<boolean> {
      const r = await db
        .updateTable('tg_controller')
        .set({ mode, mode_source: 'api', mode_changed_ms: nowMs })
        .where('target', '=', target)
        .executeTakeFirst()
      return Number(r.numUpdatedRows) === 1
    },

    /** Asks the leader to restore the setpoints from before the last applied decision; false when unknown. */
    async requestRollback(target: string, nowMs: number): Promise<boolean> {
      const r = await db
        .updateTable('tg_controller')
        .set({ rollback_requested_ms: nowMs })
        .where('target', '=', target)
        .executeTakeFirst()
      return Number(r.numUpdatedRows) === 1
    },

    /** Clears a rollback request the leader has handled (only the request it saw). */
    async clearRollback(target: string, requestedMs: number): Promise<void> {
      await db
        .updateTable('tg_controller')
        .set({ rollback_requested_ms: null })
        .where('target', '=', target)
        .where('rollback_requested_ms', '=', requestedMs)
        .execute()
    },

    async get(target: string): Promise<ControllerRecord | null> {
      const r = await getRow(target)
      return r ? toRecord(r) : null
    },

    async list(): Promise<ControllerRecord[]> {
      const rows = await db.selectFrom('tg_controller').selectAll().orderBy('target').execute()
      return rows.map(toRecord)
    },

    async decision(id: number): Promise<DecisionRecord | null> {
      const r = await db.selectFrom('tg_decision').selectAll().where('id', '=', id).executeTakeFirst()
      return r ? toDecision(r) : null
    },

    /** Decisions in `[fromMs, toMs)`, oldest first, at most `limit`. */
    async decisions(q: {
      target?: string
      fromMs: number
      toMs: number
      limit: number
    }): Promise<DecisionRecord[]> {
      let s = db
        .selectFrom('tg_decision')
        .selectAll()
        .where('time_ms', '>=', q.fromMs)
        .where('time_ms', '<', q.toMs)
      if (q.target !== undefined) s = s.where('target', '=', q.target)
      const rows = await s.orderBy('time_ms', 'desc').orderBy('id', 'desc').limit(q.limit).execute()
      return rows.reverse().map(toDecision)
    },

    /** The newest decision of a target that is (`applied`) or may be (`unknown`) in force, for rollback. */
    async lastApplied(target: string): Promise<DecisionRecord | null> {
      const r = await db
        .selectFrom('tg_decision')
        .selectAll()
        .where('target', '=', target)
        .where('outcome', 'in', ['applied', 'unknown'])
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst()
      return r ? toDecision(r) : null
    },
  }
}

/** The controller tables' persistence (see {@link createControllerStore}). */
export type ControllerStore = ReturnType<typeof createControllerStore>

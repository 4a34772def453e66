/**
 * Reads and writes the SLO engine's tables through kysely, on SQLite or PostgreSQL alike.
 */
import type { Kysely, Transaction } from 'kysely'
import type { AlertRecord, AlertState, Silence, SilenceMatchers } from './alerts.js'
import type { SloTables } from './tables.js'

const num = (v: number | string): number => Number(v)
const numOrNull = (v: number | string | null): number | null => (v === null ? null : Number(v))

/** One row of the outbox as the dispatcher sees it. */
export interface OutboxRow {
  readonly seq: number
  readonly receiver: string
  readonly idempotencyKey: string
  readonly body: string
  readonly createdMs: number
  readonly attempts: number
  readonly nextAttemptMs: number
  readonly deliveredMs: number | null
  readonly failedMs: number | null
  readonly lastError: string | null
}

/** A notification to enqueue for one receiver. */
export interface OutboxEntry {
  readonly receiver: string
  readonly idempotencyKey: string
  readonly body: string
}

/**
 * The SLO engine's persistence.
 *
 * @example
 * ```ts
 * const p = createSloPersistence(db)
 * await p.saveDefinition('chat-latency', JSON.stringify(raw), Date.now())
 * ```
 */
export function createSloPersistence(db: Kysely<SloTables>) {
  return {
    async listDefinitions(): Promise<
      Array<{ name: string; spec: string; createdMs: number; updatedMs: number }>
    > {
      const rows = await db.selectFrom('slo_definitions').selectAll().orderBy('name').execute()
      return rows.map((r) => ({
        name: r.name,
        spec: r.spec,
        createdMs: num(r.created_ms),
        updatedMs: num(r.updated_ms),
      }))
    },

    /** Creates or replaces an API-defined SLO; returns whether it existed. */
    async saveDefinition(name: string, spec: string, nowMs: number): Promise<{ created: boolean }> {
      return db.transaction().execute(async (tx) => {
        const existing = await tx
          .selectFrom('slo_definitions')
          .select('name')
          .where('name', '=', name)
          .executeTakeFirst()
        if (existing) {
          await tx
            .updateTable('slo_definitions')
            .set({ spec, updated_ms: nowMs })
            .where('name', '=', name)
            .execute()
          return { created: false }
        }
        await tx
          .insertInto('slo_definitions')
          .values({ name, spec, created_ms: nowMs, updated_ms: nowMs })
          .execute()
        return { created: true }
      })
    },

    async deleteDefinition(name: string): Promise<boolean> {
      const r = await db.deleteFrom('slo_definitions').where('name', '=', name).executeTakeFirst()
      await db.deleteFrom('slo_alerts').where('slo', '=', name).execute()
      return Number(r.numDeletedRows) > 0
    },

    async listAlerts(): Promise<AlertRecord[]> {
      const rows = await db.selectFrom('slo_alerts').selectAll().orderBy('slo').orderBy('tier').execute()
      return rows.map((r) => ({
        slo: r.slo,
        tier: r.tier,
        state: r.state as AlertState,
        activeSinceMs: numOrNull(r.active_since_ms),
        firedAtMs: numOrNull(r.fired_at_ms),
        resolvedAtMs: numOrNull(r.resolved_at_ms),
        notifiedFiring: r.notified_firing === 1,
        silenceId: r.silence_id,
        updatedMs: num(r.updated_ms),
      }))
    },

    /**
     * Writes changed alert states and enqueues their notifications in one transaction, so a state change
     * and its notification are stored together or not at all.
     */
    async commitCycle(
      alerts: readonly AlertRecord[],
      outbox: readonly OutboxEntry[],
      nowMs: number,
    ): Promise<void> {
      if (alerts.length === 0 && outbox.length === 0) return
      await db.transaction().execute(async (tx) => {
        for (const a of alerts) {
          const row = {
            state: a.state,
            active_since_ms: a.activeSinceMs,
            fired_at_ms: a.firedAtMs,
            resolved_at_ms: a.resolvedAtMs,
            notified_firing: a.notifiedFiring ? 1 : 0,
            silence_id: a.silenceId,
            updated_ms: a.updatedMs,
          }
          await tx
            .insertInto('slo_alerts')
            .values({ slo: a.slo, tier: a.tier, ...row })
            .onConflict((oc) => oc.columns(['slo', 'tier']).doUpdateSet(row))
            .execute()
        }
        await enqueue(tx, outbox, nowMs)
      })
    },

    async listSilences(): Promise<Silence[]> {
      const rows = await db
        .selectFrom('slo_silences')
        .selectAll()
        .orderBy('created_ms')
        .orderBy('id')
        .execute()
      return rows.map((r) => ({
        id: r.id,
        matchers: JSON.parse(r.matchers) as SilenceMatchers,
        startsAtMs: num(r.starts_ms),
        endsAtMs: num(r.ends_ms),
        createdBy: r.created_by,
        comment: r.comment,
        createdMs: num(r.created_ms),
      }))
    },

    async saveSilence(s: Silence): Promise<void> {
      const row = {
        matchers: JSON.stringify(s.matchers),
        starts_ms: s.startsAtMs,
        ends_ms: s.endsAtMs,
        created_by: s.createdBy,
        comment: s.comment,
        created_ms: s.createdMs,
      }
      await db
        .insertInto('slo_silences')
        .values({ id: s.id, ...row })
        .onConflict((oc) => oc.column('id').doUpdateSet(row))
        .execute()
    },

    /** Oldest undelivered, not given-up row of a receiver. */
    async nextPending(receiver: string): Promise<OutboxRow | undefined> {
      const r = await db
        .selectFrom('slo_outbox')
        .selectAll()
        .where('receiver', '=', receiver)
        .where('delivered_ms', 'is', null)
        .where('failed_ms', 'is', null)
        .orderBy('seq')
        .limit(1)
        .executeTakeFirst()
      return r ? outboxRow(r) : undefined
    },

    async listOutbox(): Promise<OutboxRow[]> {
      return (await db.selectFrom('slo_outbox').selectAll().orderBy('seq').execute()).map(outboxRow)
    },

    async markDelivered(seq: number, nowMs: number, attempts: number): Promise<void> {
      await db
        .updateTable('slo_outbox')
        .set({ delivered_ms: nowMs, attempts, last_error: null })
        .where('seq', '=', seq)
        .execute()
    },

    async markRetry(seq: number, attempts: number, nextAttemptMs: number, error: string): Promise<void> {
      await db
        .updateTable('slo_outbox')
        .set({ attempts, next_attempt_ms: nextAttemptMs, last_error: error })
        .where('seq', '=', seq)
        .execute()
    },

    async markFailed(seq: number, nowMs: number, error: string): Promise<void> {
      await db
        .updateTable('slo_outbox')
        .set({ failed_ms: nowMs, last_error: error })
        .where('seq', '=', seq)
        .execute()
    },

    async enqueue(entries: readonly OutboxEntry[], nowMs: number): Promise<void> {
      await db.transaction().execute((tx) => enqueue(tx, entries, nowMs))
    },
  }
}

/** The persistence object {@link createSloPersistence} returns. */
export type SloPersistence = ReturnType<typeof createSloPersistence>

function outboxRow(r: {
  seq: number | string
  receiver: string
  idempotency_key: string
  body: string
  created_ms: number | string
  attempts: number
  next_attempt_ms: number | string
  delivered_ms: number | string | null
  failed_ms: number | string | null
  last_error: string | null
}): OutboxRow {
  return {
    seq: num(r.seq),
    receiver: r.receiver,
    idempotencyKey: r.idempotency_key,
    body: r.body,
    createdMs: num(r.created_ms),
    attempts: Number(r.attempts),
    nextAttemptMs: num(r.next_attempt_ms),
    deliveredMs: numOrNull(r.delivered_ms),
    failedMs: numOrNull(r.failed_ms),
    lastError: r.last_error,
  }
}

async function enqueue(
  tx: Transaction<SloTables>,
  entries: readonly OutboxEntry[],
  nowMs: number,
): Promise<void> {
  if (entries.length === 0) return
  const max = await tx
    .selectFrom('slo_outbox')
    .select((eb) => eb.fn.max('seq').as('m'))
    .executeTakeFirst()
  let seq = max?.m === null || max?.m === undefined ? 0 : Number(max.m)
  for (const e of entries) {
    // The same notification enqueued twice (another collector, a retried cycle) is stored once.
    const dup = await tx
      .selectFrom('slo_outbox')
      .select('seq')
      .where('receiver', '=', e.receiver)
      .where('idempotency_key', '=', e.idempotencyKey)
      .executeTakeFirst()
    if (dup) continue
    seq += 1
    await tx
      .insertInto('slo_outbox')
      .values({
        seq,
        receiver: e.receiver,
        idempotency_key: e.idempotencyKey,
        body: e.body,
        created_ms: nowMs,
        attempts: 0,
        next_attempt_ms: nowMs,
        delivered_ms: null,
        failed_ms: null,
        last_error: null,
      })
      .execute()
  }
}

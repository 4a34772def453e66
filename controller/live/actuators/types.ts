/**
 * The one small interface every actuator implements. An actuator reads what it drives (replica counts,
 * batching, admission caps) and applies changes; expected failures are values, never throws.
 */

/** The knobs a target may move. */
export type Knob = 'batching' | 'admission' | 'replicas'

/** One priority class's admission caps (index = priority class, 0 highest). */
export interface AdmissionCaps {
  readonly maxQueue: number
  readonly maxConcurrency: number
  /** How long a request of the class may wait in the queue before it is dropped, ms. Optional (absent: as it is). */
  readonly queueTimeoutMs?: number
}

/** What an actuator sees of the fleet; each field only when the actuator drives that knob. */
export interface ActuatorReading {
  /** Replicas: `desired` as set on the actuator (spec), `ready` serving, `starting` not yet ready. */
  readonly replicas?: { readonly desired: number; readonly ready: number; readonly starting: number }
  readonly batching?: { readonly windowMs: number; readonly maxBatch: number }
  readonly admission?: readonly AdmissionCaps[]
}

/** The changes of one decision, for the actuators that drive them. */
export interface ActuatorChange {
  readonly replicas?: number
  readonly batching?: { readonly windowMs: number; readonly maxBatch: number }
  readonly admission?: readonly AdmissionCaps[]
}

/** Who is asking and why (webhooks forward it; the agent checks the fencing token). */
export interface ActuatorContext {
  readonly target: string
  readonly fencingToken: number
  readonly decisionId: number
  readonly reason: string
}

export type ReadResult =
  { readonly ok: true; readonly reading: ActuatorReading } | { readonly ok: false; readonly error: string }
export type ApplyResult =
  { readonly ok: true; readonly detail?: string } | { readonly ok: false; readonly error: string }

/**
 * An actuator. `apply` is called only with the knobs listed in `knobs`.
 *
 * @example
 * ```ts
 * const a: Actuator = createAgentActuator({ url: 'http://127.0.0.1:4318', token })
 * const r = await a.apply({ admission: [{ maxQueue: 64, maxConcurrency: 16 }] }, ctx)
 * ```
 */
export interface Actuator {
  /** For outcomes and logs, e.g. `agent http://10.0.0.5:4318`. */
  readonly name: string
  readonly knobs: readonly Knob[]
  read(): Promise<ReadResult>
  apply(change: ActuatorChange, ctx: ActuatorContext): Promise<ApplyResult>
  /** Releases what it holds (child processes); optional. */
  close?(): Promise<void>
}

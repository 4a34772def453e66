import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Admission, ClassSetpoint } from './admission.js'

/** One class's admission setpoint as the API takes it (contract 2). */
export const ClassSetpointSchema = Type.Object(
  {
    priorityClass: Type.Integer({ minimum: 0, maximum: 15 }),
    maxConcurrency: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    maxQueue: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    queueTimeoutMs: Type.Number({ minimum: 0, maximum: 3_600_000 }),
  },
  { additionalProperties: false },
)

/** The body of `PUT /v1/setpoints`. */
export const SetpointsPutSchema = Type.Object(
  {
    admission: Type.Array(ClassSetpointSchema, { minItems: 1, maxItems: 16 }),
    fencingToken: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
)
export type SetpointsPut = Static<typeof SetpointsPutSchema>

/** What `GET /v1/setpoints` answers (and `PUT` on success). */
export const SetpointsViewSchema = Type.Object({
  admission: Type.Array(ClassSetpointSchema),
  fencingToken: Type.Union([Type.Integer(), Type.Null()]),
  source: Type.String(),
  updatedAt: Type.String(),
  stale: Type.Boolean(),
  /** The local Gradient2 limit in force, or null (a controller sets the caps, or none is configured). */
  limit: Type.Union([Type.Integer(), Type.Null()]),
})
export type SetpointsView = Static<typeof SetpointsViewSchema>

/** The outcome of a PUT: a value, never a throw (STYLE.md section 6). */
export type PutOutcome =
  | { readonly kind: 'ok'; readonly view: SetpointsView }
  | { readonly kind: 'fenced'; readonly highest: number }
  | { readonly kind: 'invalid'; readonly message: string }

/**
 * The agent's setpoints with fencing: the highest fencing token accepted so far wins, so a deposed
 * controller (an older leader) cannot overwrite a newer one's setpoints. Setpoints stay when the controller
 * goes quiet; `stale` says they have not been refreshed for `staleAfterMs`.
 *
 * @example
 * ```ts
 * const sp = createSetpointsState({ admission, staleAfterMs: 60_000 })
 * sp.put({ admission: [{ priorityClass: 0, maxConcurrency: 16, maxQueue: 32, queueTimeoutMs: 250 }], fencingToken: 3, source: 'controller' })
 * sp.view().stale // false
 * ```
 */
export interface SetpointsState {
  view(): SetpointsView
  put(body: SetpointsPut): PutOutcome
}

/**
 * Makes a {@link SetpointsState} over an admission controller; the initial setpoints are the config's.
 *
 * @example const sp = createSetpointsState({ admission, staleAfterMs: 60_000 })
 */
export function createSetpointsState(opts: {
  readonly admission: Admission
  readonly staleAfterMs: number
  readonly clock?: () => number
}): SetpointsState {
  const clock = opts.clock ?? Date.now
  let fencingToken: number | null = null
  let source = 'config'
  let updatedAt = clock()
  const view = (): SetpointsView => ({
    admission: opts.admission.classes.map((c) => ({ ...c })),
    fencingToken,
    source,
    updatedAt: new Date(updatedAt).toISOString(),
    stale: source !== 'config' && clock() - updatedAt > opts.staleAfterMs,
    limit: opts.admission.limit,
  })
  return {
    view,
    put(body) {
      if (body.fencingToken !== undefined && fencingToken !== null && body.fencingToken < fencingToken)
        return { kind: 'fenced', highest: fencingToken }
      const seen = new Set<number>()
      for (const [i, c] of body.admission.entries()) {
        if (seen.has(c.priorityClass))
          return {
            kind: 'invalid',
            message: `admission.${i}.priorityClass: class ${c.priorityClass} is listed twice`,
          }
        seen.add(c.priorityClass)
      }
      const classes: ClassSetpoint[] = body.admission.map((c) => ({ ...c }))
      opts.admission.setClasses(classes, true)
      if (body.fencingToken !== undefined) fencingToken = body.fencingToken
      source = body.source ?? 'api'
      updatedAt = clock()
      return { kind: 'ok', view: view() }
    },
  }
}

/** A {@link SetpointsState} whose members can join and leave after it is made (the demo's replicas come and go). */
export interface SetpointsGroup extends SetpointsState {
  /** Adds members; the last fleet-wide PUT (if any) is split again among all of them. */
  join(members: readonly SetpointsState[]): void
  /** Removes a member (a replica that drains and goes); the last fleet-wide PUT is split among the rest. */
  leave(member: SetpointsState): void
}

/**
 * One set of fleet-wide admission setpoints over several proxies that share the load evenly (the demo's
 * replicas, each behind its own proxy): `view` sums each class's caps over the members, `put` splits them,
 * each member getting its share rounded up (class 0 at least 1 in service). When members join or leave, the
 * last PUT is split again, so the fleet-wide caps stay what the controller set. The fencing token, source
 * and staleness are the first member's; a PUT fenced by one member changes none.
 *
 * @example
 * ```ts
 * const group = createSetpointsGroup()
 * group.join(proxies.map((p) => p.setpoints))
 * group.put({ admission: [{ priorityClass: 0, maxConcurrency: 10, maxQueue: 20, queueTimeoutMs: 500 }] }) // 5/10 each
 * ```
 */
export function createSetpointsGroup(): SetpointsGroup {
  const members: SetpointsState[] = []
  let last: SetpointsPut | null = null
  const share = (v: number, min: number) => Math.max(min, Math.ceil(v / members.length))
  const split = (body: SetpointsPut, to: readonly SetpointsState[]): PutOutcome | null => {
    const part: SetpointsPut = {
      ...body,
      admission: body.admission.map((c) => ({
        ...c,
        maxConcurrency: share(c.maxConcurrency, c.priorityClass === 0 && c.maxConcurrency > 0 ? 1 : 0),
        maxQueue: share(c.maxQueue, 0),
      })),
    }
    for (const m of to) {
      const out = m.put(part)
      if (out.kind !== 'ok') return out
    }
    return null
  }
  const group: SetpointsGroup = {
    join(more) {
      members.push(...more)
      if (last) split(last, members)
    },
    leave(member) {
      const i = members.indexOf(member)
      if (i < 0) return
      members.splice(i, 1)
      if (last && members.length > 0) split(last, members)
    },
    view() {
      const views = members.map((m) => m.view())
      const first = views[0]
      const byClass = new Map<number, SetpointsView['admission'][number]>()
      for (const v of views)
        for (const c of v.admission) {
          const have = byClass.get(c.priorityClass)
          byClass.set(
            c.priorityClass,
            have
              ? {
                  ...have,
                  maxConcurrency: have.maxConcurrency + c.maxConcurrency,
                  maxQueue: have.maxQueue + c.maxQueue,
                }
              : { ...c },
          )
        }
      const limits = views.map((v) => v.limit)
      return {
        admission: [...byClass.values()].sort((a, b) => a.priorityClass - b.priorityClass),
        fencingToken: first?.fencingToken ?? null,
        source: first?.source ?? 'config',
        updatedAt: first?.updatedAt ?? new Date(0).toISOString(),
        stale: views.some((v) => v.stale),
        limit:
          limits.every((l) => l !== null) && limits.length > 0 ? limits.reduce((a, b) => a! + b!, 0) : null,
      }
    },
    put(body) {
      if (members.length === 0) return { kind: 'invalid', message: 'no proxy has joined these setpoints yet' }
      for (const m of members) {
        const highest = m.view().fencingToken
        if (body.fencingToken !== undefined && highest !== null && body.fencingToken < highest)
          return { kind: 'fenced', highest }
      }
      const failed = split(body, members)
      if (failed) return failed
      last = body
      return { kind: 'ok', view: group.view() }
    },
  }
  return group
}

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

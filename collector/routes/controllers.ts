import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ControllerNotFound } from '../errors.js'
import { parseRange } from '../time.js'
import type { ControllerRecord, ControllerStore, DecisionRecord } from '../controllers/persistence.js'

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

const ConditionSchema = Type.Object({
  type: Type.String({
    description: 'AbleToScale, ScalingActive, ScalingLimited, MetricsStale or ConflictingController',
  }),
  status: Type.String({ description: 'True, False or Unknown' }),
  reason: Type.String(),
  message: Type.String(),
  lastTransitionTime: Type.String(),
})

const DecisionSchema = Type.Object({
  id: Type.Integer(),
  target: Type.String(),
  time: Type.String(),
  policy: Type.String(),
  mode: Type.String({ description: 'observe or enforce' }),
  holder: Type.String({ description: 'the controller process that decided' }),
  fencingToken: Type.Integer(),
  observation: Type.Unknown({ description: 'the FleetObservation the policy saw' }),
  prediction: Type.Unknown({ description: 'expected percentile and capacity after the actions' }),
  actions: Type.Array(Type.Unknown()),
  setpointsBefore: Type.Unknown(),
  setpointsAfter: Type.Unknown(),
  reason: Type.String(),
  outcome: Type.String({
    description:
      'pending, applied, failed, skipped, or unknown (its leader stopped before recording the outcome: it may have reached the actuators)',
  }),
  outcomeDetail: Type.Union([Type.String(), Type.Null()], {
    description: 'the error of a failed action, or why it was skipped',
  }),
  effect: Type.Unknown({ description: 'what was measured some intervals later (null until then)' }),
  effectAt: Type.Union([Type.String(), Type.Null()]),
})

const ControllerSchema = Type.Object({
  target: Type.String(),
  mode: Type.String({ description: 'observe or enforce' }),
  modeSource: Type.String({ description: 'config or api' }),
  policy: Type.String(),
  leader: Type.Union([Type.String(), Type.Null()], { description: 'the process holding the lease' }),
  leaseExpiresAt: Type.Union([Type.String(), Type.Null()]),
  fencingToken: Type.Integer(),
  setpoints: Type.Unknown(),
  conditions: Type.Array(ConditionSchema),
  lastDecision: Type.Union([DecisionSchema, Type.Null()]),
  rollbackRequestedAt: Type.Union([Type.String(), Type.Null()]),
  updatedAt: Type.String(),
})

function decisionJson(d: DecisionRecord) {
  return {
    id: d.id,
    target: d.target,
    time: iso(d.timeMs)!,
    policy: d.policy,
    mode: d.mode,
    holder: d.holder,
    fencingToken: d.fencingToken,
    observation: d.observation,
    prediction: d.prediction,
    actions: [...d.actions],
    setpointsBefore: d.setpointsBefore,
    setpointsAfter: d.setpointsAfter,
    reason: d.reason,
    outcome: d.outcome,
    outcomeDetail: d.outcomeDetail,
    effect: d.effect,
    effectAt: iso(d.effectMs),
  }
}

function controllerJson(c: ControllerRecord, last: DecisionRecord | null) {
  return {
    target: c.target,
    mode: c.mode,
    modeSource: c.modeSource,
    policy: c.policy,
    leader: c.leaseHolder,
    leaseExpiresAt: c.leaseExpiresMs > 0 ? iso(c.leaseExpiresMs) : null,
    fencingToken: c.fencingToken,
    setpoints: c.setpoints,
    conditions: c.conditions.map((k) => ({
      type: k.type,
      status: k.status,
      reason: k.reason,
      message: k.message,
      lastTransitionTime: iso(k.lastTransitionMs)!,
    })),
    lastDecision: last ? decisionJson(last) : null,
    rollbackRequestedAt: iso(c.rollbackRequestedMs),
    updatedAt: iso(c.statusMs)!,
  }
}

const TargetParams = Type.Object({ target: Type.String({ minLength: 1, maxLength: 256 }) })

/**
 * The live controller's API: decisions (read), controllers with their conditions (read), and the operator's
 * levers, mode and rollback (admin). The controller processes write the tables; these routes read them.
 *
 * @example
 * ```ts
 * const app = await buildCollector(opts, { store, plugins: [createControllerRoutes(createControllerStore(store))] })
 * await app.inject({ url: '/api/v1/decisions?target=chat&from=-1h', headers: { authorization: `Bearer ${read}` } })
 * ```
 */
export function createControllerRoutes(cs: ControllerStore) {
  return async function controllerRoutes(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

    app.get(
      '/decisions',
      {
        config: { scope: 'read' },
        schema: {
          summary: 'Stored controller decisions, oldest first',
          querystring: Type.Object({
            target: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
            from: Type.Optional(Type.String({ description: 'ISO time, -1h, now or epoch ms; default -1h' })),
            to: Type.Optional(Type.String()),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 1000 })),
          }),
          response: { 200: Type.Object({ decisions: Type.Array(DecisionSchema) }) },
        },
      },
      async (req) => {
        const q = req.query
        const range = parseRange(q.from, q.to, app.clock(), 3_600_000)
        const rows = await cs.decisions({
          ...(q.target !== undefined ? { target: q.target } : {}),
          ...range,
          limit: q.limit ?? 1000,
        })
        return { decisions: rows.map(decisionJson) }
      },
    )

    app.get(
      '/controllers',
      {
        config: { scope: 'read' },
        schema: {
          summary: 'Every controlled target: mode, setpoints, last decision and conditions',
          response: { 200: Type.Object({ controllers: Type.Array(ControllerSchema) }) },
        },
      },
      async () => {
        const rows = await cs.list()
        const out = []
        for (const c of rows)
          out.push(controllerJson(c, c.lastDecisionId === null ? null : await cs.decision(c.lastDecisionId)))
        return { controllers: out }
      },
    )

    app.post(
      '/controllers/:target/mode',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Switch a target between observe and enforce (clears ConflictingController)',
          params: TargetParams,
          body: Type.Object(
            { mode: Type.Union([Type.Literal('observe'), Type.Literal('enforce')]) },
            { additionalProperties: false },
          ),
          response: { 200: ControllerSchema },
        },
      },
      async (req) => {
        const { target } = req.params
        if (!(await cs.setMode(target, req.body.mode, app.clock())))
          throw new ControllerNotFound(`no controller target '${target}'`)
        const c = (await cs.get(target))!
        return controllerJson(c, c.lastDecisionId === null ? null : await cs.decision(c.lastDecisionId))
      },
    )

    app.post(
      '/controllers/:target/rollback',
      {
        config: { scope: 'admin' },
        schema: {
          summary:
            'Ask the leader to restore the setpoints from before the last applied decision and switch to observe',
          params: TargetParams,
          response: { 202: ControllerSchema },
        },
      },
      async (req, reply) => {
        const { target } = req.params
        if (!(await cs.requestRollback(target, app.clock())))
          throw new ControllerNotFound(`no controller target '${target}'`)
        const c = (await cs.get(target))!
        return reply
          .code(202)
          .send(controllerJson(c, c.lastDecisionId === null ? null : await cs.decision(c.lastDecisionId)))
      },
    )
  }
}

import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { Gauge } from 'prom-client'
import { BadRequest, SilenceNotFound, SloConflict, SloInvalid, SloNotFound } from '../errors.js'
import { MAX_TIME_MS, parseDurationMs, parseTimeMs } from '../time.js'
import { sloToRaw, windowText } from '../slo/definition.js'
import { tidyBudget, withoutFloatNoise } from '../slo/math.js'
import type { SloDefinition } from '../slo/definition.js'
import { fieldText, formatProblems, parseSloText } from '../slo/loader.js'
import type { SloEngine, SloEvaluation } from '../slo/engine.js'
import type { AlertRecord, Silence } from '../slo/alerts.js'
import type { OutboxRow } from '../slo/persistence.js'

/** Prometheus names of the per-SLO gauges on /metrics. */
export const PROM_SLO_OBJECTIVE = 'tailguard_slo_objective_ratio' as const
export const PROM_SLO_SLI = 'tailguard_slo_sli_ratio' as const
export const PROM_SLO_BUDGET_REMAINING = 'tailguard_slo_error_budget_remaining_ratio' as const
export const PROM_SLO_BURN_RATE = 'tailguard_slo_burn_rate' as const
export const PROM_SLO_ALERT = 'tailguard_slo_alert' as const

const Nullable = <T extends ReturnType<typeof Type.Number>>(t: T) => Type.Union([t, Type.Null()])
const NullableString = Type.Union([Type.String(), Type.Null()])

const AlertSchema = Type.Object({
  tier: Type.String(),
  severity: Type.String(),
  factor: Type.Number(),
  longWindow: Type.String(),
  shortWindow: Type.String(),
  longBurnRate: Type.Number(),
  shortBurnRate: Type.Number(),
  condition: Type.Boolean(),
  state: Type.String({ description: 'inactive, pending, firing, silenced or resolved' }),
  firedAt: NullableString,
  resolvedAt: NullableString,
  silenceId: NullableString,
})

const SloStatusSchema = Type.Object({
  name: Type.String(),
  description: Type.String(),
  source: Type.String({ description: 'file or api' }),
  kind: Type.String({ description: 'latency, availability or llm' }),
  selector: Type.Record(Type.String(), Type.String()),
  objective: Type.Number(),
  window: Type.String(),
  budgeting: Type.String(),
  thresholdMs: Nullable(Type.Number()),
  phase: NullableString,
  sli: Nullable(Type.Number({ description: 'good / total over the window, 0..1' })),
  budgetRemaining: Nullable(
    Type.Number({ description: 'share of the error budget left, 0..1 (negative when overspent)' }),
  ),
  events: Type.Object({ good: Type.Number(), total: Type.Number() }),
  errorBudget: Type.Union([
    Type.Object({
      totalEvents: Type.Number(),
      consumedEvents: Type.Number(),
      remainingEvents: Type.Number(),
      consumedRatio: Type.Number(),
      remainingRatio: Type.Number(),
      totalTimeMs: Type.Number(),
      remainingTimeMs: Type.Number(),
    }),
    Type.Null(),
  ]),
  burnRates: Type.Record(Type.String(), Type.Number()),
  forecast: Type.Object({
    state: Type.String({ description: 'never, exhausted, at, or unknown before the first evaluation' }),
    exhaustedAt: NullableString,
  }),
  alerts: Type.Array(AlertSchema),
  windowStart: NullableString,
  evaluatedAt: NullableString,
})

const SloDetailSchema = Type.Composite([
  SloStatusSchema,
  Type.Object({
    burnDown: Type.Array(Type.Object({ t: Type.String(), remainingRatio: Type.Number() })),
    definition: Type.Record(Type.String(), Type.Unknown()),
  }),
])

const AlertRecordSchema = Type.Object({
  slo: Type.String(),
  tier: Type.String(),
  state: Type.String(),
  activeSince: NullableString,
  firedAt: NullableString,
  resolvedAt: NullableString,
  silenceId: NullableString,
  updatedAt: Type.String(),
})

const MatchersSchema = Type.Object(
  {
    slo: Type.Optional(Type.String({ maxLength: 128 })),
    tier: Type.Optional(Type.String({ maxLength: 32 })),
    severity: Type.Optional(Type.Union([Type.Literal('page'), Type.Literal('ticket')])),
  },
  { additionalProperties: false },
)

const SilenceSchema = Type.Object({
  id: Type.String(),
  matchers: MatchersSchema,
  startsAt: Type.String(),
  endsAt: Type.String(),
  state: Type.String({ description: 'pending, active or expired' }),
  createdBy: Type.String(),
  comment: Type.String(),
  createdAt: Type.String(),
})

const SilenceBody = Type.Object(
  {
    matchers: MatchersSchema,
    startsAt: Type.Optional(Type.String({ maxLength: 64 })),
    endsAt: Type.Optional(Type.String({ maxLength: 64, description: 'ISO time or epoch ms' })),
    duration: Type.Optional(Type.String({ maxLength: 16, description: 'instead of endsAt: 2h, 30m…' })),
    createdBy: Type.Optional(Type.String({ maxLength: 128 })),
    comment: Type.String({ maxLength: 1024 }),
  },
  { additionalProperties: false },
)

const DeliverySchema = Type.Object({
  seq: Type.Integer(),
  receiver: Type.String(),
  slo: Type.String(),
  tier: Type.String(),
  notification: Type.String({ description: 'firing or resolved' }),
  status: Type.String({
    description:
      'delivered, retrying (failed at least once, will retry), pending (not tried yet) or failed (given up)',
  }),
  attempts: Type.Integer(),
  createdAt: Type.String(),
  nextAttemptAt: NullableString,
  deliveredAt: NullableString,
  failedAt: NullableString,
  lastError: NullableString,
})

const DeliveriesQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, description: 'newest first; default 100, at most 1000' }),
    ),
  },
  { additionalProperties: false },
)

const NameParams = Type.Object({ name: Type.String({ maxLength: 128 }) })
const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) })
const SloBody = Type.Record(Type.String(), Type.Unknown(), {
  description: 'a tailguard SLO (see README: SLO authoring)',
})

const iso = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString()

function kindOf(s: SloDefinition): string {
  if (s.sli.kind === 'availability') return 'availability'
  return s.sli.metric === 'ttft' || s.sli.metric === 'tpot' ? 'llm' : 'latency'
}

function statusOf(slo: SloDefinition, source: string, e: SloEvaluation | undefined) {
  return {
    name: slo.name,
    description: slo.description,
    source,
    kind: kindOf(slo),
    selector: { ...slo.selector } as Record<string, string>,
    objective: slo.objective,
    window: windowText(slo.window),
    budgeting: slo.budgeting.kind,
    thresholdMs: slo.sli.kind === 'latency' ? slo.sli.thresholdMs : null,
    phase: slo.sli.kind === 'latency' ? slo.sli.metric : null,
    sli: e && e.sli !== null ? withoutFloatNoise(e.sli) : null,
    budgetRemaining: e && e.total > 0 ? withoutFloatNoise(e.budget.remainingRatio) : null,
    events: { good: e?.good ?? 0, total: e?.total ?? 0 },
    errorBudget: e && e.total > 0 ? tidyBudget(e.budget) : null,
    burnRates: Object.fromEntries(
      Object.entries(e?.burnRates ?? {}).map(([w, r]) => [w, withoutFloatNoise(r)]),
    ),
    forecast: !e
      ? { state: 'unknown', exhaustedAt: null }
      : { state: e.forecast.kind, exhaustedAt: e.forecast.kind === 'at' ? iso(e.forecast.atMs) : null },
    alerts: (e?.tiers ?? []).map((t) => ({
      tier: t.tier,
      severity: t.severity,
      factor: t.factor,
      longWindow: t.longWindow,
      shortWindow: t.shortWindow,
      longBurnRate: withoutFloatNoise(t.longBurnRate),
      shortBurnRate: withoutFloatNoise(t.shortBurnRate),
      condition: t.condition,
      state: t.state,
      firedAt: iso(t.firedAtMs),
      resolvedAt: iso(t.resolvedAtMs),
      silenceId: t.silenceId,
    })),
    windowStart: iso(e?.windowStartMs),
    evaluatedAt: iso(e?.evaluatedAtMs),
  }
}

const alertOut = (a: AlertRecord) => ({
  slo: a.slo,
  tier: a.tier,
  state: a.state,
  activeSince: iso(a.activeSinceMs),
  firedAt: iso(a.firedAtMs),
  resolvedAt: iso(a.resolvedAtMs),
  silenceId: a.silenceId,
  updatedAt: new Date(a.updatedMs).toISOString(),
})

/**
 * One outbox row as the API shows it: which alert it notifies (from its idempotency key,
 * `<slo>/<tier>/<firedAtMs>/<status>`), and where its delivery stands. The body is not shown.
 */
const deliveryOut = (r: OutboxRow) => {
  const parts = r.idempotencyKey.split('/')
  const notification = parts.pop() ?? ''
  parts.pop()
  const tier = parts.pop() ?? ''
  return {
    seq: r.seq,
    receiver: r.receiver,
    slo: parts.join('/'),
    tier,
    notification,
    status:
      r.deliveredMs !== null
        ? 'delivered'
        : r.failedMs !== null
          ? 'failed'
          : r.attempts > 0
            ? 'retrying'
            : 'pending',
    attempts: r.attempts,
    createdAt: new Date(r.createdMs).toISOString(),
    nextAttemptAt: r.deliveredMs === null && r.failedMs === null ? iso(r.nextAttemptMs) : null,
    deliveredAt: iso(r.deliveredMs),
    failedAt: iso(r.failedMs),
    lastError: r.lastError,
  }
}

const silenceOut = (s: Silence, nowMs: number) => ({
  id: s.id,
  matchers: { ...s.matchers },
  startsAt: new Date(s.startsAtMs).toISOString(),
  endsAt: new Date(s.endsAtMs).toISOString(),
  state: nowMs < s.startsAtMs ? 'pending' : nowMs < s.endsAtMs ? 'active' : 'expired',
  createdBy: s.createdBy,
  comment: s.comment,
  createdAt: new Date(s.createdMs).toISOString(),
})

function registerMetrics(app: FastifyInstance, engine: SloEngine): void {
  const registers = [app.promRegistry]
  // Each gauge's collect() runs when it is read, in registration order, so the first one fills them all.
  const sli = new Gauge({
    name: PROM_SLO_SLI,
    help: 'SLI over the SLO window (good / total, 0..1)',
    labelNames: ['slo'] as const,
    registers: [],
  })
  const remaining = new Gauge({
    name: PROM_SLO_BUDGET_REMAINING,
    help: 'Share of the error budget left over the SLO window (negative when overspent)',
    labelNames: ['slo'] as const,
    registers: [],
  })
  const burn = new Gauge({
    name: PROM_SLO_BURN_RATE,
    help: 'Error budget burn rate per alert window',
    labelNames: ['slo', 'window'] as const,
    registers: [],
  })
  const alert = new Gauge({
    name: PROM_SLO_ALERT,
    help: 'SLO burn-rate alerts that are pending, firing or silenced (1), by tier',
    labelNames: ['slo', 'tier', 'severity', 'state'] as const,
    registers: [],
  })
  const objective = new Gauge({
    name: PROM_SLO_OBJECTIVE,
    help: 'SLO objective (good ratio target, 0..1)',
    labelNames: ['slo'] as const,
    registers,
    collect() {
      for (const g of [this, sli, remaining, burn, alert]) g.reset()
      for (const { slo, evaluation: e } of engine.list()) {
        this.set({ slo: slo.name }, slo.objective)
        if (!e) continue
        if (e.sli !== null) sli.set({ slo: slo.name }, e.sli)
        if (e.total > 0) remaining.set({ slo: slo.name }, e.budget.remainingRatio)
        for (const [window, rate] of Object.entries(e.burnRates)) burn.set({ slo: slo.name, window }, rate)
        for (const t of e.tiers)
          if (t.state === 'pending' || t.state === 'firing' || t.state === 'silenced')
            alert.set({ slo: slo.name, tier: t.tier, severity: t.severity, state: t.state }, 1)
      }
    },
  })
  for (const g of [sli, remaining, burn, alert]) app.promRegistry.registerMetric(g)
  void objective
}

/**
 * The SLO API as a plugin for `buildCollector`'s `deps.plugins` (mounted under /api/v1): SLOs (read; admin
 * to create, replace, delete), alerts (read), silences (read; admin to create and expire), plus per-SLO
 * gauges on /metrics.
 *
 * @example
 * ```ts
 * const engine = createSloEngine({ source: store, db })
 * const app = await buildCollector(opts, { store, plugins: [createSloRoutes(engine)] })
 * ```
 */
export function createSloRoutes(engine: SloEngine): (app: FastifyInstance) => Promise<void> {
  return async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
    registerMetrics(fastify, engine)

    const detail = (name: string) => {
      const d = engine.get(name)
      if (!d) throw new SloNotFound(`no SLO named '${name}'`)
      return {
        ...statusOf(d.slo, d.source, d.evaluation),
        burnDown: engine
          .burnDown(name)
          .map((p) => ({ t: new Date(p.tMs).toISOString(), remainingRatio: p.remainingRatio })),
        definition: sloToRaw(d.slo),
      }
    }

    const put = async (raw: Record<string, unknown>, mustCreate: boolean) => {
      if (mustCreate && typeof raw['name'] === 'string' && engine.get(raw['name']))
        throw new SloConflict(
          `SLO '${raw['name']}' exists; use PUT /api/v1/slos/${raw['name']} to replace it`,
        )
      const r = await engine.putSlo(raw)
      if (!r.ok) {
        if ('conflict' in r) throw new SloConflict(r.conflict)
        throw new SloInvalid(r.problems.map((p) => `${fieldText(p.path)}: ${p.message}`).join('; '))
      }
      return r
    }

    app.get(
      '/slos',
      {
        config: { scope: 'read' },
        schema: {
          summary: 'Every SLO with its SLI, budget, burn rates and alerts',
          response: { 200: Type.Object({ slos: Type.Array(SloStatusSchema) }) },
        },
      },
      async () => ({ slos: engine.list().map((d) => statusOf(d.slo, d.source, d.evaluation)) }),
    )

    app.get(
      '/slos/:name',
      {
        config: { scope: 'read' },
        schema: {
          summary: 'One SLO with its burn-down series',
          params: NameParams,
          response: { 200: SloDetailSchema },
        },
      },
      async (req) => detail(req.params.name),
    )

    app.post(
      '/slos',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Create an SLO (tailguard JSON form)',
          body: SloBody,
          response: { 201: SloDetailSchema },
        },
      },
      async (req, reply) => {
        const r = await put(req.body, true)
        return reply.code(201).send(detail(r.slo.name))
      },
    )

    // YAML bodies (either format) for the import route; registered inside this plugin only.
    fastify.addContentTypeParser(
      ['application/yaml', 'application/x-yaml', 'text/yaml'],
      { parseAs: 'string' },
      (_req, body, done) => done(null, body),
    )

    app.post(
      '/slos/import',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Create or replace SLOs from a YAML document (tailguard format or OpenSLO)',
          consumes: ['application/yaml'],
          body: Type.String({ maxLength: 1 << 20 }),
          response: {
            200: Type.Object({
              imported: Type.Array(Type.Object({ name: Type.String(), created: Type.Boolean() })),
            }),
          },
        },
      },
      async (req) => {
        const parsed = parseSloText(req.body, 'body')
        if (!parsed.ok) throw new SloInvalid(formatProblems(parsed.problems).replaceAll('\n', '; '))
        for (const s of parsed.slos)
          if (engine.get(s.name)?.source === 'file')
            throw new SloConflict(`SLO '${s.name}' is defined in a file; change it there`)
        const imported: Array<{ name: string; created: boolean }> = []
        for (const s of parsed.slos) {
          const r = await put(sloToRaw(s), false)
          imported.push({ name: r.slo.name, created: r.created })
        }
        return { imported }
      },
    )

    app.put(
      '/slos/:name',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Create or replace an SLO',
          params: NameParams,
          body: SloBody,
          response: { 200: SloDetailSchema, 201: SloDetailSchema },
        },
      },
      async (req, reply) => {
        const body = { ...req.body }
        if (body['name'] === undefined) body['name'] = req.params.name
        if (body['name'] !== req.params.name)
          throw new BadRequest(
            `name: the body names '${String(body['name'])}' but the URL names '${req.params.name}'`,
          )
        const r = await put(body, false)
        return reply.code(r.created ? 201 : 200).send(detail(r.slo.name))
      },
    )

    app.delete(
      '/slos/:name',
      {
        config: { scope: 'admin' },
        schema: { summary: 'Delete an SLO created through the API', params: NameParams },
      },
      async (req, reply) => {
        const r = await engine.deleteSlo(req.params.name)
        if (r === 'file')
          throw new SloConflict(`SLO '${req.params.name}' is defined in a file; remove it there`)
        if (r === 'not-found') throw new SloNotFound(`no SLO named '${req.params.name}'`)
        return reply.code(204).send()
      },
    )

    app.get(
      '/alerts',
      {
        config: { scope: 'read' },
        schema: {
          summary: 'Burn-rate alert states',
          querystring: Type.Object(
            {
              state: Type.Optional(Type.String({ maxLength: 16 })),
              slo: Type.Optional(Type.String({ maxLength: 128 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Type.Object({ alerts: Type.Array(AlertRecordSchema) }) },
        },
      },
      async (req) => {
        const all = await engine.alerts()
        return {
          alerts: all
            .filter((a) => (req.query.state ? a.state === req.query.state : a.state !== 'inactive'))
            .filter((a) => !req.query.slo || a.slo === req.query.slo)
            .map(alertOut),
        }
      },
    )

    app.get(
      '/alerts/deliveries',
      {
        config: { scope: 'read' },
        schema: {
          summary: 'Webhook deliveries of alert notifications, newest first, with their status and attempts',
          querystring: DeliveriesQuery,
          response: {
            200: Type.Object({
              receivers: Type.Array(Type.String(), { description: 'the configured receivers, by name' }),
              deliveries: Type.Array(DeliverySchema),
            }),
          },
        },
      },
      async (req) => {
        const rows = await engine.outbox()
        const newest = rows.sort((a, b) => b.seq - a.seq).slice(0, req.query.limit ?? 100)
        return { receivers: engine.receiverNames(), deliveries: newest.map(deliveryOut) }
      },
    )

    app.get(
      '/silences',
      {
        config: { scope: 'read' },
        schema: {
          summary: 'Silences, active and expired',
          response: { 200: Type.Object({ silences: Type.Array(SilenceSchema) }) },
        },
      },
      async () => {
        const now = engine.clock()
        return { silences: (await engine.silences()).map((s) => silenceOut(s, now)) }
      },
    )

    app.get(
      '/silences/:id',
      { config: { scope: 'read' }, schema: { params: IdParams, response: { 200: SilenceSchema } } },
      async (req) => {
        const s = (await engine.silences()).find((x) => x.id === req.params.id)
        if (!s) throw new SilenceNotFound(`no silence with id '${req.params.id}'`)
        return silenceOut(s, engine.clock())
      },
    )

    app.post(
      '/silences',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Silence alerts until an expiry',
          body: SilenceBody,
          response: { 201: SilenceSchema },
        },
      },
      async (req, reply) => {
        const b = req.body
        const now = engine.clock()
        if (Object.keys(b.matchers).length === 0)
          throw new BadRequest('matchers: give at least one of slo, tier, severity')
        const startsAtMs = b.startsAt === undefined ? now : parseTimeMs(b.startsAt, 'startsAt', now)
        let endsAtMs: number
        if (b.endsAt !== undefined) endsAtMs = parseTimeMs(b.endsAt, 'endsAt', now)
        else if (b.duration !== undefined) {
          const d = parseDurationMs(b.duration)
          if (d === undefined || d <= 0)
            throw new BadRequest(
              `duration: expected a duration like 2h of at most 100 years, got '${b.duration.slice(0, 40)}'`,
            )
          endsAtMs = startsAtMs + d
          if (endsAtMs > MAX_TIME_MS)
            throw new BadRequest('duration: the silence would end past the largest date')
        } else throw new BadRequest('endsAt: give endsAt or duration')
        if (!(endsAtMs > startsAtMs)) throw new BadRequest('endsAt: must be after startsAt')
        const s = await engine.createSilence({
          matchers: b.matchers,
          startsAtMs,
          endsAtMs,
          createdBy: b.createdBy ?? 'api',
          comment: b.comment,
        })
        return reply.code(201).send(silenceOut(s, now))
      },
    )

    app.put(
      '/silences/:id',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Change a silence (extend it, change its matchers or comment)',
          params: IdParams,
          body: Type.Partial(SilenceBody),
          response: { 200: SilenceSchema },
        },
      },
      async (req) => {
        const b = req.body
        const now = engine.clock()
        const current = (await engine.silences()).find((x) => x.id === req.params.id)
        if (!current) throw new SilenceNotFound(`no silence with id '${req.params.id}'`)
        if (b.matchers && Object.keys(b.matchers).length === 0)
          throw new BadRequest('matchers: give at least one of slo, tier, severity')
        const startsAtMs =
          b.startsAt === undefined ? current.startsAtMs : parseTimeMs(b.startsAt, 'startsAt', now)
        let endsAtMs = current.endsAtMs
        if (b.endsAt !== undefined) endsAtMs = parseTimeMs(b.endsAt, 'endsAt', now)
        else if (b.duration !== undefined) {
          const d = parseDurationMs(b.duration)
          if (d === undefined || d <= 0)
            throw new BadRequest(
              `duration: expected a duration like 2h of at most 100 years, got '${b.duration.slice(0, 40)}'`,
            )
          endsAtMs = startsAtMs + d
          if (endsAtMs > MAX_TIME_MS)
            throw new BadRequest('duration: the silence would end past the largest date')
        }
        if (!(endsAtMs > startsAtMs)) throw new BadRequest('endsAt: must be after startsAt')
        const s = await engine.updateSilence(req.params.id, {
          matchers: b.matchers,
          startsAtMs,
          endsAtMs,
          comment: b.comment,
        })
        return silenceOut(s!, now)
      },
    )

    app.delete(
      '/silences/:id',
      {
        config: { scope: 'admin' },
        schema: { summary: 'Expire a silence now', params: IdParams, response: { 200: SilenceSchema } },
      },
      async (req) => {
        const s = await engine.expireSilence(req.params.id)
        if (!s) throw new SilenceNotFound(`no silence with id '${req.params.id}'`)
        return silenceOut(s, engine.clock())
      },
    )
  }
}

import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../../collector/app.js'
import { createControllerRoutes } from '../../../collector/routes/controllers.js'
import { createControllerStore } from '../../../collector/index.js'
import type { ControllerStore, NewDecision } from '../../../collector/index.js'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'

const READ = 'read-token-0123456789abcdef'
const ADMIN = 'admin-token-0123456789abcdef'
const NOW = Date.parse('2026-11-23T12:00:00Z')

const decision = (timeMs: number, over: Partial<NewDecision> = {}): NewDecision => ({
  target: 'chat',
  timeMs,
  policy: 'hpa',
  mode: 'enforce',
  observation: { intervalMs: 5000 },
  prediction: { p99Ms: 120 },
  actions: [{ kind: 'scale', desiredReplicas: 3, reason: 'utilization 0.9 > 0.7' }],
  setpointsBefore: { desiredReplicas: 2 },
  setpointsAfter: { desiredReplicas: 3 },
  reason: 'utilization 0.9 > 0.7',
  outcome: 'pending',
  outcomeDetail: null,
  ...over,
})

for (const dialect of testDialects())
  describe(`${dialect}: controller persistence`, () => {
    const db = useTestStore(dialect)
    let cs: ControllerStore
    beforeEach(async () => {
      cs = createControllerStore(db.store)
      await cs.ensureTarget('chat', { mode: 'observe', policy: 'hpa' }, NOW)
    })

    it('gives the lease to one holder at a time; a takeover after expiry gets the next fencing token', async () => {
      const a = await cs.acquireLease('chat', 'a', NOW, 7500)
      expect(a).toEqual({ held: true, fencingToken: 1, acquired: true })
      expect(await cs.acquireLease('chat', 'b', NOW + 1000, 7500)).toMatchObject({ held: false, holder: 'a' })
      expect(await cs.acquireLease('chat', 'a', NOW + 5000, 7500)).toEqual({
        held: true,
        fencingToken: 1,
        acquired: false,
      })
      // a stops renewing (kill -9): b takes over once the lease has expired.
      const b = await cs.acquireLease('chat', 'b', NOW + 12_600, 7500)
      expect(b).toEqual({ held: true, fencingToken: 2, acquired: true })
      // a's renewal and decisions are fenced off.
      expect(await cs.acquireLease('chat', 'a', NOW + 13_000, 7500)).toMatchObject({
        held: false,
        holder: 'b',
      })
      expect(await cs.recordDecision(decision(NOW + 13_000), 'a', 1, NOW + 13_000)).toEqual({
        kind: 'fenced',
      })
      const ok = await cs.recordDecision(decision(NOW + 13_000), 'b', 2, NOW + 13_000)
      expect(ok.kind).toBe('stored')
    })

    it('lets exactly one of many racing controllers take an expired lease', async () => {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => cs.acquireLease('chat', `c${i}`, NOW, 7500)),
      )
      expect(results.filter((r) => r.held)).toHaveLength(1)
    })

    it('stores decisions with outcome and effect, and lists them by target and time', async () => {
      await cs.acquireLease('chat', 'a', NOW, 60_000)
      const r1 = await cs.recordDecision(decision(NOW), 'a', 1, NOW)
      const r2 = await cs.recordDecision(decision(NOW + 5000, { reason: 'second' }), 'a', 1, NOW + 5000)
      if (r1.kind !== 'stored' || r2.kind !== 'stored') throw new Error('not stored')
      await cs.setOutcome(r1.id, 'failed', 'PUT /v1/setpoints: 503')
      await cs.setOutcome(r2.id, 'applied', null)
      await cs.setEffect(r2.id, { p99MsBefore: 300, p99MsAfter: 150 }, NOW + 20_000)
      const all = await cs.decisions({ target: 'chat', fromMs: NOW - 1, toMs: NOW + 60_000, limit: 10 })
      expect(all.map((d) => [d.reason, d.outcome, d.outcomeDetail])).toEqual([
        ['utilization 0.9 > 0.7', 'failed', 'PUT /v1/setpoints: 503'],
        ['second', 'applied', null],
      ])
      expect(all[1]!.effect).toEqual({ p99MsBefore: 300, p99MsAfter: 150 })
      expect(all[1]!.fencingToken).toBe(1)
      expect((await cs.lastApplied('chat'))!.id).toBe(r2.id)
      expect((await cs.get('chat'))!.lastDecisionId).toBe(r2.id)
      expect(await cs.decisions({ target: 'other', fromMs: 0, toMs: NOW + 60_000, limit: 10 })).toEqual([])
    })

    it('keeps an API mode over the config mode; rollback requests are cleared only once handled', async () => {
      expect(await cs.setMode('chat', 'enforce', NOW + 1)).toBe(true)
      expect(await cs.setMode('nope', 'enforce', NOW + 1)).toBe(false)
      const again = await cs.ensureTarget('chat', { mode: 'observe', policy: 'hpa' }, NOW + 2)
      expect(again).toMatchObject({ mode: 'enforce', modeSource: 'api' })
      expect(await cs.requestRollback('chat', NOW + 3)).toBe(true)
      await cs.clearRollback('chat', NOW + 2)
      expect((await cs.get('chat'))!.rollbackRequestedMs).toBe(NOW + 3)
      await cs.clearRollback('chat', NOW + 3)
      expect((await cs.get('chat'))!.rollbackRequestedMs).toBeNull()
    })
  })

describe('controller routes', () => {
  const db = useTestStore('sqlite')
  let app: FastifyInstance
  let cs: ControllerStore
  beforeEach(async () => {
    cs = createControllerStore(db.store)
    app = await buildCollector(
      {
        tokens: [
          { token: READ, scope: 'read' },
          { token: ADMIN, scope: 'admin' },
        ],
        reportBodyLimitBytes: 1 << 20,
        bodyLimitBytes: 64 * 1024,
      },
      { store: db.store, clock: () => NOW + 60_000, plugins: [createControllerRoutes(cs)] },
    )
    await cs.ensureTarget('chat', { mode: 'observe', policy: 'hpa' }, NOW)
    await cs.acquireLease('chat', 'host:1', NOW, 3_600_000)
    const r = await cs.recordDecision(decision(NOW), 'host:1', 1, NOW)
    if (r.kind === 'stored') await cs.setOutcome(r.id, 'skipped', 'observe mode')
    await cs.putStatus('chat', 'host:1', 1, {
      setpoints: { desiredReplicas: 2 },
      conditions: [
        {
          type: 'MetricsStale',
          status: 'False',
          reason: 'FreshMetrics',
          message: 'newest data 4 s old',
          lastTransitionMs: NOW,
        },
      ],
      nowMs: NOW,
    })
  })
  afterEach(async () => {
    await app.close()
  })
  const get = (url: string, token = READ) =>
    app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } })

  it('lists decisions in a range and controllers with conditions and their last decision', async () => {
    const d = await get('/api/v1/decisions?target=chat&from=-1h')
    expect(d.statusCode, d.body).toBe(200)
    expect(d.json().decisions).toHaveLength(1)
    expect(d.json().decisions[0]).toMatchObject({ outcome: 'skipped', outcomeDetail: 'observe mode' })
    const c = await get('/api/v1/controllers')
    expect(c.statusCode, c.body).toBe(200)
    const [ctl] = c.json().controllers
    expect(ctl).toMatchObject({ target: 'chat', mode: 'observe', leader: 'host:1', fencingToken: 1 })
    expect(ctl.conditions[0]).toMatchObject({ type: 'MetricsStale', status: 'False', reason: 'FreshMetrics' })
    expect(ctl.lastDecision.reason).toBe('utilization 0.9 > 0.7')
    expect((await get('/api/v1/decisions?from=yesterday')).json()).toMatchObject({
      code: 'TG_ERR_BAD_REQUEST',
    })
  })

  it('changes mode and requests rollback with an admin token only', async () => {
    const post = (url: string, token: string, payload?: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url,
        headers: { authorization: `Bearer ${token}` },
        ...(payload !== undefined ? { payload } : {}),
      })
    expect((await post('/api/v1/controllers/chat/mode', READ, { mode: 'enforce' })).statusCode).toBe(403)
    const bad = await post('/api/v1/controllers/chat/mode', ADMIN, { mode: 'yolo' })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().message).toMatch(/mode/)
    const ok = await post('/api/v1/controllers/chat/mode', ADMIN, { mode: 'enforce' })
    expect(ok.statusCode, ok.body).toBe(200)
    expect(ok.json()).toMatchObject({ mode: 'enforce', modeSource: 'api' })
    const missing = await post('/api/v1/controllers/nope/mode', ADMIN, { mode: 'enforce' })
    expect(missing.json()).toMatchObject({ code: 'TG_ERR_CONTROLLER_NOT_FOUND', statusCode: 404 })
    const rb = await post('/api/v1/controllers/chat/rollback', ADMIN)
    expect(rb.statusCode, rb.body).toBe(202)
    expect(rb.json().rollbackRequestedAt).toBe(new Date(NOW + 60_000).toISOString())
    const spec = (await get('/api/v1/openapi.json')).json()
    expect(Object.keys(spec.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/decisions',
        '/api/v1/controllers',
        '/api/v1/controllers/{target}/mode',
        '/api/v1/controllers/{target}/rollback',
      ]),
    )
  })
})

// The SLO API through buildCollector + app.inject: SLO status, CRUD with scopes, alerts, silences, /metrics.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../../collector/app.js'
import { createSloRoutes } from '../../../collector/routes/slos.js'
import { createSloEngine } from '../../../collector/slo/engine.js'
import type { SloEngine } from '../../../collector/slo/engine.js'
import { validateSlo } from '../../../collector/slo/definition.js'
import { FunctionSource, openDb, storeFrom } from './helpers.js'
import type { TestDb } from './helpers.js'

const MIN = 60_000
const HOUR = 60 * MIN
const S = Date.UTC(2026, 5, 1, 12)
const READ = { authorization: 'Bearer reader' }
const ADMIN = { authorization: 'Bearer admin' }

let tdb: TestDb | undefined
let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  await tdb?.drop()
  app = undefined
  tdb = undefined
})

async function setup(): Promise<{ app: FastifyInstance; engine: SloEngine; now: { ms: number } }> {
  tdb = await openDb('sqlite')
  const now = { ms: S }
  const source = new FunctionSource((t) => {
    const bad = t >= S - HOUR ? 40 : 1
    return { ok: 2000 - bad, error: bad, shed: 5 }
  })
  const engine = createSloEngine({ source, db: tdb.db, clock: () => now.ms })
  const file = validateSlo({
    name: 'chat-availability',
    kind: 'availability',
    selector: { service: 'chat' },
    objective: '99.9%',
  })
  if (!file.ok) throw new Error('fixture')
  engine.setFileSlos([file.slo])
  app = await buildCollector(
    {
      tokens: [
        { token: 'reader', scope: 'read' },
        { token: 'admin', scope: 'admin' },
      ],
      reportBodyLimitBytes: 1 << 20,
      bodyLimitBytes: 1 << 20,
    },
    { store: storeFrom(source), clock: () => now.ms, plugins: [createSloRoutes(engine)] },
  )
  return { app, engine, now }
}

describe('SLO API', () => {
  it('lists SLOs with SLI, budget, burn rates and alerts as 0..1 ratios', async () => {
    const { app, engine } = await setup()
    await engine.evaluate(S)
    const res = await app.inject({ method: 'GET', url: '/api/v1/slos', headers: READ })
    expect(res.statusCode).toBe(200)
    const [s] = res.json().slos
    expect(s).toMatchObject({
      name: 'chat-availability',
      objective: 0.999,
      window: '30d',
      source: 'file',
      kind: 'availability',
    })
    // Shed requests count as bad by default: 45 bad of 2005 per bucket over the last hour.
    expect(s.burnRates['1h']).toBeCloseTo(45 / 2005 / 0.001, 6)
    expect(s.burnRates['5m']).toBeCloseTo(45 / 2005 / 0.001, 6)
    expect(s.sli).toBeGreaterThan(0.99)
    expect(s.sli).toBeLessThan(1)
    expect(s.budgetRemaining).toBeLessThan(1)
    expect(s.alerts.find((a: { tier: string }) => a.tier === 'page-1h')).toMatchObject({
      state: 'firing',
      severity: 'page',
      factor: 14.4,
    })
    const one = await app.inject({ method: 'GET', url: '/api/v1/slos/chat-availability', headers: READ })
    expect(one.statusCode).toBe(200)
    expect(one.json().burnDown.length).toBeGreaterThan(700)
    expect(one.json().forecast.state).toMatch(/at|exhausted/)
    const missing = await app.inject({ method: 'GET', url: '/api/v1/slos/nope', headers: READ })
    expect(missing.statusCode).toBe(404)
    expect(missing.json().code).toBe('TG_ERR_SLO_NOT_FOUND')
    expect((await app.inject({ method: 'GET', url: '/api/v1/slos' })).statusCode).toBe(401)
  })

  it('creates, replaces and deletes API SLOs with admin scope and names invalid fields', async () => {
    const { app, engine } = await setup()
    const body = {
      name: 'chat-latency',
      kind: 'latency',
      thresholdMs: 187,
      objective: 0.99,
      selector: { service: 'chat' },
    }
    expect(
      (await app.inject({ method: 'POST', url: '/api/v1/slos', headers: READ, payload: body })).statusCode,
    ).toBe(403)
    const created = await app.inject({ method: 'POST', url: '/api/v1/slos', headers: ADMIN, payload: body })
    expect(created.statusCode).toBe(201)
    expect(created.json()).toMatchObject({
      name: 'chat-latency',
      source: 'api',
      thresholdMs: 187,
      phase: 'total',
    })
    expect(
      (await app.inject({ method: 'POST', url: '/api/v1/slos', headers: ADMIN, payload: body })).statusCode,
    ).toBe(409)
    const replaced = await app.inject({
      method: 'PUT',
      url: '/api/v1/slos/chat-latency',
      headers: ADMIN,
      payload: { ...body, name: undefined, thresholdMs: 250 },
    })
    expect(replaced.statusCode).toBe(200)
    expect(replaced.json().thresholdMs).toBe(250)
    const invalid = await app.inject({
      method: 'PUT',
      url: '/api/v1/slos/x',
      headers: ADMIN,
      payload: { kind: 'latency', phase: 'kernal', objective: 2 },
    })
    expect(invalid.statusCode).toBe(400)
    expect(invalid.json().code).toBe('TG_ERR_SLO_INVALID')
    expect(invalid.json().message).toContain('phase: unknown phase')
    expect(invalid.json().message).toContain('objective:')
    expect(invalid.json().message).toContain('thresholdMs:')
    const fileOne = await app.inject({
      method: 'DELETE',
      url: '/api/v1/slos/chat-availability',
      headers: ADMIN,
    })
    expect(fileOne.statusCode).toBe(409)
    await engine.evaluate(S)
    expect(engine.get('chat-latency')!.evaluation).toBeDefined()
    expect(
      (await app.inject({ method: 'DELETE', url: '/api/v1/slos/chat-latency', headers: ADMIN })).statusCode,
    ).toBe(204)
    expect(
      (await app.inject({ method: 'DELETE', url: '/api/v1/slos/chat-latency', headers: ADMIN })).statusCode,
    ).toBe(404)
  })

  it('imports OpenSLO or tailguard YAML through the API, naming the line of each problem', async () => {
    const { app, engine } = await setup()
    const yaml = await readFile(
      join(import.meta.dirname, '..', '..', 'fixtures', 'slo', 'openslo.yaml'),
      'utf8',
    )
    const headers = { ...ADMIN, 'content-type': 'application/yaml' }
    expect(
      (
        await app.inject({
          method: 'POST',
          url: '/api/v1/slos/import',
          headers: { ...READ, 'content-type': 'application/yaml' },
          payload: yaml,
        })
      ).statusCode,
    ).toBe(403)
    // chat-availability is defined by a file in this setup, so the document is refused as a whole.
    const clash = await app.inject({ method: 'POST', url: '/api/v1/slos/import', headers, payload: yaml })
    expect(clash.statusCode).toBe(409)
    expect(engine.get('chat-latency')).toBeUndefined()
    const renamed = yaml.replace('name: chat-availability', 'name: api-availability')
    const res = await app.inject({ method: 'POST', url: '/api/v1/slos/import', headers, payload: renamed })
    expect(res.statusCode).toBe(200)
    expect(
      res
        .json()
        .imported.map((i: { name: string }) => i.name)
        .sort(),
    ).toEqual(['api-availability', 'chat-latency', 'chat-ttft'])
    expect(engine.get('chat-latency')!.source).toBe('api')
    expect(engine.get('api-availability')!.slo.sli).toEqual({ kind: 'availability', shedIsBad: false })
    const bad = await app.inject({
      method: 'POST',
      url: '/api/v1/slos/import',
      headers,
      payload: 'version: 1\nslos:\n  - name: x\n    kind: availability\n    objective: 2\n',
    })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().message).toBe(
      'body:5: slos[0].objective: must be a ratio in (0, 1) or a percentage like "99.9%"',
    )
  })

  it('silences an alert until the silence expires, and lists alerts', async () => {
    const { app, engine, now } = await setup()
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/silences',
      headers: ADMIN,
      payload: {
        matchers: { slo: 'chat-availability', severity: 'page' },
        duration: '30m',
        comment: 'deploy',
        createdBy: 'ana',
      },
    })
    expect(res.statusCode).toBe(201)
    const silence = res.json()
    expect(silence.state).toBe('active')
    await engine.evaluate(S)
    const alerts = await app.inject({ method: 'GET', url: '/api/v1/alerts', headers: READ })
    const page = alerts.json().alerts.find((a: { tier: string }) => a.tier === 'page-1h')
    expect(page).toMatchObject({ state: 'silenced', silenceId: silence.id })
    now.ms = S + 31 * MIN
    await engine.evaluate(now.ms)
    const after = await app.inject({ method: 'GET', url: '/api/v1/alerts?state=firing', headers: READ })
    expect(after.json().alerts.map((a: { tier: string }) => a.tier)).toContain('page-1h')
    const listed = await app.inject({ method: 'GET', url: '/api/v1/silences', headers: READ })
    expect(listed.json().silences[0].state).toBe('expired')
    // Extending it silences the alert again.
    const extended = await app.inject({
      method: 'PUT',
      url: `/api/v1/silences/${silence.id}`,
      headers: ADMIN,
      payload: { endsAt: new Date(S + 2 * HOUR).toISOString(), comment: 'deploy, longer' },
    })
    expect(extended.statusCode).toBe(200)
    expect(extended.json()).toMatchObject({ state: 'active', comment: 'deploy, longer' })
    now.ms = S + 32 * MIN
    await engine.evaluate(now.ms)
    const again = await app.inject({ method: 'GET', url: '/api/v1/alerts?state=silenced', headers: READ })
    expect(again.json().alerts.map((a: { tier: string }) => a.tier)).toContain('page-1h')
    const expired = await app.inject({
      method: 'DELETE',
      url: `/api/v1/silences/${silence.id}`,
      headers: ADMIN,
    })
    expect(expired.statusCode).toBe(200)
    expect(
      (await app.inject({ method: 'GET', url: '/api/v1/silences/nope', headers: READ })).json().code,
    ).toBe('TG_ERR_SILENCE_NOT_FOUND')
    const bad = await app.inject({
      method: 'POST',
      url: '/api/v1/silences',
      headers: ADMIN,
      payload: { matchers: {}, duration: '1h', comment: '' },
    })
    expect(bad.statusCode).toBe(400)
  })

  it('exposes per-SLO objective, SLI, budget and burn rates on /metrics', async () => {
    const { app, engine } = await setup()
    await engine.evaluate(S)
    const res = await app.inject({ method: 'GET', url: '/metrics', headers: READ })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('tailguard_slo_objective_ratio{slo="chat-availability"} 0.999')
    expect(res.body).toMatch(/tailguard_slo_sli_ratio\{slo="chat-availability"\} 0\.9/)
    expect(res.body).toMatch(/tailguard_slo_error_budget_remaining_ratio\{slo="chat-availability"\} /)
    expect(res.body).toMatch(/tailguard_slo_burn_rate\{slo="chat-availability",window="1h"\} 22\.4/)
    expect(res.body).toContain(
      'tailguard_slo_alert{slo="chat-availability",tier="page-1h",severity="page",state="firing"} 1',
    )
  })
})

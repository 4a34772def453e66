import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createStore } from '../../../collector/index.js'
import type { Store } from '../../../collector/index.js'
import { buildCollector } from '../../../collector/app.js'
import { createAutoscaleRoutes, createRecommendationBoard } from '../../../controller/index.js'
import { unknownTargetHint } from '../../../controller/autoscale/recommendation.js'
import { recommendation } from './fixtures.js'

const READ = 'read-token-0123456789abcdef'
const AGENT = 'agent-token-0123456789abcdef'

describe('GET /api/v1/autoscale/{service}', () => {
  let store: Store
  const board = createRecommendationBoard()
  board.publish(recommendation({ desiredReplicas: 5, mode: 'observe' }))
  board.publish(
    recommendation({ ref: { service: 'chat', model: 'llama', version: '3' }, desiredReplicas: 9 }),
  )
  let app: Awaited<ReturnType<typeof buildCollector>>

  beforeAll(async () => {
    store = await createStore({ url: ':memory:' })
    app = await buildCollector(
      {
        tokens: [
          { token: READ, scope: 'read' },
          { token: AGENT, scope: 'agent' },
        ],
        reportBodyLimitBytes: 1 << 20,
        bodyLimitBytes: 1 << 16,
      },
      { store, plugins: [createAutoscaleRoutes(board, () => Date.UTC(2026, 10, 23, 1, 0, 5))] },
    )
  })
  afterAll(async () => {
    await app.close()
    await store.close()
  })

  it('answers the recommendation in observe mode, with the number the KEDA scaler reports', async () => {
    const res = await app.inject({
      url: '/api/v1/autoscale/chat',
      headers: { authorization: `Bearer ${READ}` },
    })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body).toMatchObject({
      service: 'chat',
      model: null,
      desiredReplicas: 5,
      currentReplicas: 2,
      mode: 'observe',
      decisionId: 'd-1',
      validUntil: '2026-11-23T01:00:15.000Z',
      stale: false,
      active: true,
      keda: { metricName: 'tailguard-chat-desiredreplicas', targetSize: 1, metricValue: 5 },
    })
    expect(Math.ceil(body.keda.metricValue / body.keda.targetSize)).toBe(body.desiredReplicas)
    expect(body.conditions[0]).toMatchObject({ type: 'AbleToScale', status: 'True' })
    const narrowed = await app.inject({
      url: '/api/v1/autoscale/chat?model=llama&version=3',
      headers: { authorization: `Bearer ${READ}` },
    })
    expect(narrowed.json().desiredReplicas).toBe(9)
  })

  it('says which services exist when the name is wrong, and needs a read token', async () => {
    const res = await app.inject({
      url: '/api/v1/autoscale/chta',
      headers: { authorization: `Bearer ${READ}` },
    })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toMatchObject({
      code: 'TG_ERR_NOT_FOUND',
      message: expect.stringMatching(/did you mean "chat"/),
    })
    // A name close to none: the targets there are, not "none known".
    const far = await app.inject({
      url: '/api/v1/autoscale/demo-vision',
      headers: { authorization: `Bearer ${READ}` },
    })
    expect(far.statusCode).toBe(404)
    expect(far.json().message).toMatch(/^no controller target "demo-vision"; the targets are "chat"/)
    expect((await app.inject({ url: '/api/v1/autoscale/chat' })).statusCode).toBe(401)
    const agent = await app.inject({
      url: '/api/v1/autoscale/chat',
      headers: { authorization: `Bearer ${AGENT}` },
    })
    expect(agent.statusCode).toBe(403)
  })

  it('is described in the OpenAPI document', async () => {
    const res = await app.inject({
      url: '/api/v1/openapi.json',
      headers: { authorization: `Bearer ${READ}` },
    })
    expect(Object.keys(res.json().paths)).toContain('/api/v1/autoscale/{service}')
  })
})

describe('unknownTargetHint', () => {
  it('says none is known, or names at most five targets and how many more', () => {
    const board = createRecommendationBoard()
    expect(unknownTargetHint(board, { service: 'x' })).toBe(
      'no controller target "x"; no targets are known yet',
    )
    for (const s of ['a1', 'b2', 'c3', 'd4', 'e5', 'f6', 'g7'])
      board.publish(recommendation({ ref: { service: s } }))
    expect(unknownTargetHint(board, { service: 'zzzzzz', model: 'm' })).toBe(
      'no controller target "zzzzzz/m"; the targets are "a1", "b2", "c3", "d4", "e5" and 2 more',
    )
  })
})

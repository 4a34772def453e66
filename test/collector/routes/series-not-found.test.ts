import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../../collector/app.js'
import { createStore } from '../../../collector/store/index.js'
import type { Store } from '../../../collector/index.js'
import { closestNames, didYouMean } from '../../../collector/routes/closest.js'
import { makeReport } from '../../helpers/reports.js'

// A misspelt service on the query routes is a 404 naming the closest services, not a 200 with count 0; a
// service that reported but is quiet in the range still answers 200.

const READ = 'read-token-0123456789abcdef'
const NOW = Date.parse('2026-11-21T12:00:00Z')
let app: FastifyInstance
let store: Store
let dir: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tg-series-'))
  store = await createStore({ url: join(dir, 'tg.db') })
  app = await buildCollector(
    { tokens: [{ token: READ, scope: 'read' }], reportBodyLimitBytes: 256 * 1024, bodyLimitBytes: 64 * 1024 },
    { store, clock: () => NOW },
  )
  for (const [seq, service] of [
    [1, 'demo-chat'],
    [2, 'demo-vision'],
  ] as const)
    await store.ingest(
      makeReport({
        seq,
        startMs: NOW - 60_000,
        series: [{ labels: { service }, samples: { total: [1000, 2000] }, ok: 2 }],
      }),
      NOW,
    )
})
afterAll(async () => {
  await app.close()
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${READ}` } })

describe('a misspelt service on the query routes', () => {
  for (const route of ['/api/v1/latency', '/api/v1/breakdown', '/api/v1/timeseries'])
    it(`${route}?service=demo-chta: 404 TG_ERR_SERIES_NOT_FOUND, did you mean 'demo-chat'?`, async () => {
      const res = await get(`${route}?service=demo-chta&from=-1h`)
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({
        code: 'TG_ERR_SERIES_NOT_FOUND',
        statusCode: 404,
        message: "service: no series named 'demo-chta' has reported; did you mean 'demo-chat'?",
      })
    })

  it('names the services there are when none is close', async () => {
    const res = await get('/api/v1/latency?service=billing&from=-1h')
    expect(res.statusCode).toBe(404)
    expect(res.json().message).toBe(
      "service: no series named 'billing' has reported; services that report: demo-chat, demo-vision",
    )
  })

  it('a real service answers 200, with data and when quiet in the range', async () => {
    const live = await get('/api/v1/latency?service=demo-chat&from=-1h')
    expect(live.statusCode).toBe(200)
    expect(live.json().count).toBe(2)
    const quiet = await get('/api/v1/latency?service=demo-chat&from=-5d&to=-4d')
    expect(quiet.statusCode).toBe(200)
    expect(quiet.json().count).toBe(0)
  })
})

describe('before any service has reported', () => {
  it('answers 200 with count 0 (a fresh start has nothing to compare against)', async () => {
    const d = mkdtempSync(join(tmpdir(), 'tg-series-empty-'))
    const empty = await createStore({ url: join(d, 'tg.db') })
    const fresh = await buildCollector(
      {
        tokens: [{ token: READ, scope: 'read' }],
        reportBodyLimitBytes: 256 * 1024,
        bodyLimitBytes: 64 * 1024,
      },
      { store: empty, clock: () => NOW },
    )
    try {
      const res = await fresh.inject({
        method: 'GET',
        url: '/api/v1/latency?service=demo-chat',
        headers: { authorization: `Bearer ${READ}` },
      })
      expect(res.statusCode).toBe(200)
      expect(res.json().count).toBe(0)
    } finally {
      await fresh.close()
      await empty.close()
      rmSync(d, { recursive: true, force: true })
    }
  })
})

describe('closestNames', () => {
  it('ranks by edit distance and ignores case', () => {
    expect(closestNames('demo-chta', ['demo-chat', 'demo-vision', 'chat'])).toEqual(['demo-chat'])
    expect(closestNames('DEMO-CHAT', ['demo-chat'])).toEqual(['demo-chat'])
    expect(closestNames('chat', ['demo-chat', 'chats', 'vision'])).toEqual(['chats', 'demo-chat'])
    expect(closestNames('zzz', ['demo-chat'])).toEqual([])
    expect(didYouMean('x', [])).toBe('; no service has reported yet')
  })
})

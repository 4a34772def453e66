import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../../collector/app.js'
import { createStore } from '../../../collector/store/index.js'
import type { Store } from '../../../collector/index.js'
import { encodeHistogram, newHistogram } from '../../../collector/index.js'
import type { IntervalReport } from '../../../collector/index.js'
import { seededRandom } from '../../../agent/demo/fleet.js'
import { mutateJsonText } from '../../helpers/hostile.js'

const READ = 'read-token-0123456789abcdef'
const ADMIN = 'admin-token-0123456789abcdef'
const AGENT = 'agent-token-0123456789abcdef'

let app: FastifyInstance
let store: Store
let dir: string
const NOW = Date.parse('2026-11-21T12:00:00Z')

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tg-bad-'))
  store = await createStore({ url: join(dir, 'tg.db') })
  app = await buildCollector(
    {
      tokens: [
        { token: READ, scope: 'read' },
        { token: ADMIN, scope: 'admin' },
        { token: AGENT, scope: 'agent' },
      ],
      reportBodyLimitBytes: 256 * 1024,
      bodyLimitBytes: 64 * 1024,
    },
    { store, clock: () => NOW },
  )
})
afterAll(async () => {
  await app.close()
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

function validReport(seq: number, instance = 'fuzz-instance'): IntervalReport {
  const h = newHistogram()
  for (let i = 1; i <= 20; i++) h.recordValue(i * 250)
  return {
    version: 1,
    agent: { id: 'fuzz', instance, node: 'n' },
    seq,
    intervalStartMs: NOW - 60_000,
    intervalEndMs: NOW - 55_000,
    series: [
      {
        labels: { service: 'fuzzed', model: 'm', version: '1', replica: 'r', node: 'n' },
        histograms: { total: encodeHistogram(h), queue: encodeHistogram(h) },
        requests: { ok: 20, error: 0, shed: 0 },
      },
    ],
  }
}

const post = (payload: string | object, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/api/v1/reports',
    headers: { authorization: `Bearer ${AGENT}`, 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  })

describe('collector: bad input gets a clear 4xx', () => {
  it('rejects missing, malformed and wrong tokens, and the wrong scope', async () => {
    const none = await app.inject({ method: 'POST', url: '/api/v1/reports', payload: validReport(1) })
    expect(none.statusCode).toBe(401)
    expect(none.json()).toMatchObject({
      code: 'TG_ERR_UNAUTHORIZED',
      message: expect.stringMatching(/missing bearer token/),
    })
    const wrong = await post(validReport(1), { authorization: 'Bearer nope' })
    expect(wrong.statusCode).toBe(401)
    expect(wrong.json().message).toMatch(/invalid bearer token/)
    const readToken = await post(validReport(1), { authorization: `Bearer ${READ}` })
    expect(readToken.statusCode).toBe(403)
    expect(readToken.json().message).toMatch(/needs a token with agent scope/)
    const agentOnQuery = await app.inject({
      url: '/api/v1/latency',
      headers: { authorization: `Bearer ${AGENT}` },
    })
    expect(agentOnQuery.statusCode).toBe(403)
  })

  it('names what was wrong in a report', async () => {
    const cases: Array<[string | object, RegExp]> = [
      ['{"version":1,', /JSON|Unexpected end/i],
      [{ ...validReport(1), seq: 'seven' }, /seq/],
      [{ ...validReport(1), version: 9 }, /version/],
      [
        { ...validReport(1), series: [{ ...validReport(1).series[0]!, histograms: { warp: 'HISTFAAA' } }] },
        /warp|additional/i,
      ],
      [
        {
          ...validReport(1),
          series: [{ ...validReport(1).series[0]!, histograms: { total: 'not-a-histogram' } }],
        },
        /histogram/i,
      ],
      // Node's base64 decoder would skip the quote; stored as is, it would break the finest level's packs.
      [
        {
          ...validReport(1),
          series: [
            {
              ...validReport(1).series[0]!,
              histograms: {
                total: `${validReport(1).series[0]!.histograms.total!.slice(0, 9)}"x${validReport(1).series[0]!.histograms.total!.slice(9)}`,
              },
            },
          ],
        },
        /series\[0\]\.histograms\.total: histogram holds a character outside base64/,
      ],
      [{ ...validReport(1), intervalEndMs: NOW - 70_000 }, /intervalEndMs .* is before intervalStartMs/],
      [
        { ...validReport(1), intervalStartMs: NOW + 3_600_000, intervalEndMs: NOW + 3_605_000 },
        /ahead of the collector's clock/,
      ],
    ]
    for (const [payload, message] of cases) {
      const res = await post(payload)
      expect(res.statusCode, JSON.stringify(res.json())).toBe(400)
      expect(res.json().code).toBe('TG_ERR_BAD_REQUEST')
      expect(res.json().message).toMatch(message)
    }
    const big = await post({
      ...validReport(1),
      agent: { id: 'x'.repeat(300 * 1024), instance: 'i', node: 'n' },
    })
    expect(big.statusCode).toBe(413)
    expect(big.json().code).toBe('TG_ERR_PAYLOAD_TOO_LARGE')
    const xml = await post('<report/>', { 'content-type': 'application/xml' })
    expect(xml.statusCode).toBe(415)
  })

  it('names bad query parameters', async () => {
    const get = (url: string) => app.inject({ url, headers: { authorization: `Bearer ${READ}` } })
    expect((await get('/api/v1/latency?phase=warp')).json().message).toMatch(/unknown phase 'warp'/)
    expect((await get('/api/v1/latency?from=yesterday')).json().message).toMatch(/from: expected an ISO time/)
    expect((await get('/api/v1/latency?quantiles=0.5,2')).json().message).toMatch(
      /'2' is not a number in \(0, 1\]/,
    )
    expect((await get('/api/v1/latency?from=-1h&to=-2h')).json().message).toMatch(/from must be before to/)
    expect((await get('/api/v1/timeseries?from=-30d&step=1s')).json().message).toMatch(
      /more than 2000 points/,
    )
    expect((await get('/api/v1/latency?bogus=1')).statusCode).toBe(400)
  })
})

describe('collector: fuzzing never yields a 5xx and never corrupts counts', () => {
  it('survives 10,000 mutated reports and counts exactly the accepted ones', async () => {
    const rand = seededRandom(20261121)
    const statuses = new Map<number, number>()
    let acceptedRequests = 0
    for (let i = 0; i < 10_000; i++) {
      const base = validReport(1000 + i, 'fuzz-mutated')
      const text = mutateJsonText(JSON.stringify(base), rand)
      const res = await post(text)
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      expect(res.statusCode, `payload ${i}: ${text.slice(0, 200)} → ${res.body}`).toBeLessThan(500)
      if (res.statusCode === 200 && res.json().status === 'stored') {
        const parsed = JSON.parse(text) as IntervalReport
        acceptedRequests += parsed.series
          .filter((s) => s.labels.service === 'fuzzed')
          .reduce((n, s) => n + s.requests.ok, 0)
      } else if (res.statusCode !== 200) {
        expect(res.json().message, `payload ${i}`).toEqual(expect.any(String))
      }
    }
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0)
    expect([...statuses.keys()].every((s) => s < 500)).toBe(true)
    // The process keeps serving and the store holds what was accepted.
    const good = await post(validReport(1, 'after-fuzz'))
    expect(good.statusCode).toBe(200)
    const counts = await store.counts({ service: 'fuzzed' }, { fromMs: 0, toMs: NOW + 11 * 60_000 })
    expect(counts.ok).toBe(acceptedRequests + 20)
  }, 180_000)

  it('survives 10,000 mutated query strings', async () => {
    const rand = seededRandom(7)
    const paths = ['/api/v1/latency', '/api/v1/breakdown', '/api/v1/timeseries', '/api/v1/services']
    const params = [
      'service=fuzzed',
      'phase=total',
      'from=-1h',
      'to=now',
      'quantiles=0.5,0.99',
      'step=10s',
      'model=m',
    ]
    for (let i = 0; i < 10_000; i++) {
      const path = paths[Math.floor(rand() * paths.length)]!
      const qs = params
        .filter(() => rand() < 0.5)
        .map((p) => mutateJsonText(p, rand))
        .map((p) => encodeURI(p).replace(/#/g, '%23'))
        .join('&')
      const res = await app.inject({ url: `${path}?${qs}`, headers: { authorization: `Bearer ${READ}` } })
      expect(res.statusCode, `${path}?${qs} → ${res.body}`).toBeLessThan(500)
    }
  }, 180_000)
})

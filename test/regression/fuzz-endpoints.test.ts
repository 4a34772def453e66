// Issue #11 acceptance: a fast-check property fuzz suite per endpoint, FUZZ_RUNS (10,000) cases each, on
// SQLite and PostgreSQL, through app.inject on the real app and store. Generated: wrong JSON types,
// non-finite and huge numbers, malformed Unicode, deep and wide structures, and mutations of valid
// payloads. Properties: no answer is a 5xx, the process keeps serving, and the stored totals equal exactly
// what was acknowledged.
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN, AGENT, HOSTILE_NOW, READ, hostileCollector, hostileReport } from '../helpers/hostile.js'
import type { HostileCollector } from '../helpers/hostile.js'
import {
  FUZZ_RUNS,
  FUZZ_SEED,
  encodeQueryPart,
  hostileJson,
  hostileString,
  mutate,
  mutations,
  rawQueryText,
} from '../helpers/hostile-arbitraries.js'
import { testDialects } from '../helpers/dialects.js'
import type { IntervalReport } from '../../collector/index.js'

const auth = (token: string) => ({ authorization: `Bearer ${token}` })
const TIMEOUT = 600_000

/** The query routes and their parameters (read scope). */
const QUERY_ROUTES: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['/api/v1/latency', ['service', 'model', 'version', 'replica', 'node', 'from', 'to', 'quantiles', 'phase']],
  ['/api/v1/breakdown', ['service', 'model', 'version', 'replica', 'node', 'from', 'to', 'quantiles']],
  ['/api/v1/timeseries', ['service', 'model', 'from', 'to', 'quantiles', 'phase', 'step']],
  ['/api/v1/services', []],
  ['/api/v1/requests', ['service', 'model', 'version', 'replica', 'node', 'from', 'to', 'step']],
  ['/api/v1/heatmap', ['service', 'model', 'replica', 'from', 'to', 'phase', 'step', 'bandsPerDecade']],
  ['/api/v1/gpus', ['node', 'uuid']],
  ['/api/v1/gpus/timeseries', ['node', 'uuid', 'from', 'to', 'field', 'step']],
  ['/api/v1/gpus/events', ['node', 'uuid', 'from', 'to']],
  ['/api/v1/slos', []],
  ['/api/v1/slos/chat-availability', []],
  ['/api/v1/alerts', ['state', 'slo']],
  ['/api/v1/alerts/deliveries', ['limit']],
  ['/api/v1/fleet', ['from', 'to']],
  ['/api/v1/silences', []],
  ['/api/v1/openapi.json', []],
]

const queryValue = fc.oneof(
  hostileString,
  fc.constantFrom(
    'svc',
    'total',
    'queue',
    '0.5,0.99',
    '-1h',
    'now',
    '0',
    '10s',
    '1m',
    'gpuUtilPct',
    'firing',
  ),
)
const queryCase = (params: readonly string[]) =>
  fc.record({
    known: fc.array(fc.tuple(params.length > 0 ? fc.constantFrom(...params) : hostileString, queryValue), {
      maxLength: 5,
    }),
    unknown: fc.array(fc.tuple(hostileString, queryValue), { maxLength: 1 }),
    repeat: fc.boolean(),
    raw: fc.option(rawQueryText, { freq: 5 }),
  })

function queryString(c: {
  known: Array<[string, string]>
  unknown: Array<[string, string]>
  repeat: boolean
  raw: string | null
}): string {
  const pairs = [...c.known, ...(c.repeat ? c.known.slice(0, 1) : []), ...c.unknown]
  const text = pairs.map(([k, v]) => `${encodeQueryPart(k)}=${encodeQueryPart(v)}`)
  if (c.raw !== null) text.push(`${pairs[0]?.[0] ?? 'from'}=${c.raw}`)
  return text.join('&')
}

const SLO = {
  name: 'chat-availability',
  kind: 'availability',
  selector: { service: 'svc' },
  objective: '99.9%',
  window: '30d',
}
const SILENCE = { matchers: { slo: 'chat-availability' }, duration: '2h', comment: 'maintenance' }

const yamlText = fc.oneof(
  hostileString,
  fc.constantFrom(
    'name: *nope\n',
    'a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n',
    '['.repeat(500),
    'name: x\nkind: latency\nselector: {}\nthresholdMs: 1e400\nobjective: 99%\n',
    'name: "\\ud800"\nkind: availability\nselector: {service: svc}\nobjective: 99%\n',
    'name: ok-slo\nkind: availability\nselector: {service: svc}\nobjective: 99.9%\nwindow: 99999999999w\n',
    '---\n---\n---\n',
    'apiVersion: openslo/v1\nkind: SLO\nmetadata: {name: x}\nspec: {budgetingMethod: Occurrences, objectives: [{target: 2}]}\n',
  ),
  fc.tuple(fc.constantFrom(...Object.keys(SLO)), hostileJson).map(([k, v]) =>
    Object.entries({ ...SLO, [k]: v })
      .map(([a, b]) => `${a}: ${JSON.stringify(b)}`)
      .join('\n'),
  ),
)

for (const dialect of testDialects())
  describe(`${dialect}: property fuzz per endpoint (${FUZZ_RUNS} cases each)`, () => {
    let c: HostileCollector
    beforeAll(async () => {
      c = await hostileCollector(dialect)
      const created = await c.app.inject({
        method: 'POST',
        url: '/api/v1/slos',
        headers: auth(ADMIN),
        payload: SLO,
      })
      expect(created.statusCode, created.body).toBe(201)
    })
    afterAll(async () => c?.close())

    const never5xx = (label: string, res: { statusCode: number; body: string }) => {
      if (res.statusCode >= 500) throw new Error(`${label} → ${res.statusCode} ${res.body.slice(0, 300)}`)
      if (res.statusCode >= 400) {
        const body = JSON.parse(res.body) as { code?: unknown; message?: unknown }
        if (typeof body.code !== 'string' || typeof body.message !== 'string')
          throw new Error(`${label} → ${res.statusCode} without { code, message }: ${res.body.slice(0, 200)}`)
      }
    }

    it(
      'POST /api/v1/reports: never 5xx, and the stored totals equal exactly what was acknowledged',
      async () => {
        let seq = 1
        const acked = { ok: 0, error: 0, shed: 0, outputTokens: 0 }
        await fc.assert(
          fc.asyncProperty(mutations, fc.boolean(), async (ms, valid) => {
            const base = hostileReport(seq++, `fuzz-${dialect}`, 'fuzzed', 1 + (seq % 7))
            base.series[0]!.requests.error = seq % 3
            const payload = valid ? base : mutate(base, ms)
            const res = await c.app.inject({
              method: 'POST',
              url: '/api/v1/reports',
              headers: { ...auth(AGENT), 'content-type': 'application/json' },
              payload: JSON.stringify(payload) ?? 'null',
            })
            never5xx('report', res)
            if (res.statusCode === 200 && (JSON.parse(res.body) as { status: string }).status === 'stored') {
              for (const s of (payload as IntervalReport).series) {
                acked.ok += s.requests.ok
                acked.error += s.requests.error
                acked.shed += s.requests.shed
                acked.outputTokens += s.outputTokens ?? 0
              }
            }
          }),
          { numRuns: FUZZ_RUNS, seed: FUZZ_SEED },
        )
        const stored = await c.store.counts({}, { fromMs: 0, toMs: 8_640_000_000_000_000 })
        expect(acked.ok).toBeGreaterThan(0)
        expect({
          ok: stored.ok,
          error: stored.error,
          shed: stored.shed,
          outputTokens: stored.outputTokens,
        }).toEqual(acked)
        const after = await c.app.inject({
          method: 'POST',
          url: '/api/v1/reports',
          headers: auth(AGENT),
          payload: hostileReport(1, 'after-fuzz'),
        })
        expect(after.statusCode).toBe(200)
      },
      TIMEOUT,
    )

    for (const [route, params] of QUERY_ROUTES)
      it(
        `GET ${route}: never 5xx`,
        async () => {
          await fc.assert(
            fc.asyncProperty(queryCase(params), async (q) => {
              const url = `${route}?${queryString(q)}`
              never5xx(url, await c.app.inject({ url, headers: auth(READ) }))
            }),
            { numRuns: FUZZ_RUNS, seed: FUZZ_SEED },
          )
        },
        TIMEOUT,
      )

    it(
      'POST and PUT /api/v1/slos: never 5xx',
      async () => {
        await fc.assert(
          fc.asyncProperty(mutations, fc.boolean(), async (ms, put) => {
            const body = mutate({ ...SLO, name: 'fuzz-slo' }, ms)
            const res = await c.app.inject({
              method: put ? 'PUT' : 'POST',
              url: put ? '/api/v1/slos/fuzz-slo' : '/api/v1/slos',
              headers: { ...auth(ADMIN), 'content-type': 'application/json' },
              payload: JSON.stringify(body) ?? 'null',
            })
            never5xx('slo', res)
            if (res.statusCode < 300)
              never5xx(
                'delete slo',
                await c.app.inject({ method: 'DELETE', url: '/api/v1/slos/fuzz-slo', headers: auth(ADMIN) }),
              )
          }),
          { numRuns: FUZZ_RUNS, seed: FUZZ_SEED },
        )
      },
      TIMEOUT,
    )

    it(
      'POST /api/v1/slos/import (YAML): never 5xx; undefined aliases and alias bombs are TG_ERR_SLO_INVALID',
      async () => {
        await fc.assert(
          fc.asyncProperty(yamlText, async (text) => {
            const res = await c.app.inject({
              method: 'POST',
              url: '/api/v1/slos/import',
              headers: { ...auth(ADMIN), 'content-type': 'application/yaml' },
              payload: text,
            })
            never5xx('import', res)
            if (/\*nope|\*c,\*c/.test(text)) expect(JSON.parse(res.body).code).toBe('TG_ERR_SLO_INVALID')
          }),
          { numRuns: FUZZ_RUNS, seed: FUZZ_SEED },
        )
      },
      TIMEOUT,
    )

    it(
      'POST, PUT and DELETE /api/v1/silences: never 5xx',
      async () => {
        await fc.assert(
          fc.asyncProperty(
            mutations,
            fc.constantFrom('POST', 'PUT', 'DELETE'),
            hostileString,
            async (ms, method, id) => {
              const target =
                method === 'POST' ? '/api/v1/silences' : `/api/v1/silences/${encodeQueryPart(id)}`
              const res = await c.app.inject({
                method,
                url: target,
                headers: { ...auth(ADMIN), 'content-type': 'application/json' },
                ...(method === 'DELETE' ? {} : { payload: JSON.stringify(mutate(SILENCE, ms)) ?? 'null' }),
              })
              never5xx(`${method} silence`, res)
            },
          ),
          { numRuns: FUZZ_RUNS, seed: FUZZ_SEED },
        )
      },
      TIMEOUT,
    )

    it('keeps serving after the fuzzing', async () => {
      const res = await c.app.inject({
        url: `/api/v1/latency?service=fuzzed&from=0&to=${HOSTILE_NOW + 1}`,
        headers: auth(READ),
      })
      expect(res.statusCode).toBe(200)
    })
  })

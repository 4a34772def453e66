// Issue #11: each failure reported under hostile input, reproduced through the real app on a real store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { build, encodeIntoCompressedBase64 } from 'hdr-histogram-js'
import { ADMIN, AGENT, HOSTILE_NOW, READ, hostileCollector, hostileReport } from '../helpers/hostile.js'
import type { HostileCollector } from '../helpers/hostile.js'
import { testDialects } from '../helpers/dialects.js'

for (const dialect of testDialects())
  describe(`${dialect}: hostile reports are refused with a final 4xx, never 5xx`, () => {
    let c: HostileCollector
    beforeAll(async () => {
      c = await hostileCollector(dialect)
    })
    afterAll(async () => c?.close())

    const post = (payload: string | object) =>
      c.app.inject({
        method: 'POST',
        url: '/api/v1/reports',
        headers: { authorization: `Bearer ${AGENT}`, 'content-type': 'application/json' },
        payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
      })

    it('a label with invalid UTF-16 is a 400 naming the field, and the agent’s next report is stored', async () => {
      const bad = hostileReport(1, 'utf16')
      bad.series[0]!.labels.replica = 'pod-\ud800'
      const res = await post(bad)
      expect(res.statusCode, res.body).toBe(400)
      expect(res.json().message).toMatch(/series\/0\/labels\/replica.*Unicode/)
      const next = await post(hostileReport(2, 'utf16'))
      expect(next.statusCode, next.body).toBe(200)
    })

    it('refuses what it used to coerce: strings for numbers, numbers for labels, non-finite and huge values', async () => {
      const base = JSON.stringify(hostileReport(3, 'coerce'))
      const variants: Array<[string, RegExp]> = [
        [base.replace('"ok":20', '"ok":"Infinity"'), /requests\/ok/],
        [base.replace('"ok":20', '"ok":"20"'), /requests\/ok/],
        [base.replace('"ok":20', '"ok":[20]'), /requests\/ok/],
        [base.replace('"replica":"r"', '"replica":7'), /labels\/replica/],
        [base.replace('"replica":"r"', '"replica":true'), /labels\/replica/],
        [base.replace('"replica":"r"', '"replica":null'), /labels\/replica/],
        [base.replace(/"intervalStartMs":\d+/, '"intervalStartMs":null'), /intervalStartMs/],
        [base.replace(/"intervalStartMs":\d+/, '"intervalStartMs":1e308'), /intervalStartMs/],
        [base.replace(/"intervalEndMs":\d+/, '"intervalEndMs":1e400'), /intervalEndMs/],
        [base.replace('"seq":3', `"seq":${'9'.repeat(400)}`), /seq/],
        [base.replace('"seq":3', '"seq":9007199254740993'), /seq/],
        [
          base
            .replace('"errorClasses"', '"x"')
            .replace('"requests"', `"errorClasses":{"${'k'.repeat(300)}":1},"requests"`),
          /errorClasses/,
        ],
      ]
      for (const [text, field] of variants) {
        const res = await post(text)
        expect(res.statusCode, `${text.slice(0, 160)} → ${res.body}`).toBe(400)
        expect(res.json().code).toBe('TG_ERR_BAD_REQUEST')
        expect(res.json().message).toMatch(field)
      }
      const counts = await c.store.counts({}, { fromMs: 0, toMs: 8.64e15 })
      expect(counts.ok).toBe(20) // the one good report above, nothing coerced
    })

    it('checks a histogram header against the configured range and precision before decoding it', async () => {
      const h = build({
        numberOfSignificantValueDigits: 5,
        highestTrackableValue: 2 ** 52,
        useWebAssembly: false,
      })
      h.recordValue(1000)
      const wire = encodeIntoCompressedBase64(h)
      const report = hostileReport(4, 'hdr')
      report.series[0]!.histograms = { total: wire }
      const body = JSON.stringify({ ...report, series: Array.from({ length: 200 }, () => report.series[0]) })
      const t0 = performance.now()
      const res = await post(body)
      const ms = performance.now() - t0
      expect(res.statusCode, res.body).toBe(400)
      expect(res.json().message).toMatch(/significant digits|highest/)
      expect(ms).toBeLessThan(2000)
    })

    it('answers 400 naming the field for times outside the date range, and accepts from=0', async () => {
      const get = (url: string) => c.app.inject({ url, headers: { authorization: `Bearer ${READ}` } })
      for (const [url, field] of [
        ['/api/v1/latency?to=8640000000000001', /^to:/],
        ['/api/v1/latency?from=-99999999999999w', /^from:/],
        ['/api/v1/breakdown?from=-9007199254740993ms', /^from:/],
        ['/api/v1/timeseries?from=-1h&step=9999999999999w', /^step:/],
        ['/api/v1/latency?bogus=1&also=2', /bogus.*also|unknown query parameter/],
      ] as const) {
        const res = await get(url)
        expect(res.statusCode, `${url} → ${res.body}`).toBe(400)
        expect(res.json().message).toMatch(field)
      }
      expect((await get('/api/v1/latency?from=0')).statusCode).toBe(200)
    })

    it('refuses a silence of 2^53 ms and an undefined YAML alias with 400', async () => {
      const admin = { authorization: `Bearer ${ADMIN}` }
      const s = await c.app.inject({
        method: 'POST',
        url: '/api/v1/silences',
        headers: admin,
        payload: { matchers: { slo: 'x' }, duration: String(2 ** 53), comment: 'forever' },
      })
      expect(s.statusCode, s.body).toBe(400)
      expect(s.json().message).toMatch(/duration/)
      const e = await c.app.inject({
        method: 'POST',
        url: '/api/v1/silences',
        headers: admin,
        payload: { matchers: { slo: 'x' }, endsAt: '8640000000000001', comment: 'far' },
      })
      expect(e.statusCode, e.body).toBe(400)
      for (const yaml of [
        'name: *nope\nkind: availability\n',
        'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n',
      ]) {
        const y = await c.app.inject({
          method: 'POST',
          url: '/api/v1/slos/import',
          headers: { ...admin, 'content-type': 'application/yaml' },
          payload: yaml,
        })
        expect(y.statusCode, y.body).toBe(400)
        expect(y.json().code).toBe('TG_ERR_SLO_INVALID')
      }
    })
  })

describe('SLO evaluation cost is bounded by the series an SLO selects', () => {
  let c: HostileCollector
  beforeAll(async () => {
    c = await hostileCollector('sqlite', { maxSeriesPerSlo: 3 })
    const report = hostileReport(1, 'slo-limit', 'wide')
    const one = report.series[0]!
    report.series = Array.from({ length: 5 }, (_, i) => ({
      ...one,
      labels: { ...one.labels, replica: `r${i}` },
    }))
    const res = await c.app.inject({
      method: 'POST',
      url: '/api/v1/reports',
      headers: { authorization: `Bearer ${AGENT}` },
      payload: report,
    })
    expect(res.statusCode, res.body).toBe(200)
  })
  afterAll(async () => c?.close())

  it('refuses an API SLO whose selector matches more series than the limit, naming the selector', async () => {
    const post = (selector: object) =>
      c.app.inject({
        method: 'POST',
        url: '/api/v1/slos',
        headers: { authorization: `Bearer ${ADMIN}` },
        payload: { name: 'broad', kind: 'availability', selector, objective: '99%' },
      })
    const broad = await post({})
    expect(broad.statusCode, broad.body).toBe(400)
    expect(broad.json()).toMatchObject({ code: 'TG_ERR_SLO_INVALID' })
    expect(broad.json().message).toMatch(/selector.*matches 5 series, more than the limit of 3/)
    expect((await post({ service: 'nothing-yet' })).statusCode).toBe(201)
  })

  it('does not evaluate a file SLO that grew past the limit, and says why', async () => {
    const { validateSlo } = await import('../../collector/slo/definition.js')
    const def = validateSlo({
      name: 'wide-file',
      kind: 'availability',
      selector: { service: 'wide' },
      objective: '99%',
    })
    if (!def.ok) throw new Error('fixture')
    c.engine.setFileSlos([def.slo])
    const cycle = await c.engine.evaluate(HOSTILE_NOW)
    expect(cycle.failed).toContainEqual({
      slo: 'wide-file',
      error: expect.stringMatching(/not evaluated: selector matches 5 series/),
    })
  })
})

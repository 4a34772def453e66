// ETags and 304s on the collector's GET API (collector/etag.ts) through buildCollector + app.inject, on SQLite and
// PostgreSQL: what the dashboard's polling relies on, and that authentication always answers first.
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ifNoneMatchHits } from '../../collector/etag.js'
import { TEST_TOKENS, useTestCollector } from '../helpers/collector-app.js'
import { testDialects } from '../helpers/dialects.js'
import { makeReport } from '../helpers/reports.js'

const NOW = Date.parse('2026-11-21T12:00:00Z')
const read = { authorization: `Bearer ${TEST_TOKENS.read}` }

const chatReport = (seq: number, ok: number) =>
  makeReport({
    seq,
    startMs: NOW - 60_000 + seq * 5000,
    series: [{ labels: { service: 'chat', replica: 'r0' }, samples: { total: [40_000, 90_000] }, ok }],
  })

describe('ifNoneMatchHits (RFC 9110 weak comparison)', () => {
  it.each([
    [undefined, '"a"', false],
    ['"a"', '"a"', true],
    ['"b"', '"a"', false],
    ['W/"a"', '"a"', true],
    ['"a"', 'W/"a"', true],
    ['"x", W/"a" ,"y"', '"a"', true],
    ['*', '"a"', true],
    ['"x", "y"', '"a"', false],
    ['', '"a"', false],
  ] as const)('If-None-Match %s against %s → %s', (header, etag, hit) => {
    expect(ifNoneMatchHits(header, etag)).toBe(hit)
  })
})

for (const dialect of testDialects())
  describe(`${dialect}: ETag and If-None-Match on GET /api/v1/*`, () => {
    const c = useTestCollector(dialect, NOW)

    it('answers a repeat with 304 and no body, and a changed resource with 200 and a new ETag', async () => {
      await c.post(chatReport(1, 10))
      const url = '/api/v1/fleet?from=-1h'
      const first = await c.app.inject({ url, headers: read })
      expect(first.statusCode).toBe(200)
      const etag = first.headers.etag as string
      expect(etag).toMatch(/^"[A-Za-z0-9+/=]+"$/)

      const again = await c.app.inject({ url, headers: { ...read, 'if-none-match': etag } })
      expect(again.statusCode).toBe(304)
      expect(again.body).toBe('')
      expect(again.headers.etag).toBe(etag)
      // A weak form of the same tag, or a list holding it, matches too (If-None-Match compares weakly).
      for (const header of [`W/${etag}`, `"other", ${etag}`])
        expect((await c.app.inject({ url, headers: { ...read, 'if-none-match': header } })).statusCode).toBe(
          304,
        )
      // A HEAD (fastify's automatic one for each GET) is conditional the same way.
      const head = await c.app.inject({ method: 'HEAD', url, headers: { ...read, 'if-none-match': etag } })
      expect(head.statusCode).toBe(304)

      await c.post(chatReport(2, 25))
      const changed = await c.app.inject({ url, headers: { ...read, 'if-none-match': etag } })
      expect(changed.statusCode).toBe(200)
      expect(changed.headers.etag).toBeDefined()
      expect(changed.headers.etag).not.toBe(etag)
      const services = (changed.json() as { services: { requests: { ok: number } }[] }).services
      expect(services[0]!.requests.ok).toBe(35)

      const stale = await c.app.inject({ url, headers: { ...read, 'if-none-match': '"not-this-one"' } })
      expect(stale.statusCode).toBe(200)
      expect(stale.headers.etag).toBe(changed.headers.etag)
    })

    it('authenticates first: a missing, wrong or under-scoped token gets 401/403 whatever If-None-Match says', async () => {
      await c.post(chatReport(1, 10))
      const url = '/api/v1/services'
      const ok = await c.app.inject({ url, headers: read })
      const etag = ok.headers.etag as string
      expect(ok.statusCode).toBe(200)

      const cases = [
        [{ 'if-none-match': etag }, 401],
        [{ 'if-none-match': etag, authorization: 'Bearer wrong-token-0123456789abcdef' }, 401],
        [{ 'if-none-match': etag, authorization: `Bearer ${TEST_TOKENS.agent}` }, 403],
        [{ 'if-none-match': '*', authorization: 'Bearer wrong-token-0123456789abcdef' }, 401],
      ] as const
      for (const [headers, status] of cases) {
        const res = await c.app.inject({ url, headers })
        expect(res.statusCode).toBe(status)
        expect(res.json()).toMatchObject({ statusCode: status })
        expect(res.headers.etag).toBeUndefined()
        // Not even the tag the plugin would give the refusal's own body (nor `*`) turns it into a 304.
        const own = `"${createHash('sha1').update(res.body).digest('base64')}"`
        for (const tag of [own, '*']) {
          const again = await c.app.inject({ url, headers: { ...headers, 'if-none-match': tag } })
          expect(again.statusCode).toBe(status)
        }
      }
    })

    it('leaves POST answers and error answers without an ETag', async () => {
      const post = await c.app.inject({
        method: 'POST',
        url: '/api/v1/reports',
        headers: { authorization: `Bearer ${TEST_TOKENS.agent}`, 'if-none-match': '*' },
        payload: chatReport(1, 10),
      })
      expect(post.statusCode).toBe(200)
      expect(post.headers.etag).toBeUndefined()
      expect(post.body).not.toBe('')

      const bad = await c.app.inject({
        url: '/api/v1/fleet?from=yesterday-ish',
        headers: { ...read, 'if-none-match': '*' },
      })
      expect(bad.statusCode).toBe(400)
      expect(bad.headers.etag).toBeUndefined()
      const missing = await c.app.inject({
        url: '/api/v1/nothing-here',
        headers: { ...read, 'if-none-match': '*' },
      })
      expect(missing.statusCode).toBe(404)
    })
  })

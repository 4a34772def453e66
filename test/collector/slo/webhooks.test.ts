// Acceptance 4: a real HTTP receiver gets Alertmanager-format JSON with a valid signature; with the
// receiver down for a while and the collector restarted in between, every notification still arrives,
// once per idempotency key, in order. Runs on SQLite and PostgreSQL.
import { createServer } from 'node:http'
import type { IncomingHttpHeaders, Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createSloEngine } from '../../../collector/slo/engine.js'
import { validateSlo } from '../../../collector/slo/definition.js'
import type { SloDefinition } from '../../../collector/slo/definition.js'
import { backoffMs, signatureHeader, verifySignature } from '../../../collector/slo/webhooks.js'
import { FunctionSource, openDb, testDialects } from './helpers.js'
import type { TestDb } from './helpers.js'

const MIN = 60_000
const HOUR = 60 * MIN
const S = Date.UTC(2026, 2, 3, 12)
const SECRET = 'whsec-test-only'

function slo(raw: object): SloDefinition {
  const r = validateSlo(raw)
  if (!r.ok) throw new Error(JSON.stringify(r.problems))
  return r.slo
}

interface Received {
  headers: IncomingHttpHeaders
  body: string
}

/** A webhook receiver on a fixed port; answers `status()` for each request. */
function receiver(port: number, status: (n: number) => number): Promise<{ server: Server; got: Received[] }> {
  const got: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      res.statusCode = status(got.length)
      res.end()
    })
  })
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve({ server, got })))
}

const close = (s: Server) => new Promise<void>((r) => s.close(() => r()))

async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  const port = (s.address() as AddressInfo).port
  await close(s)
  return port
}

describe('webhook signatures and backoff', () => {
  it('signs timestamp + body with HMAC-SHA256 and verifies it', () => {
    const h = signatureHeader(SECRET, '{"a":1}', 1_767_225_600)
    expect(h).toMatch(/^t=1767225600,v1=[0-9a-f]{64}$/)
    expect(verifySignature(SECRET, h, '{"a":1}', 1_767_225_600)).toBe(true)
    expect(verifySignature(SECRET, h, '{"a":2}', 1_767_225_600)).toBe(false)
    expect(verifySignature('other', h, '{"a":1}', 1_767_225_600)).toBe(false)
    expect(verifySignature(SECRET, h, '{"a":1}', 1_767_225_600 + 301)).toBe(false)
  })

  it.each([
    { attempt: 1, random: 0, want: 500 },
    { attempt: 1, random: 1, want: 1000 },
    { attempt: 4, random: 0.5, want: 6000 },
    { attempt: 20, random: 1, want: 60_000 },
  ])('backoff attempt $attempt (random $random) = $want ms', ({ attempt, random, want }) => {
    expect(backoffMs(attempt, 1000, 60_000, () => random)).toBe(want)
  })
})

for (const dialect of testDialects()) {
  describe(`${dialect}: webhook delivery from the outbox`, () => {
    let tdb: TestDb | undefined
    const servers: Server[] = []
    afterEach(async () => {
      for (const s of servers.splice(0)) await close(s)
      await tdb?.drop()
      tdb = undefined
    })

    it('delivers every notification once, in order, across a receiver outage and a restart', async () => {
      tdb = await openDb(dialect)
      const port = await freePort()
      const hooks = [
        {
          name: 'ops',
          url: `http://127.0.0.1:${port}/hook`,
          secret: SECRET,
          minBackoffMs: 1000,
          maxBackoffMs: 30_000,
        },
      ]
      // Two SLOs whose page-1h tier fires and resolves at different times.
      const counts = (t: number) => {
        const bad = t >= S && t < S + 90 * MIN ? 40 : 1
        return { ok: 2000 - bad, error: bad, shed: 0 }
      }
      const counts2 = (t: number) => {
        const bad = t >= S + 30 * MIN && t < S + 100 * MIN ? 40 : 1
        return { ok: 2000 - bad, error: bad, shed: 0 }
      }
      const source = new FunctionSource((t) => counts(t))
      const source2 = new FunctionSource((t) => counts2(t))
      const both = {
        countSeries: (sel: { service?: string }, r: { fromMs: number; toMs: number }, step: number) =>
          (sel.service === 'b' ? source2 : source).countSeries(sel, r, step),
        timeseries: source.timeseries.bind(source),
      }
      const slos = [
        slo({
          name: 'a-availability',
          kind: 'availability',
          selector: { service: 'a' },
          objective: 0.999,
          labels: { team: 'ml' },
        }),
        slo({ name: 'b-availability', kind: 'availability', selector: { service: 'b' }, objective: 0.999 }),
      ]
      let random = 0.5
      const engine1 = createSloEngine({
        source: both,
        db: tdb.db,
        webhooks: hooks,
        random: () => random,
        externalUrl: 'http://tg.example',
      })
      engine1.setFileSlos(slos)
      // The receiver is down for the first three hours: every notification stays in the outbox.
      for (let t = S - 10 * MIN; t <= S + 3 * HOUR; t += MIN) await engine1.evaluate(t)
      const pending = await engine1.outbox()
      expect(
        pending.map((r) =>
          r.idempotencyKey.split('/').slice(0, 2).concat(r.idempotencyKey.split('/')[3]!).join(' '),
        ),
      ).toEqual([
        'a-availability page-1h firing',
        'b-availability page-1h firing',
        'a-availability page-1h resolved',
        'b-availability page-1h resolved',
      ])
      expect(pending.every((r) => r.deliveredMs === null)).toBe(true)
      expect(pending[0]!.lastError).toBe('ECONNREFUSED')
      // Later rows wait behind the first, so order is kept.
      expect(pending.slice(1).every((r) => r.attempts === 0)).toBe(true)
      expect(pending[0]!.attempts).toBeGreaterThan(3) // retried with backoff while down
      await engine1.stop()

      // Restart: a new engine on a new connection to the same database; the receiver is back, and
      // fails its first request once.
      const rx = await receiver(port, (n) => (n === 1 ? 503 : 200))
      servers.push(rx.server)
      const engine2 = createSloEngine({
        source: both,
        db: tdb.reopen(),
        webhooks: hooks,
        random: () => random,
        externalUrl: 'http://tg.example',
      })
      engine2.setFileSlos(slos)
      const now = S + 4 * HOUR
      await engine2.deliver(now)
      expect(rx.got.length).toBe(1) // the 503 stops the queue until the retry is due
      random = 1
      await engine2.deliver(now + 30_000)
      await engine2.deliver(now + 60_000) // nothing left: no duplicates
      const keys = rx.got.map((g) => g.headers['idempotency-key'])
      expect(keys).toEqual([keys[0], ...pending.map((p) => p.idempotencyKey)])
      const delivered = rx.got.slice(1)
      expect(new Set(delivered.map((g) => g.headers['idempotency-key'])).size).toBe(4)
      for (const g of rx.got) {
        const t = Number(/t=(\d+)/.exec(String(g.headers['x-tailguard-signature']))![1])
        expect(verifySignature(SECRET, String(g.headers['x-tailguard-signature']), g.body, t)).toBe(true)
        expect(Math.abs(t - now / 1000)).toBeLessThanOrEqual(60)
        expect(g.headers['content-type']).toBe('application/json')
      }
      const first = JSON.parse(delivered[0]!.body)
      expect(first).toMatchObject({
        version: '4',
        status: 'firing',
        receiver: 'ops',
        truncatedAlerts: 0,
        groupLabels: { alertname: 'SLOBurnRate', slo: 'a-availability' },
        externalURL: 'http://tg.example',
      })
      expect(first.alerts[0]).toMatchObject({
        status: 'firing',
        labels: {
          alertname: 'SLOBurnRate',
          slo: 'a-availability',
          tier: 'page-1h',
          severity: 'page',
          service: 'a',
          team: 'ml',
        },
        endsAt: '0001-01-01T00:00:00Z',
      })
      expect(first.alerts[0].fingerprint).toMatch(/^[0-9a-f]{16}$/)
      const resolved = JSON.parse(delivered[2]!.body)
      expect(resolved.status).toBe('resolved')
      expect(Date.parse(resolved.alerts[0].endsAt)).toBeGreaterThan(Date.parse(resolved.alerts[0].startsAt))
      const rows = await engine2.outbox()
      expect(rows.every((r) => r.deliveredMs !== null)).toBe(true)
      expect(rows[0]!.attempts).toBe(pending[0]!.attempts + 2)
      await engine2.stop()
    })

    it('gives up a notification older than maxAgeMs and records the failure, then moves on', async () => {
      tdb = await openDb(dialect)
      const port = await freePort()
      const engine = createSloEngine({
        source: new FunctionSource(() => undefined),
        db: tdb.db,
        webhooks: [{ name: 'slack', url: `http://127.0.0.1:${port}/`, format: 'slack', maxAgeMs: 10 * MIN }],
      })
      const persistence = await import('../../../collector/slo/persistence.js')
      const p = persistence.createSloPersistence(tdb.db)
      await p.enqueue([{ receiver: 'slack', idempotencyKey: 'k1', body: '{"text":"one"}' }], S)
      await p.enqueue([{ receiver: 'slack', idempotencyKey: 'k1', body: '{"text":"one again"}' }], S)
      await engine.deliver(S)
      const rx = await receiver(port, () => 200)
      servers.push(rx.server)
      await p.enqueue([{ receiver: 'slack', idempotencyKey: 'k2', body: '{"text":"two"}' }], S + 11 * MIN)
      await engine.deliver(S + 11 * MIN)
      const rows = await engine.outbox()
      expect(rows.map((r) => [r.idempotencyKey, r.failedMs !== null, r.deliveredMs !== null])).toEqual([
        ['k1', true, false],
        ['k2', false, true],
      ])
      expect(rows[0]!.lastError).toBe('ECONNREFUSED')
      expect(rx.got.map((g) => g.body)).toEqual(['{"text":"two"}'])
      expect(rx.got[0]!.headers['x-tailguard-signature']).toBeUndefined()
    })
  })
}

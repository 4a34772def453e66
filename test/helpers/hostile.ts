import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { buildCollector } from '../../collector/app.js'
import { createStore, encodeHistogram, newHistogram } from '../../collector/index.js'
import type { IntervalReport, Store } from '../../collector/index.js'
import { storeDatabase } from '../../collector/store/index.js'
import { createSloEngine } from '../../collector/slo/engine.js'
import type { SloEngine } from '../../collector/slo/engine.js'
import type { SloTables } from '../../collector/slo/tables.js'
import { createSloRoutes } from '../../collector/routes/slos.js'
import { createTestDatabase } from './dialects.js'
import type { TestDialect } from './dialects.js'

export const READ = 'read-token-0123456789abcdef'
export const ADMIN = 'admin-token-0123456789abcdef'
export const AGENT = 'agent-token-0123456789abcdef'
/** The fixed clock of hostile-input tests. */
export const HOSTILE_NOW = Date.parse('2026-11-21T12:00:00Z')

/** A collector app on a real store (SQLite file or PostgreSQL schema) with the SLO routes, for inject(). */
export interface HostileCollector {
  readonly app: FastifyInstance
  readonly store: Store
  readonly engine: SloEngine
  close(): Promise<void>
}

/**
 * Builds the whole collector app (reports, queries, SLOs, silences) on a private database of `dialect`.
 *
 * @example const c = await hostileCollector('sqlite'); await c.app.inject({ url: '/healthz' }); await c.close()
 */
export async function hostileCollector(
  dialect: TestDialect | 'sqlite-file',
  opts: { reportBodyLimitBytes?: number; bodyLimitBytes?: number; maxSeriesPerSlo?: number } = {},
): Promise<HostileCollector> {
  let url: string
  let drop: () => Promise<void>
  if (dialect === 'sqlite-file') {
    const dir = mkdtempSync(join(tmpdir(), 'tg-hostile-'))
    url = `sqlite:${join(dir, 'tg.db')}`
    drop = async () => rmSync(dir, { recursive: true, force: true })
  } else {
    const tdb = await createTestDatabase(dialect)
    url = tdb.url
    drop = () => tdb.drop()
  }
  const store = await createStore({ url })
  const migrated = await store.migrate()
  if (migrated.kind === 'failed') throw new Error(migrated.error)
  const engine = createSloEngine({
    source: store,
    db: storeDatabase(store) as unknown as Kysely<SloTables>,
    clock: () => HOSTILE_NOW,
    ...(opts.maxSeriesPerSlo !== undefined ? { maxSeriesPerSlo: opts.maxSeriesPerSlo } : {}),
  })
  const app = await buildCollector(
    {
      tokens: [
        { token: READ, scope: 'read' },
        { token: ADMIN, scope: 'admin' },
        { token: AGENT, scope: 'agent' },
      ],
      reportBodyLimitBytes: opts.reportBodyLimitBytes ?? 1 << 20,
      bodyLimitBytes: opts.bodyLimitBytes ?? 64 * 1024,
    },
    { store, clock: () => HOSTILE_NOW, plugins: [createSloRoutes(engine)] },
  )
  return {
    app,
    store,
    engine,
    async close() {
      await engine.stop()
      await app.close()
      await store.close()
      await drop()
    },
  }
}

/** A valid report of one series with `ok` requests (20 latencies) for service `service`. */
export function hostileReport(seq: number, instance = 'hostile', service = 'svc', ok = 20): IntervalReport {
  const h = newHistogram()
  for (let i = 1; i <= 20; i++) h.recordValue(i * 250)
  return {
    version: 1,
    agent: { id: 'hostile', instance, node: 'n' },
    seq,
    intervalStartMs: HOSTILE_NOW - 60_000,
    intervalEndMs: HOSTILE_NOW - 55_000,
    series: [
      {
        labels: { service, model: 'm', version: '1', replica: 'r', node: 'n' },
        histograms: { total: encodeHistogram(h), queue: encodeHistogram(h) },
        requests: { ok, error: 0, shed: 0 },
      },
    ],
  }
}

/**
 * One mutation of a valid JSON text (a flipped, dropped or duplicated slice, a value of another type, an
 * unknown phase, a corrupt histogram, random bytes), drawn with `rand` so a failure reproduces.
 *
 * @example mutateJsonText(JSON.stringify(report), seededRandom(1))
 */
export function mutateJsonText(text: string, rand: () => number): string {
  const pick = Math.floor(rand() * 8)
  const pos = Math.floor(rand() * text.length)
  switch (pick) {
    case 0: // flip a character
      return text.slice(0, pos) + String.fromCharCode(32 + Math.floor(rand() * 95)) + text.slice(pos + 1)
    case 1: // truncate
      return text.slice(0, pos)
    case 2: // duplicate a slice
      return text.slice(0, pos) + text.slice(Math.floor(rand() * text.length)) + text.slice(pos)
    case 3: {
      // replace a value with another JSON type
      const values = [
        'null',
        'true',
        '-1',
        '1e309',
        '"x"',
        '[]',
        '{}',
        '9007199254740993',
        '"\\u0000"',
        '-0.5',
      ]
      return text.replace(/:("[^"]*"|-?\d+(\.\d+)?|\{\}|\[\])/g, (m) =>
        rand() < 0.15 ? ':' + values[Math.floor(rand() * values.length)] : m,
      )
    }
    case 4: // delete a character
      return text.slice(0, pos) + text.slice(pos + 1)
    case 5: // unknown phase key
      return text.replace(
        '"queue"',
        `"${['warp', '__proto__', 'constructor', 'total', ''][Math.floor(rand() * 5)]}"`,
      )
    case 6: // corrupt a histogram's base64
      return text.replace(
        /HISTFAAA[A-Za-z0-9+/=]*/,
        (h) => h.slice(0, Math.floor(rand() * h.length)) + 'A'.repeat(Math.floor(rand() * 8)),
      )
    default: // random bytes
      return Array.from({ length: Math.floor(rand() * 64) }, () =>
        String.fromCharCode(Math.floor(rand() * 256)),
      ).join('')
  }
}

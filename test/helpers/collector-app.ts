import { afterEach, beforeEach } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../collector/app.js'
import type { IntervalReport, Store } from '../../collector/index.js'
import { useTestStore } from './test-store.js'
import type { TestDialect } from './dialects.js'

/** The tokens of {@link useTestCollector}'s app: one read-scope API token and one agent token. */
export const TEST_TOKENS = {
  read: 'read-token-0123456789abcdef',
  agent: 'agent-token-0123456789abcdef',
} as const

/**
 * The collector app (not listening; use `inject`) on a fresh store of `dialect` for each test of the enclosing
 * `describe`, with the clock at `nowMs` (or read from it, when a function) and the {@link TEST_TOKENS}. `post` sends a report as an agent and
 * fails the test unless it is stored.
 *
 * @example
 * ```ts
 * for (const dialect of testDialects())
 *   describe(`${dialect}: …`, () => {
 *     const c = useTestCollector(dialect, NOW)
 *     it('…', async () => { await c.post(report); await c.app.inject({ url: '/api/v1/…' }) })
 *   })
 * ```
 */
export function useTestCollector(
  dialect: TestDialect,
  nowMs: number | (() => number),
): { readonly app: FastifyInstance; readonly store: Store; post(report: IntervalReport): Promise<void> } {
  const db = useTestStore(dialect)
  let app: FastifyInstance | undefined
  beforeEach(async () => {
    app = await buildCollector(
      {
        tokens: [
          { token: TEST_TOKENS.read, scope: 'read' },
          { token: TEST_TOKENS.agent, scope: 'agent' },
        ],
        reportBodyLimitBytes: 1 << 20,
        bodyLimitBytes: 64 * 1024,
      },
      { store: db.store, clock: typeof nowMs === 'number' ? () => nowMs : nowMs },
    )
  })
  afterEach(async () => {
    await app?.close()
  })
  return {
    get app() {
      return app!
    },
    get store() {
      return db.store
    },
    async post(report) {
      const res = await app!.inject({
        method: 'POST',
        url: '/api/v1/reports',
        headers: { authorization: `Bearer ${TEST_TOKENS.agent}` },
        payload: report,
      })
      if (res.statusCode !== 200) throw new Error(`report refused (${res.statusCode}): ${res.body}`)
    },
  }
}

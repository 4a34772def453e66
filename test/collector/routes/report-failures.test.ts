// 503 only when the database is unavailable; a report the database refuses while it answers gets a final 422,
// so an agent dead-letters it instead of retrying it for ever (the poison pill of issue #11).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../../collector/app.js'
import { createStore } from '../../../collector/index.js'
import type { Store } from '../../../collector/index.js'
import { isStoreUnavailable } from '../../../collector/store/failure.js'
import { AGENT, hostileReport } from '../../helpers/hostile.js'

describe('isStoreUnavailable', () => {
  it.each([
    [{ code: 'ECONNREFUSED' }, true],
    [{ code: '57P01', message: 'terminating connection due to administrator command' }, true],
    [{ code: '08006' }, true],
    [{ code: '40001' }, true],
    [{ code: '53100', message: 'could not extend file' }, true],
    [{ code: 'SQLITE_BUSY' }, true],
    [{ code: 'SQLITE_IOERR_WRITE' }, true],
    [{ code: 'SQLITE_FULL' }, true],
    [{ message: 'Connection terminated unexpectedly' }, true],
    [{ code: '22P02', message: 'invalid input syntax for type bigint: "Infinity"' }, false],
    [{ code: '22021', message: 'invalid byte sequence for encoding "UTF8"' }, false],
    [{ code: '23505' }, false],
    [{ code: 'SQLITE_CONSTRAINT_NOTNULL' }, false],
    [new TypeError("Cannot read properties of undefined (reading 'id')"), false],
  ])('%j → %s', (err, expected) => {
    expect(
      isStoreUnavailable(Object.assign(new Error(String((err as { message?: string }).message ?? '')), err)),
    ).toBe(expected)
  })
})

describe('POST /api/v1/reports when storing fails', () => {
  let real: Store
  let app: FastifyInstance
  let failure: Error | null = null
  let pingOk = true
  beforeAll(async () => {
    real = await createStore({ url: ':memory:' })
    await real.migrate()
    // The real store, with ingest and ping made to fail on demand.
    const store = Object.create(real) as Store
    Object.defineProperty(store, 'finestStepMs', { value: real.finestStepMs })
    store.ingestPrepared = async (prepared) => {
      if (failure) throw failure
      return real.ingestPrepared(prepared)
    }
    store.ping = async () => pingOk
    app = await buildCollector(
      { tokens: [{ token: AGENT, scope: 'agent' }], reportBodyLimitBytes: 1 << 20, bodyLimitBytes: 1 << 20 },
      { store, clock: () => Date.parse('2026-11-21T12:00:00Z') },
    )
  })
  afterAll(async () => {
    await app.close()
    await real.close()
  })
  const post = (seq: number) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/reports',
      headers: { authorization: `Bearer ${AGENT}` },
      payload: hostileReport(seq),
    })

  it('answers 422 when the database refuses the data while it answers', async () => {
    failure = Object.assign(new Error('value out of range'), { code: '22003' })
    pingOk = true
    const res = await post(1)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toMatchObject({
      code: 'TG_ERR_REPORT_UNPROCESSABLE',
      message: expect.stringMatching(/not be accepted on retry/),
    })
  })

  it('answers 503 when the database is unavailable, or does not answer a ping', async () => {
    failure = Object.assign(new Error('terminating connection'), { code: '57P01' })
    expect((await post(2)).statusCode).toBe(503)
    failure = new TypeError('something odd')
    pingOk = false
    expect((await post(3)).json()).toMatchObject({ code: 'TG_ERR_STORE_UNAVAILABLE', statusCode: 503 })
    failure = null
    pingOk = true
    expect((await post(4)).statusCode).toBe(200)
  })
})

// Slow clients on real sockets: a body or headers sent one byte per second are timed out with a JSON 408 on
// every listening port (collector API, agent OTLP/HTTP), and oversized headers get a JSON 431.
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../collector/app.js'
import { createStore } from '../../collector/index.js'
import type { Store } from '../../collector/index.js'
import { startAgent } from '../../agent/index.js'
import type { RunningAgent } from '../../agent/index.js'

const TIMEOUTS = { requestTimeoutMs: 1500, headersTimeoutMs: 1000, idleTimeoutMs: 10_000 }

/**
 * Opens a socket, writes `head` at once, then one byte of `trickle` per second until the server answers or
 * closes. Resolves with what the server sent and when (ms after connecting).
 */
function slowClient(port: number, head: string, trickle: string): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now()
    const socket = connect({ host: '127.0.0.1', port })
    let text = ''
    let i = 0
    let timer: NodeJS.Timeout | undefined
    socket.on('connect', () => {
      socket.write(head)
      timer = setInterval(() => {
        if (i < trickle.length && !socket.destroyed) socket.write(trickle[i++]!)
      }, 1000)
    })
    socket.on('data', (d) => (text += d.toString()))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearInterval(timer)
      resolve({ text, ms: Date.now() - t0 })
    })
    setTimeout(() => {
      clearInterval(timer)
      socket.destroy()
      reject(new Error(`no answer after 20 s (got ${JSON.stringify(text)})`))
    }, 20_000)
  })
}

const jsonBody = (text: string) =>
  JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>

const AGENT_TOKEN = 'agent-token-slow-0123456789abcdef'

async function expectSlowClientsTimedOut(port: number, path: string) {
  const body = slowClient(
    port,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${AGENT_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n`,
    '{"resourceSpans":[]}'.padEnd(64, ' '),
  )
  const headers = slowClient(port, `GET ${path} HTTP/1.1\r\n`, 'X-Slow: ' + 'a'.repeat(60))
  const [b, h] = await Promise.all([body, headers])
  for (const r of [b, h]) {
    expect(r.text).toMatch(/^HTTP\/1\.1 408 /)
    expect(jsonBody(r.text)).toMatchObject({ code: 'TG_ERR_REQUEST_TIMEOUT', statusCode: 408 })
  }
  // Within the timeout plus Node's check interval (a quarter of the timeout) and a margin for a busy machine.
  expect(b.ms).toBeLessThan(TIMEOUTS.requestTimeoutMs * 1.25 + 2000)
  expect(h.ms).toBeLessThan(TIMEOUTS.headersTimeoutMs * 1.25 + 2000)
}

async function expectHeaderOverflowAnswered(port: number) {
  const r = await slowClient(
    port,
    `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    '',
  )
  expect(r.text).toMatch(/^HTTP\/1\.1 431 /)
  expect(jsonBody(r.text)).toMatchObject({ code: 'TG_ERR_HEADERS_TOO_LARGE', statusCode: 431 })
}

describe('collector listener: slow clients and huge headers', () => {
  let app: FastifyInstance
  let store: Store
  let port: number
  beforeAll(async () => {
    store = await createStore({ url: ':memory:' })
    await store.migrate()
    app = await buildCollector(
      {
        tokens: [{ token: AGENT_TOKEN, scope: 'agent' }],
        reportBodyLimitBytes: 1 << 20,
        bodyLimitBytes: 1 << 20,
        timeouts: TIMEOUTS,
      },
      { store },
    )
    await app.listen({ host: '127.0.0.1', port: 0 })
    port = (app.server.address() as { port: number }).port
  })
  afterAll(async () => {
    await app.close()
    await store.close()
  })

  it('answers 408 in JSON to a body or headers sent one byte per second', async () => {
    await expectSlowClientsTimedOut(port, '/api/v1/reports')
  }, 30_000)

  it('answers 431 in JSON to headers over 16 KiB', async () => {
    await expectHeaderOverflowAnswered(port)
  })
})

describe('agent OTLP/HTTP listener: slow clients and huge headers', () => {
  let agent: RunningAgent
  beforeAll(async () => {
    agent = await startAgent({
      id: 'slow',
      node: 'n',
      collectorUrl: 'http://127.0.0.1:9',
      token: 't',
      intervalMs: 60_000,
      spoolDir: null,
      spoolMaxBytes: 1 << 20,
      http: { host: '127.0.0.1', port: 0, token: null, timeouts: TIMEOUTS },
    })
  })
  afterAll(async () => agent.stop())

  it('answers 408 in JSON to a body or headers sent one byte per second', async () => {
    await expectSlowClientsTimedOut(agent.address!.port, '/v1/traces')
  }, 30_000)

  it('answers 431 in JSON to headers over 16 KiB', async () => {
    await expectHeaderOverflowAnswered(agent.address!.port)
  })
})

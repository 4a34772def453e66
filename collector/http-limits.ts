import type { Socket } from 'node:net'
import type { FastifyServerOptions } from 'fastify'

/**
 * Timeouts of one listening port (collector API, agent OTLP/HTTP). A client that sends its headers or its
 * body slowly (one byte per second) holds a socket and a parser for at most these times.
 *
 * @example
 * ```ts
 * const app = Fastify({ ...serverTimeoutOptions({ requestTimeoutMs: 60_000, headersTimeoutMs: 10_000, idleTimeoutMs: 60_000 }) })
 * ```
 */
export interface ServerTimeouts {
  /** Whole request, headers and body, from the first byte: past it the server answers 408 and closes. */
  readonly requestTimeoutMs: number
  /** Headers alone: past it the server answers 408 and closes. At most `requestTimeoutMs`. */
  readonly headersTimeoutMs: number
  /** A socket with no bytes in either direction for this long is closed (fastify's `connectionTimeout`). */
  readonly idleTimeoutMs: number
}

/** Defaults for every listening port (docs/limits.md). @example serverTimeoutOptions(DEFAULT_SERVER_TIMEOUTS) */
export const DEFAULT_SERVER_TIMEOUTS: ServerTimeouts = {
  requestTimeoutMs: 60_000,
  headersTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
}

function clientErrorBody(err: NodeJS.ErrnoException): { status: number; code: string; message: string } {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return {
      status: 408,
      code: 'TG_ERR_REQUEST_TIMEOUT',
      message: 'the request (headers and body) did not arrive within the server’s request timeout',
    }
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return {
      status: 431,
      code: 'TG_ERR_HEADERS_TOO_LARGE',
      message: 'the request line and headers are larger than the server accepts (16 KiB)',
    }
  return { status: 400, code: 'TG_ERR_BAD_REQUEST', message: 'malformed HTTP request' }
}

/**
 * Answers a request the HTTP parser refused (slow headers or body, headers too large, malformed HTTP) with
 * tailguard's JSON error shape `{ code, message, statusCode }`, then closes the socket.
 *
 * @example Fastify({ clientErrorHandler: answerClientError })
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const { status, code, message } = clientErrorBody(err)
  const body = JSON.stringify({ code, statusCode: status, message })
  if (socket.writable) {
    const reason =
      status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
  }
  socket.destroy()
}

/**
 * The fastify options that apply {@link ServerTimeouts} to a listener, with JSON answers for 408 and 431.
 * Node checks the request and headers timeouts every `connectionsCheckingInterval`, set here to a quarter of
 * the shorter one (at least 100 ms), so a timeout fires within 25% of its value.
 *
 * @example
 * ```ts
 * const app = Fastify({ loggerInstance, ...serverTimeoutOptions(cfg.timeouts) })
 * ```
 */
export function serverTimeoutOptions(t: ServerTimeouts): Pick<
  FastifyServerOptions,
  'requestTimeout' | 'connectionTimeout' | 'clientErrorHandler'
> & {
  http: { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number }
} {
  const headers = Math.min(t.headersTimeoutMs, t.requestTimeoutMs)
  return {
    requestTimeout: t.requestTimeoutMs,
    connectionTimeout: t.idleTimeoutMs,
    clientErrorHandler: answerClientError,
    http: {
      headersTimeout: headers,
      requestTimeout: t.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(100, Math.floor(Math.min(headers, t.requestTimeoutMs) / 4)),
    },
  }
}

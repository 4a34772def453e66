import { createServer, ServerResponse } from 'node:http'
import type { IncomingMessage, Server } from 'node:http'
import type { Socket } from 'node:net'
import { CONFIG_DEFAULTS } from '../../collector/index.js'
import type { SeriesLabels, SeriesSignals } from '../../collector/index.js'
import type { SampleSink } from '../types.js'
import { createAdmission } from './admission.js'
import type { Admission, ClassSetpoint, Decision, Pending, Ticket } from './admission.js'
import type { Gradient2Options } from './gradient2.js'
import { BAD_RESPONSE, BODY_TIMEOUT, CONNECT_TIMEOUT, HEADERS_TIMEOUT } from './h1-client.js'
import type { UpstreamControl, UpstreamError, UpstreamHandler } from './h1-client.js'
import { createSetpointsState } from './setpoints.js'
import type { SetpointsState } from './setpoints.js'
import { requestId, traceparentFor } from './trace.js'
import { createUpstreamSet } from './upstreams.js'
import type { Upstream, UpstreamSet } from './upstreams.js'

/** Header naming a request's priority class (0 = most important). */
export const PRIORITY_HEADER = 'x-tailguard-priority'
/** Header giving the ms the client still allows for the request. */
export const DEADLINE_HEADER = 'x-tailguard-deadline-ms'
/** Header carrying the request id to the upstream and back to the client. */
export const REQUEST_ID_HEADER = 'x-request-id'

/** A path prefix that sets labels for the requests under it (first match wins). */
export interface ProxyRoute {
  readonly pathPrefix: string
  readonly service?: string
  readonly model?: string
}

/**
 * Everything {@link createProxy} needs; `runAgent` builds it from `agent.proxy` in the config.
 *
 * @example
 * ```ts
 * const opts: ProxyOptions = { ...PROXY_DEFAULTS, port: 8080, upstreams: ['http://127.0.0.1:8000'], labels: { service: 'chat', model: '', version: '', replica: 'r0', node: 'n1' } }
 * ```
 */
export interface ProxyOptions {
  readonly host: string
  readonly port: number
  readonly upstreams: readonly string[]
  /** Labels of every request; `model` is replaced by the request body's JSON `model` field when present. */
  readonly labels: SeriesLabels
  readonly routes: readonly ProxyRoute[]
  /** Read the OpenAI-style `model` field from JSON request bodies (the first `sniffBytes` only). */
  readonly modelFromBody: boolean
  readonly sniffBytes: number
  readonly defaultClass: number
  readonly classes: readonly ClassSetpoint[]
  /** A local Gradient2 limit on all classes until a controller sets setpoints; null for none. */
  readonly gradient2: Gradient2Options | null
  /** Status of shed requests: 429 (default) or 503. */
  readonly shedStatus: 429 | 503
  readonly maxHeaderBytes: number
  readonly maxBodyBytes: number
  /** Time for a client to send the request headers (slow clients get 408). */
  readonly headersTimeoutMs: number
  /** Longest silence while a client sends the request body (408). */
  readonly bodyIdleTimeoutMs: number
  readonly keepAliveTimeoutMs: number
  readonly connectionsPerUpstream: number
  readonly connectTimeoutMs: number
  /** Time to the upstream's response headers (504 after). */
  readonly upstreamTimeoutMs: number
  /** Longest silence between upstream response chunks. */
  readonly upstreamIdleTimeoutMs: number
  readonly drainGraceMs: number
  /** Setpoints set by a controller are `stale` when not refreshed for this long. */
  readonly staleAfterMs: number
}

/**
 * Defaults of every proxy option but the listener, upstreams and labels: the config file's (CONFIG_DEFAULTS),
 * except that the local Gradient2 limit is off unless asked for.
 *
 * @example createProxy({ ...PROXY_DEFAULTS, host: '127.0.0.1', port: 8080, upstreams: [url], labels }, { sink })
 */
const P = CONFIG_DEFAULTS.agent.proxy
export const PROXY_DEFAULTS: Omit<ProxyOptions, 'host' | 'port' | 'upstreams' | 'labels'> = {
  routes: P.routes,
  modelFromBody: P.modelFromBody,
  sniffBytes: 16 * 1024,
  defaultClass: P.defaultClass,
  classes: P.classes,
  gradient2: null,
  shedStatus: P.shedStatus,
  maxHeaderBytes: P.maxHeaderBytes,
  maxBodyBytes: P.maxBodyBytes,
  headersTimeoutMs: P.headersTimeoutMs,
  bodyIdleTimeoutMs: P.bodyIdleTimeoutMs,
  keepAliveTimeoutMs: P.keepAliveTimeoutMs,
  connectionsPerUpstream: P.connectionsPerUpstream,
  connectTimeoutMs: P.connectTimeoutMs,
  upstreamTimeoutMs: P.upstreamTimeoutMs,
  upstreamIdleTimeoutMs: P.upstreamIdleTimeoutMs,
  drainGraceMs: P.drainGraceMs,
  staleAfterMs: P.staleAfterMs,
}

/** Cumulative counts since the proxy started (for /metrics and tests). */
export interface ProxyCounts {
  requests: number
  ok: number
  /** Upstream failures by status sent: 502 (unreachable, garbage, closed) and 504 (timeouts). */
  upstream502: number
  upstream504: number
  /** Upstream failures after the response had started (the client connection is cut). */
  upstreamMidStream: number
  clientClosed: number
  shed: number
  badRequests: number
  /** Malformed HTTP, oversized headers, header timeouts: answered by the parser's error path. */
  malformed: number
  tooLarge: number
  bodyTimeouts: number
}

export interface ProxyDeps {
  readonly sink: SampleSink
  readonly clock?: () => number
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string) => void
}

/**
 * A running proxy: a reverse proxy that measures each request and enforces admission setpoints.
 *
 * @example
 * ```ts
 * const proxy = createProxy(opts, { sink: agent.recorder })
 * const { port } = await proxy.listen()
 * proxy.setpoints.put({ admission: [...], fencingToken: 7, source: 'controller' })
 * await proxy.close()
 * ```
 */
export interface Proxy {
  listen(): Promise<{ host: string; port: number }>
  close(): Promise<void>
  readonly server: Server
  readonly admission: Admission
  readonly upstreams: UpstreamSet
  readonly setpoints: SetpointsState
  readonly counts: Readonly<ProxyCounts>
  /** Open client connections. */
  readonly connections: number
  /** The interval's live signals (contract 1), on the proxy's own series; a new interval starts. */
  takeSignals(): { labels: SeriesLabels; signals: SeriesSignals }
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'expect',
  'traceparent',
  REQUEST_ID_HEADER,
])

const MODEL_FIELD = /"model"\s*:\s*"((?:[^"\\]|\\.){1,256})"/
const COMPLETION_TOKENS = /"completion_tokens"\s*:\s*(\d{1,9})/
const DATA = Buffer.from('data:')
const DONE = Buffer.from('[DONE]')

function json(res: ServerResponse, status: number, body: object, extra?: Record<string, string>): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...extra,
  })
  res.end(text)
}

function errorBody(code: string, statusCode: number, message: string, more?: object) {
  return { code, statusCode, message, ...more }
}

/** The proxy's responses carry their exchange, so that one shared `close` listener serves every request. */
class ProxyResponse extends ServerResponse<IncomingMessage> {
  exchange: Exchange | null = null
}

/**
 * Adds the header names a `Connection` header value lists (lowercase) to `into`; the plain `keep-alive` and
 * `close` (nearly every request and response) allocate nothing.
 *
 * @example connectionNames('keep-alive, X-Internal-Auth', null) // ['keep-alive', 'x-internal-auth']
 */
function connectionNames(value: string, into: string[] | null): string[] | null {
  const v = value.toLowerCase()
  if (v === 'keep-alive' || v === 'close') return into
  const names = into ?? []
  for (const t of v.split(',')) names.push(t.trim())
  return names
}

/** A client connection closed before its response was complete: abort the upstream request. */
function onResponseClose(this: ProxyResponse): void {
  const ex = this.exchange
  if (ex === null) return
  this.exchange = null
  if (!ex.done && !this.writableFinished) {
    ex.proxy.counts.clientClosed++
    ex.abort(new Error('client_closed'))
  }
}

function destroyResponse(res: ServerResponse): void {
  res.destroy()
}

/** The client took the buffered response bytes: resume the upstream response (backpressure). */
function onResponseDrain(this: ProxyResponse): void {
  this.exchange?.controller?.resume()
}

/** Forwards one request to an upstream and streams the answer back; one instance per request. */
class Exchange implements UpstreamHandler {
  controller: UpstreamControl | null = null
  upstream: Upstream | null = null
  ticket: Ticket | null = null
  pending: Pending | null = null
  done = false
  abortReason: Error | null = null
  tDispatch = 0
  tConnected = -1
  tFirstByte = -1
  tFirstEvent = -1
  tLastEvent = -1
  queuedMs = 0
  events = 0
  usageTokens = -1
  /** The body's last piece, written by `onResponseEnd` with the end of the response. */
  tail: Buffer | null = null
  sse = false
  status = 0
  model: string | null = null
  sniffed = 0
  sniffText = ''
  bodyBytes = 0
  /** The response has a `drain` listener (added at the first backpressure, kept until the end). */
  drainListener = false

  constructor(
    readonly proxy: ProxyImpl,
    readonly req: IncomingMessage,
    readonly res: ProxyResponse,
    readonly t0: number,
    readonly rid: string,
    readonly traceparent: string,
    readonly labels: SeriesLabels,
  ) {}

  onRequestStart(controller: UpstreamControl): void {
    this.controller = controller
    if (this.abortReason) controller.abort(this.abortReason)
    else if (this.tConnected < 0) this.tConnected = this.proxy.now()
  }

  onResponseStart(controller: UpstreamControl, statusCode: number, headers: string[]): void {
    if (this.done) return
    this.status = statusCode
    // The upstream's flat [name, value, …] list (lowercase names) goes to Node as a flat list too, with no
    // header object built and walked again; hop-by-hop headers and those `connection` names are left out.
    const out: string[] = []
    let named: string[] | null = null
    for (let i = 0; i < headers.length; i += 2) {
      if (headers[i] === 'connection') named = connectionNames(headers[i + 1]!, named)
    }
    for (let i = 0; i < headers.length; i += 2) {
      const k = headers[i]!
      if (HOP_BY_HOP.has(k) || (named !== null && named.includes(k))) continue
      const v = headers[i + 1]!
      if (k === 'content-type') this.sse = v.startsWith('text/event-stream')
      out.push(k, v)
    }
    out.push(REQUEST_ID_HEADER, this.rid)
    try {
      this.res.writeHead(statusCode, out)
    } catch (err) {
      controller.abort(err as Error)
      return
    }
    // Event streams: send the headers now, so the client sees the stream open before the first event.
    if (this.sse) this.res.flushHeaders()
  }

  onResponseData(controller: UpstreamControl, chunk: Buffer, last: boolean): void {
    if (this.done) return
    const now = this.proxy.now()
    if (this.tFirstByte < 0) this.tFirstByte = now
    if (this.sse) this.#scanEvents(chunk, now)
    if (this.usageTokens < 0) {
      const i = chunk.indexOf('"completion_tokens"')
      if (i >= 0) {
        const m = COMPLETION_TOKENS.exec(chunk.toString('latin1', i, i + 40))
        if (m) this.usageTokens = Number(m[1])
      }
    }
    // The body's last piece goes out with the end of the response (one write to the client for a small body).
    if (last) {
      this.tail = chunk
      return
    }
    if (!this.res.write(chunk)) {
      controller.pause()
      if (!this.drainListener) {
        this.drainListener = true
        this.res.on('drain', onResponseDrain)
      }
    }
  }

  #scanEvents(chunk: Buffer, now: number): void {
    let i = chunk.indexOf(DATA)
    while (i >= 0) {
      // Only a `data:` at the start of a line opens an event; `[DONE]` is the OpenAI end marker, not a token.
      if (i === 0 || chunk[i - 1] === 0x0a || chunk[i - 1] === 0x0d) {
        let j = i + 5
        if (chunk[j] === 0x20) j++
        if (!(chunk.indexOf(DONE, j) === j)) {
          this.events++
          if (this.tFirstEvent < 0) this.tFirstEvent = now
          this.tLastEvent = now
        }
      }
      i = chunk.indexOf(DATA, i + 5)
    }
  }

  onResponseEnd(): void {
    if (this.done) return
    const tail = this.tail
    this.tail = null
    if (tail !== null) this.res.end(tail)
    else this.res.end()
    const status = this.status
    this.finish(status >= 500 ? 'error' : 'ok', status >= 500 ? `http_${status}` : undefined)
  }

  onResponseError(_controller: UpstreamControl | null, err: UpstreamError): void {
    if (this.done) return
    const p = this.proxy
    if (this.abortReason) {
      // The client went away (or sent too much, or stalled): already answered where it could be.
      this.finish('error', this.abortReason.message)
      return
    }
    const code = err.code ?? ''
    const timeout = code === HEADERS_TIMEOUT || code === BODY_TIMEOUT || code === CONNECT_TIMEOUT
    if (this.res.headersSent) {
      p.counts.upstreamMidStream++
      // What came before the failure goes out first (Node sends a response's writes at the end of the tick).
      setImmediate(destroyResponse, this.res)
      this.finish('error', timeout ? 'upstream_timeout' : 'upstream_closed')
      return
    }
    if (timeout) {
      p.counts.upstream504++
      json(
        this.res,
        504,
        errorBody(
          'TG_ERR_UPSTREAM_TIMEOUT',
          504,
          `upstream ${this.upstream?.url} did not answer in time (${code})`,
          {
            requestId: this.rid,
          },
        ),
        { [REQUEST_ID_HEADER]: this.rid },
      )
      this.finish('error', 'upstream_timeout')
    } else {
      p.counts.upstream502++
      json(
        this.res,
        502,
        errorBody(
          'TG_ERR_UPSTREAM_UNAVAILABLE',
          502,
          `upstream ${this.upstream?.url} failed: ${code || err.message}`,
          { requestId: this.rid },
        ),
        { [REQUEST_ID_HEADER]: this.rid },
      )
      this.finish('error', code === BAD_RESPONSE ? 'upstream_bad_response' : 'upstream_unavailable')
    }
  }

  /** Stops the exchange for a reason of the proxy's or the client's: the upstream request is aborted now. */
  abort(reason: Error): void {
    if (this.done || this.abortReason) return
    this.abortReason = reason
    this.pending?.cancel()
    if (this.controller) this.controller.abort(reason)
    else if (!this.upstream) this.finish('error', reason.message)
  }

  /** A request body as an async iterable: counts bytes against the limit and reads the JSON `model` field. */
  async *body(): AsyncGenerator<Buffer> {
    const p = this.proxy
    const req = this.req
    const sniff = p.opts.modelFromBody && (req.headers['content-type'] ?? '').includes('json')
    req.setTimeout(p.opts.bodyIdleTimeoutMs, () => {
      p.counts.bodyTimeouts++
      if (!this.res.headersSent)
        json(
          this.res,
          408,
          errorBody('TG_ERR_REQUEST_TIMEOUT', 408, `request body stalled for ${p.opts.bodyIdleTimeoutMs} ms`),
          { connection: 'close' },
        )
      this.abort(new Error('body_timeout'))
      req.destroy()
    })
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        this.bodyBytes += chunk.length
        if (this.bodyBytes > p.opts.maxBodyBytes) {
          p.counts.tooLarge++
          if (!this.res.headersSent)
            json(
              this.res,
              413,
              errorBody(
                'TG_ERR_PAYLOAD_TOO_LARGE',
                413,
                `request body is larger than the limit of ${p.opts.maxBodyBytes} bytes`,
              ),
              { connection: 'close' },
            )
          this.abort(new Error('body_too_large'))
          req.destroy()
          return
        }
        if (sniff && this.model === null && this.sniffed < p.opts.sniffBytes) {
          this.sniffText += chunk.toString(
            'utf8',
            0,
            Math.min(chunk.length, p.opts.sniffBytes - this.sniffed),
          )
          this.sniffed += chunk.length
          const m = MODEL_FIELD.exec(this.sniffText)
          if (m) {
            this.model = m[1]!
            this.sniffText = ''
          } else if (this.sniffed >= p.opts.sniffBytes) this.sniffText = ''
        }
        yield chunk
      }
    } finally {
      req.setTimeout(0)
    }
  }

  finish(status: 'ok' | 'error' | 'shed', errorClass?: string): void {
    if (this.done) return
    this.done = true
    const p = this.proxy
    const now = p.now()
    if (this.drainListener) this.res.off('drain', onResponseDrain)
    if (this.upstream) p.upstreams.release(this.upstream)
    if (this.ticket) this.ticket.release(status === 'ok' ? now - this.tDispatch : null)
    if (status === 'ok') p.counts.ok++
    p.record(this, status, errorClass, now)
  }
}

class ProxyImpl implements Proxy {
  readonly server: Server
  readonly admission: Admission
  readonly upstreams: UpstreamSet
  readonly setpoints: SetpointsState
  readonly counts: ProxyCounts = {
    requests: 0,
    ok: 0,
    upstream502: 0,
    upstream504: 0,
    upstreamMidStream: 0,
    clientClosed: 0,
    shed: 0,
    badRequests: 0,
    malformed: 0,
    tooLarge: 0,
    bodyTimeouts: 0,
  }
  readonly now: () => number
  #sockets = new Set<Socket>()
  readonly #sink: SampleSink
  readonly #labelsByRoute: ReadonlyArray<{ prefix: string; labels: SeriesLabels }>
  readonly #signalLabels: SeriesLabels

  constructor(
    readonly opts: ProxyOptions,
    deps: ProxyDeps,
  ) {
    this.now = deps.clock ?? (() => performance.now())
    this.#sink = deps.sink
    this.admission = createAdmission({ classes: opts.classes, gradient2: opts.gradient2, clock: this.now })
    this.setpoints = createSetpointsState({
      admission: this.admission,
      staleAfterMs: opts.staleAfterMs,
    })
    this.upstreams = createUpstreamSet(opts.upstreams, {
      connections: opts.connectionsPerUpstream,
      connectTimeoutMs: opts.connectTimeoutMs,
      headersTimeoutMs: opts.upstreamTimeoutMs,
      bodyTimeoutMs: opts.upstreamIdleTimeoutMs,
      drainGraceMs: opts.drainGraceMs,
      clock: this.now,
    })
    this.#labelsByRoute = opts.routes.map((r) => ({
      prefix: r.pathPrefix,
      labels: {
        ...opts.labels,
        ...(r.service !== undefined ? { service: r.service } : {}),
        ...(r.model !== undefined ? { model: r.model } : {}),
      },
    }))
    this.#signalLabels = { ...opts.labels }
    // Typed as a plain Server outside: ProxyResponse only adds the exchange field.
    const server = createServer<typeof IncomingMessage, typeof ProxyResponse>(
      {
        ServerResponse: ProxyResponse,
        maxHeaderSize: opts.maxHeaderBytes,
        headersTimeout: opts.headersTimeoutMs,
        requestTimeout: 0,
        keepAliveTimeout: opts.keepAliveTimeoutMs,
        connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(opts.headersTimeoutMs / 2))),
      },
      (req, res) => this.#handle(req, res),
    )
    this.server = server as unknown as Server
    this.server.on('connection', (s: Socket) => {
      this.#sockets.add(s)
      s.setNoDelay(true)
      s.once('close', () => this.#sockets.delete(s))
    })
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) =>
      this.#clientError(err, socket),
    )
    // A proxy of model servers tunnels nothing: CONNECT gets a clear refusal rather than a silent close.
    this.server.on('connect', (_req: IncomingMessage, socket: Socket) => {
      this.counts.malformed++
      this.#refuse(
        socket,
        405,
        'Method Not Allowed',
        'TG_ERR_BAD_REQUEST',
        'CONNECT is not proxied: send requests',
      )
    })
    this.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
      this.counts.malformed++
      json(
        res,
        417,
        errorBody(
          'TG_ERR_BAD_REQUEST',
          417,
          `expect: only 100-continue is understood, got ${JSON.stringify(String(req.headers.expect).slice(0, 40))}`,
        ),
      )
    })
  }

  get connections(): number {
    return this.#sockets.size
  }

  #clientError(err: NodeJS.ErrnoException, socket: Socket): void {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    this.counts.malformed++
    const [status, text, code, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [
            431,
            'Request Header Fields Too Large',
            'TG_ERR_HEADERS_TOO_LARGE',
            `request headers are larger than ${this.opts.maxHeaderBytes} bytes`,
          ]
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [
              408,
              'Request Timeout',
              'TG_ERR_REQUEST_TIMEOUT',
              `request headers not received within ${this.opts.headersTimeoutMs} ms`,
            ]
          : [
              400,
              'Bad Request',
              'TG_ERR_BAD_REQUEST',
              `malformed HTTP request (${err.code ?? 'parse error'})`,
            ]
    this.#refuse(socket, status, text, code, message)
  }

  /**
   * Answers a connection with an error and closes it. A response still going out on it (an event stream, or one
   * to a request pipelined before the bad one) goes first, whole: no bytes of ours land inside it.
   */
  #refuse(socket: Socket, status: number, text: string, code: string, message: string): void {
    const current = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
    if (current && !current.writableFinished) {
      current.once('close', () => {
        if (current.writableFinished && socket.writable)
          setImmediate(() => this.#refuse(socket, status, text, code, message))
        else socket.destroy()
      })
      return
    }
    if (!socket.writable) {
      socket.destroy()
      return
    }
    const body = JSON.stringify(errorBody(code, status, message))
    socket.end(
      `HTTP/1.1 ${status} ${text}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    )
    socket.destroySoon?.()
  }

  #labelsFor(url: string): SeriesLabels {
    for (const r of this.#labelsByRoute) if (url.startsWith(r.prefix)) return r.labels
    return this.opts.labels
  }

  #handle(req: IncomingMessage, res: ProxyResponse): void {
    const t0 = this.now()
    this.counts.requests++
    const h = req.headers
    const rid = requestId(h[REQUEST_ID_HEADER] as string | undefined)
    let cls = this.opts.defaultClass
    const ph = h[PRIORITY_HEADER]
    if (ph !== undefined) {
      const n = Number(ph)
      if (!(Number.isInteger(n) && n >= 0 && n <= 15) || ph === '') {
        this.#bad(
          res,
          rid,
          `${PRIORITY_HEADER}: expected an integer 0..15 (0 is the most important), got ${JSON.stringify(String(ph).slice(0, 40))}`,
        )
        return
      }
      cls = n
    }
    let deadline: number | undefined
    const dh = h[DEADLINE_HEADER]
    if (dh !== undefined) {
      const n = Number(dh)
      if (!Number.isFinite(n) || dh === '') {
        this.#bad(
          res,
          rid,
          `${DEADLINE_HEADER}: expected the ms the client still allows, got ${JSON.stringify(String(dh).slice(0, 40))}`,
        )
        return
      }
      deadline = n
    }
    const cl = h['content-length']
    if (cl !== undefined && Number(cl) > this.opts.maxBodyBytes) {
      this.counts.tooLarge++
      json(
        res,
        413,
        errorBody(
          'TG_ERR_PAYLOAD_TOO_LARGE',
          413,
          `content-length ${cl} is over the limit of ${this.opts.maxBodyBytes} bytes`,
        ),
        { connection: 'close', [REQUEST_ID_HEADER]: rid },
      )
      req.resume()
      return
    }
    const traceparent = traceparentFor(typeof h.traceparent === 'string' ? h.traceparent : undefined)
    const url = req.url ?? '/'
    const ex = new Exchange(this, req, res, t0, rid, traceparent, this.#labelsFor(url))
    res.exchange = ex
    res.on('close', onResponseClose)
    // A free slot is the common case: admitted here, without the callback and decision objects of a wait.
    const ticket = this.admission.tryAdmit(cls, deadline)
    if (ticket !== null) this.#forward(ex, ticket, 0)
    else ex.pending = this.admission.request(cls, deadline, (d) => this.#decided(ex, d))
  }

  #bad(res: ServerResponse, rid: string, message: string): void {
    this.counts.badRequests++
    json(res, 400, errorBody('TG_ERR_BAD_REQUEST', 400, message), { [REQUEST_ID_HEADER]: rid })
  }

  #decided(ex: Exchange, d: Decision): void {
    ex.pending = null
    ex.queuedMs = d.queuedMs
    if (d.kind === 'shed') {
      this.counts.shed++
      json(
        ex.res,
        this.opts.shedStatus,
        errorBody('TG_ERR_SHED', this.opts.shedStatus, `request shed by admission control: ${d.reason}`, {
          reason: d.reason,
          requestId: ex.rid,
        }),
        { 'retry-after': String(d.retryAfterS), [REQUEST_ID_HEADER]: ex.rid },
      )
      ex.req.resume()
      ex.finish('shed', d.reason)
      return
    }
    this.#forward(ex, d.ticket, d.queuedMs)
  }

  /** Sends an admitted request to an upstream. */
  #forward(ex: Exchange, ticket: Ticket, queuedMs: number): void {
    ex.queuedMs = queuedMs
    ex.ticket = ticket
    if (ex.abortReason) {
      ex.finish('error', ex.abortReason.message)
      return
    }
    const u = this.upstreams.pick()
    if (!u) {
      json(
        ex.res,
        503,
        errorBody('TG_ERR_NO_UPSTREAM', 503, 'no active upstream (all removed or draining)', {
          requestId: ex.rid,
        }),
        {
          'retry-after': '1',
          [REQUEST_ID_HEADER]: ex.rid,
        },
      )
      ex.req.resume()
      ex.finish('error', 'no_upstream')
      return
    }
    this.upstreams.take(u)
    ex.upstream = u
    const req = ex.req
    const raw = req.rawHeaders
    const headers: string[] = []
    let connectionTokens: string[] | null = null
    for (let i = 0; i < raw.length; i += 2) {
      const k = raw[i]!.toLowerCase()
      // Headers it names are hop-by-hop too (RFC 9110 §7.6.1), one token or a list, on one line or several.
      if (k === 'connection') connectionTokens = connectionNames(raw[i + 1]!, connectionTokens)
      if (HOP_BY_HOP.has(k)) continue
      headers.push(raw[i]!, raw[i + 1]!)
    }
    if (connectionTokens)
      for (let i = headers.length - 2; i >= 0; i -= 2)
        if (connectionTokens.includes(headers[i]!.toLowerCase())) headers.splice(i, 2)
    headers.push('traceparent', ex.traceparent, REQUEST_ID_HEADER, ex.rid)
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0')
    ex.tDispatch = this.now()
    // The control comes back at once, so a client that leaves while the request waits for a connection
    // takes it out of the pool's queue (and its admission slot is freed).
    const control = u.pool.dispatch(
      {
        path: u.basePath + (req.url ?? '/'),
        method: req.method ?? 'GET',
        headers,
        body: hasBody ? ex.body() : null,
      },
      ex,
    )
    if (!ex.done) ex.controller ??= control
  }

  /** Folds a finished exchange into the recorder. */
  record(ex: Exchange, status: 'ok' | 'error' | 'shed', errorClass: string | undefined, now: number): void {
    const labels = ex.model !== null ? { ...ex.labels, model: ex.model } : ex.labels
    const tokens = ex.usageTokens >= 0 ? ex.usageTokens : ex.sse ? ex.events : undefined
    const first = ex.sse ? ex.tFirstEvent : ex.tFirstByte
    // One shape for every request, whatever it did (absent values are undefined, which the recorder skips):
    // no spreads of temporary objects, and the recorder's property reads stay monomorphic.
    this.#sink.recordRequest({
      labels,
      status,
      errorClass,
      phasesUs: {
        queue: ex.queuedMs * 1000,
        network: ex.tConnected >= 0 ? (ex.tConnected - ex.tDispatch) * 1000 : undefined,
        total: (now - ex.t0) * 1000,
      },
      ttftUs: status === 'ok' && first >= 0 ? (first - ex.t0) * 1000 : undefined,
      tpotUs:
        status === 'ok' && ex.sse && tokens !== undefined && tokens > 1 && ex.tLastEvent > ex.tFirstEvent
          ? ((ex.tLastEvent - ex.tFirstEvent) * 1000) / (tokens - 1)
          : undefined,
      outputTokens: tokens,
    })
  }

  takeSignals(): { labels: SeriesLabels; signals: SeriesSignals } {
    const s = this.admission.takeSignals()
    return {
      labels: this.#signalLabels,
      signals: {
        gauges: { inFlight: s.inFlight, queued: s.queued, busy: this.upstreams.takeBusy() },
        byClass: s.byClass,
        sources: ['proxy'],
      },
    }
  }

  listen(): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(this.opts.port, this.opts.host, () => {
        this.server.off('error', reject)
        const a = this.server.address()
        resolve(
          a && typeof a === 'object' ? { host: a.address, port: a.port } : { host: this.opts.host, port: 0 },
        )
      })
    })
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve())
      this.server.closeIdleConnections()
      setTimeout(() => {
        for (const s of this.#sockets) s.destroy()
      }, 2000).unref()
    })
    await this.upstreams.close()
  }
}

/**
 * Makes the agent's inline proxy (not yet listening): HTTP/1.1 keep-alive in front, pooled keep-alive
 * connections behind (h1-client.ts), bodies and event streams forwarded as they arrive, each request
 * measured (queue, network, ttft, tpot, total, status, output tokens) and admitted per priority class.
 *
 * @example
 * ```ts
 * const proxy = createProxy({ ...PROXY_DEFAULTS, host: '127.0.0.1', port: 8080, upstreams: ['http://127.0.0.1:8000'], labels }, { sink: recorder })
 * await proxy.listen()
 * ```
 */
export function createProxy(opts: ProxyOptions, deps: ProxyDeps): Proxy {
  return new ProxyImpl(opts, deps)
}

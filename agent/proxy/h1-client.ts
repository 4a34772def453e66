import { isIP, connect as netConnect } from 'node:net'
import type { Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'

/**
 * The proxy's upstream HTTP/1.1 client: keep-alive connections to one origin, one request at a time on each.
 *
 * Written for the proxy's data path because undici, the client it replaced, took about half of the agent's CPU at
 * 2k req/s (docs/proxy.md#overhead); undici stays the reference in test/agent/proxy/h1-client.test.ts, which
 * sends the same upstream answers through both. Responses are parsed strictly (a status line, token header names,
 * no folded lines, one framing: `transfer-encoding: chunked`, a `content-length`, or until the connection
 * closes), and anything else fails the request with `TG_UPSTREAM_BAD_RESPONSE` instead of being guessed at.
 */

/** What the pool tells a request's handler, in this order: start, response start, data…, end; or error. */
export interface UpstreamHandler {
  /** The request is about to be written on a connected socket. */
  onRequestStart(ctl: UpstreamControl): void
  /** Response headers as a flat [lowercase name, value, …] list, duplicates kept in order. */
  onResponseStart(ctl: UpstreamControl, status: number, headers: string[]): void
  /**
   * A piece of the response body (chunked framing removed). `last`: the body ends with this piece (known for a
   * body with a length; `onResponseEnd` follows at once).
   */
  onResponseData(ctl: UpstreamControl, chunk: Buffer, last: boolean): void
  onResponseEnd(): void
  /** Called at most once, and never after `onResponseEnd`; `err.code` says why. */
  onResponseError(ctl: UpstreamControl | null, err: UpstreamError): void
}

/** Flow control of one request, given to its handler. */
export interface UpstreamControl {
  pause(): void
  resume(): void
  /** Stops the request now (its connection is closed); the handler's `onResponseError` gets `reason`. */
  abort(reason: Error): void
}

/** An upstream failure; `code` is one of the `TG_UPSTREAM_*` codes below or a socket error's (ECONNREFUSED, …). */
export interface UpstreamError extends Error {
  code?: string
}

export const CONNECT_TIMEOUT = 'TG_UPSTREAM_CONNECT_TIMEOUT'
export const HEADERS_TIMEOUT = 'TG_UPSTREAM_HEADERS_TIMEOUT'
export const BODY_TIMEOUT = 'TG_UPSTREAM_BODY_TIMEOUT'
export const BAD_RESPONSE = 'TG_UPSTREAM_BAD_RESPONSE'
export const CLOSED = 'TG_UPSTREAM_CLOSED'
export const POOL_CLOSED = 'TG_UPSTREAM_POOL_CLOSED'
export const BAD_REQUEST = 'TG_UPSTREAM_BAD_REQUEST'

function upstreamError(code: string, message: string): UpstreamError {
  const e = new Error(message) as UpstreamError
  e.code = code
  return e
}

/** One request for {@link H1Pool.dispatch}: headers as a flat [name, value, …] list without `host`. */
export interface UpstreamRequest {
  readonly method: string
  readonly path: string
  readonly headers: readonly string[]
  /** The body as it arrives; written with its `content-length` when the headers carry one, else chunked. */
  readonly body: AsyncIterable<Buffer> | null
}

export interface H1PoolOptions {
  /** Most connections open at once; further requests wait for a free one. */
  readonly connections: number
  readonly connectTimeoutMs: number
  /** From the request written to the response's headers complete. */
  readonly headersTimeoutMs: number
  /** Longest silence between response bytes. */
  readonly bodyTimeoutMs: number
  /** An idle connection is closed after this long (sooner when the upstream's `keep-alive: timeout` says so). */
  readonly idleTimeoutMs?: number
  /** Idle connections keep no process alive (`socket.unref()` while idle); for the agent's own requests. */
  readonly unrefIdle?: boolean
}

/** Longest response head taken from an upstream (status line and headers). */
const MAX_HEAD_BYTES = 64 * 1024
/** Longest chunk-size line (size, extensions) or trailer section in a chunked response. */
const MAX_CHUNK_LINE = 4096
const BAD_VALUE = /[\0\r\n]/
/** A response head may hold CRLF line ends only: no NUL, no CR or LF alone. */
const BAD_HEAD = /\0|\r(?!\n)|(?<!\r)\n/
/** 1 for the characters of an HTTP token (RFC 9110 §5.6.2), by char code below 128. */
const TOKEN_CHARS = new Uint8Array(128)
for (const ch of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
  TOKEN_CHARS[ch.charCodeAt(0)] = 1

/** True when `s` from `from` to `to` (exclusive) is a non-empty HTTP token (a header name). */
function isToken(s: string, from: number, to: number): boolean {
  if (to <= from) return false
  for (let j = from; j < to; j++) {
    const ch = s.charCodeAt(j)
    if (ch > 127 || TOKEN_CHARS[ch] === 0) return false
  }
  return true
}

/** The value of a string of 1 to 15 decimal digits, or -1 for anything else. */
function digits(s: string): number {
  if (s.length === 0 || s.length > 15) return -1
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const d = s.charCodeAt(i) - 48
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return n
}
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS'])
const CRLF = Buffer.from('\r\n')
const CHUNK_END = Buffer.from('0\r\n\r\n')

const enum Body {
  None,
  Fixed,
  Chunked,
  UntilClose,
}

const enum Chunk {
  Size,
  Data,
  DataEnd,
  Trailers,
}

/** Resolves when the socket takes more writes, or closes. */
function drained(s: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      s.off('drain', done)
      s.off('close', done)
      resolve()
    }
    s.on('drain', done)
    s.on('close', done)
  })
}

/** A request from dispatch to its end; its own controller. */
class Job implements UpstreamControl {
  conn: Conn | null = null
  done = false
  started = false
  paused = false
  /** Response bytes seen (0: a reused connection that closes now may be retried for a bodiless idempotent request). */
  responseBytes = 0
  retried = false
  /** The request body has been written to its end (a connection is reused only then). */
  bodySent = false

  constructor(
    readonly pool: H1Pool,
    readonly req: UpstreamRequest,
    readonly handler: UpstreamHandler,
  ) {}

  pause(): void {
    this.paused = true
    if (this.conn !== null && this.conn.job === this) this.conn.socket.pause()
  }

  resume(): void {
    this.paused = false
    if (this.conn !== null && this.conn.job === this) this.conn.socket.resume()
  }

  abort(reason: Error): void {
    if (this.done) return
    const c = this.conn
    if (c !== null && c.job === this) c.kill()
    else this.pool.unqueue(this)
    this.fail(reason as UpstreamError)
  }

  fail(err: UpstreamError): void {
    if (this.done) return
    this.done = true
    this.handler.onResponseError(this.started ? this : null, err)
  }
}

/** One keep-alive connection and the parser of the response on it. */
class Conn {
  readonly socket: Socket
  connected = false
  job: Job | null = null
  /** Requests this connection has carried (a reused one may be retried once when it turns out closed). */
  uses = 0
  dead = false
  idleUntil = 0
  /** The socket's current inactivity timeout (set only when it changes). */
  timeoutMs = 0
  // Response parser state.
  /** The start of a response head that has not ended yet. */
  head: Buffer | null = null
  /** The complete head's headers, from #parseHead to onResponseStart. */
  pendingHeaders: string[] | null = null
  keepAlive = true
  body = Body.None
  remaining = 0
  chunk = Chunk.Size
  line: Buffer | null = null
  headersDone = false
  readonly #onData = (d: Buffer) => this.#data(d)

  constructor(
    readonly pool: H1Pool,
    socket: Socket,
  ) {
    this.socket = socket
    this.idleUntil = pool.idleMs
    socket.setNoDelay(true)
    socket.on('data', this.#onData)
    socket.on('end', () => this.#ended())
    socket.on('error', (err: UpstreamError) => this.#failed(err))
    socket.on('close', () => this.#failed(upstreamError(CLOSED, 'upstream closed the connection')))
    socket.on('timeout', () => this.#timeout())
  }

  /** Writes `job` on this (connected, free) connection. */
  start(job: Job): void {
    this.job = job
    job.conn = this
    this.uses++
    if (this.pool.opts.unrefIdle) this.socket.ref()
    this.head = null
    this.headersDone = false
    this.keepAlive = true
    this.setTimeout(this.pool.opts.headersTimeoutMs)
    job.started = true
    job.handler.onRequestStart(job)
    if (job.done || this.job !== job) return
    if (job.paused) this.socket.pause()
    const r = job.req
    let head = `${r.method} ${r.path} HTTP/1.1\r\nhost: ${this.pool.host}\r\n`
    let framed = false
    const h = r.headers
    for (let i = 0; i < h.length; i += 2) {
      const k = h[i]!
      const v = h[i + 1]!
      if (BAD_VALUE.test(v) || !isToken(k, 0, k.length)) {
        job.abort(upstreamError(BAD_REQUEST, `request header ${JSON.stringify(k)} cannot be sent upstream`))
        return
      }
      if (k.length === 14 && k.toLowerCase() === 'content-length') framed = true
      head += `${k}: ${v}\r\n`
    }
    if (r.body === null) {
      job.bodySent = true
      this.socket.write(`${head}\r\n`, 'latin1')
      return
    }
    const chunked = !framed
    this.socket.write(chunked ? `${head}transfer-encoding: chunked\r\n\r\n` : `${head}\r\n`, 'latin1')
    void this.#pump(job, r.body, chunked)
  }

  async #pump(job: Job, body: AsyncIterable<Buffer>, chunked: boolean): Promise<void> {
    const s = this.socket
    try {
      for await (const chunk of body) {
        if (job.done || this.job !== job) return
        if (chunk.length === 0) continue
        let ok: boolean
        if (chunked) {
          // Size line, data and CRLF in one write to the kernel.
          s.cork()
          s.write(`${chunk.length.toString(16)}\r\n`, 'latin1')
          s.write(chunk)
          ok = s.write(CRLF)
          s.uncork()
        } else ok = s.write(chunk)
        if (!ok) await drained(s)
      }
      if (chunked && !job.done && this.job === job) s.write(CHUNK_END)
      job.bodySent = true
    } catch (err) {
      // The body's source failed (the client went away, or sent too much): the exchange aborts the request.
      if (!job.done && this.job === job)
        job.abort(upstreamError(CLOSED, `request body failed: ${(err as Error).message}`))
    }
  }

  #data(d: Buffer): void {
    const job = this.job
    if (job === null) {
      // Bytes on an idle connection: the upstream is out of step with us; never reuse it.
      this.kill()
      return
    }
    job.responseBytes += d.length
    let off = 0
    if (!this.headersDone) {
      off = this.#readHead(job, d)
      if (off < 0 || job.done || this.job !== job) return
    }
    this.#readBody(job, d, off)
  }

  /** Takes head bytes; returns where the body starts in `d`, or -1 when the head is not complete (or bad). */
  #readHead(job: Job, d: Buffer): number {
    let buf = d
    let from = 0
    if (this.head !== null) {
      from = Math.max(0, this.head.length - 3)
      buf = Buffer.concat([this.head, d])
    }
    for (;;) {
      const end = buf.indexOf('\r\n\r\n', from, 'latin1')
      if (end < 0) {
        // A head that cannot end well (a bare LF, say, where a CRLF is due) fails now, not at the timeout; a CR
        // at the very end may still get its LF. Only what earlier reads did not check is scanned (a head sent
        // a byte at a time stays linear), from a CR before it if there is one (its LF is not bare).
        const upTo = buf[buf.length - 1] === 0x0d ? buf.length - 1 : buf.length
        const at = from > 0 && buf[from - 1] === 0x0d ? from - 1 : from
        if (BAD_HEAD.test(buf.toString('latin1', at, upTo))) {
          this.#bad(job, 'response head holds NUL or a bare CR or LF')
          return -1
        }
        if (buf.length > MAX_HEAD_BYTES) {
          this.#bad(job, `response headers are larger than ${MAX_HEAD_BYTES} bytes`)
          return -1
        }
        this.head = Buffer.from(buf)
        return -1
      }
      if (end > MAX_HEAD_BYTES) {
        this.#bad(job, `response headers are larger than ${MAX_HEAD_BYTES} bytes`)
        return -1
      }
      const status = this.#parseHead(job, buf.toString('latin1', 0, end))
      if (status < 0) return -1
      const next = end + 4
      if (status >= 100 && status < 200) {
        // An interim answer (100 Continue, 103 Early Hints): not forwarded; the final one follows.
        if (status === 101) {
          this.#bad(job, 'upstream switched protocols (101), which the proxy never asks for')
          return -1
        }
        buf = buf.subarray(next)
        from = 0
        continue
      }
      this.head = null
      this.headersDone = true
      this.setTimeout(this.pool.opts.bodyTimeoutMs)
      job.handler.onResponseStart(job, status, this.pendingHeaders!)
      this.pendingHeaders = null
      if (job.done || this.job !== job) return -1
      if (buf !== d) {
        // The head spanned several reads: hand the rest of the joined buffer to the body reader.
        this.#readBody(job, buf, next)
        return -1
      }
      return next
    }
  }

  /** Parses one response head; returns its status, or -1 after failing the job. */
  #parseHead(job: Job, text: string): number {
    // One pass for what no line may hold anywhere (NUL, a CR or LF that is not a CRLF); then plain scans.
    if (BAD_HEAD.test(text)) return this.#bad(job, 'response head holds NUL or a bare CR or LF')
    let eol = text.indexOf('\r\n')
    if (eol < 0) eol = text.length
    const s0 = text.charCodeAt(9) - 48
    const s1 = text.charCodeAt(10) - 48
    const s2 = text.charCodeAt(11) - 48
    const minor = text.charCodeAt(7)
    if (
      eol < 12 ||
      !text.startsWith('HTTP/1.') ||
      (minor !== 48 && minor !== 49) ||
      text.charCodeAt(8) !== 32 ||
      !(s0 >= 1 && s0 <= 9 && s1 >= 0 && s1 <= 9 && s2 >= 0 && s2 <= 9) ||
      (eol > 12 && text.charCodeAt(12) !== 32)
    )
      return this.#bad(
        job,
        `not an HTTP/1.x status line: ${JSON.stringify(text.slice(0, Math.min(eol, 60)))}`,
      )
    const status = s0 * 100 + s1 * 10 + s2
    const headers: string[] = []
    let te: string | null = null
    let cl = -1
    let close = false
    let keepAliveToken = false
    let keepAliveS = -1
    for (let pos = eol + 2; pos < text.length;) {
      let end = text.indexOf('\r\n', pos)
      if (end < 0) end = text.length
      const c = text.indexOf(':', pos)
      if (c <= pos || c > end)
        return this.#bad(
          job,
          `header line without a name: ${JSON.stringify(text.slice(pos, Math.min(end, pos + 60)))}`,
        )
      if (!isToken(text, pos, c))
        return this.#bad(job, `bad header name ${JSON.stringify(text.slice(pos, Math.min(c, pos + 60)))}`)
      // Optional whitespace (space, tab) around the value is not part of it.
      let vs = c + 1
      let ve = end
      while (vs < ve && (text.charCodeAt(vs) === 32 || text.charCodeAt(vs) === 9)) vs++
      while (ve > vs && (text.charCodeAt(ve - 1) === 32 || text.charCodeAt(ve - 1) === 9)) ve--
      const k = text.slice(pos, c).toLowerCase()
      const value = text.slice(vs, ve)
      pos = end + 2
      headers.push(k, value)
      switch (k.length) {
        case 17:
          if (k === 'transfer-encoding')
            te = te === null ? value.toLowerCase() : `${te}, ${value.toLowerCase()}`
          break
        case 14:
          if (k === 'content-length') {
            // One length, digits only: a list or a second header (even an equal one) is refused, as llhttp does.
            if (cl >= 0) return this.#bad(job, 'more than one content-length header')
            cl = digits(value)
            if (cl < 0) return this.#bad(job, `bad content-length ${JSON.stringify(value.slice(0, 40))}`)
          }
          break
        case 10:
          if (k === 'connection') {
            const v = value.toLowerCase()
            if (v === 'keep-alive') keepAliveToken = true
            else if (v === 'close') close = true
            else
              for (const t of v.split(',')) {
                const token = t.trim()
                if (token === 'close') close = true
                else if (token === 'keep-alive') keepAliveToken = true
              }
          } else if (k === 'keep-alive') {
            const t = value.startsWith('timeout=') ? digits(value.slice(8)) : -1
            if (t >= 0) keepAliveS = t
            else {
              const m = /(?:^|[,;\s])timeout=(\d{1,6})/i.exec(value)
              if (m) keepAliveS = Number(m[1])
            }
          }
      }
    }
    if (status >= 100 && status < 200) return status
    // HTTP/1.1 keeps the connection unless it says close; HTTP/1.0 only when it says keep-alive.
    this.keepAlive = minor === 49 ? !close : keepAliveToken && !close
    const idleMs = this.pool.idleMs
    // Idle no longer than the upstream keeps the connection, less a second for the race; none left: not reused.
    this.idleUntil = keepAliveS >= 0 ? Math.min(idleMs, keepAliveS * 1000 - 1000) : idleMs
    if (this.idleUntil <= 0) this.keepAlive = false
    const method = job.req.method
    if (method === 'HEAD' || status === 204 || status === 304) this.body = Body.None
    else if (te !== null) {
      // Chunked must be the last coding; without it the body runs to the close (RFC 9112 §6.3). A length beside
      // a transfer coding is ignored (and not passed on, where the client would frame the body by it), and the
      // connection is not reused.
      if (cl >= 0) {
        this.keepAlive = false
        for (let i = headers.length - 2; i >= 0; i -= 2)
          if (headers[i] === 'content-length') headers.splice(i, 2)
      }
      if (/(?:^|,)\s*chunked\s*$/.test(te)) {
        this.body = Body.Chunked
        this.chunk = Chunk.Size
        this.line = null
      } else {
        this.body = Body.UntilClose
        this.keepAlive = false
      }
    } else if (cl >= 0) {
      this.body = cl === 0 ? Body.None : Body.Fixed
      this.remaining = cl
    } else {
      this.body = Body.UntilClose
      this.keepAlive = false
    }
    this.pendingHeaders = headers
    return status
  }

  #readBody(job: Job, d: Buffer, off: number): void {
    switch (this.body) {
      case Body.None:
        if (off < d.length) this.keepAlive = false
        this.#complete(job)
        return
      case Body.Fixed: {
        const n = d.length - off
        if (n <= 0) return
        if (n < this.remaining) {
          this.remaining -= n
          job.handler.onResponseData(job, off === 0 ? d : d.subarray(off), false)
          return
        }
        const take = this.remaining
        this.remaining = 0
        if (n > take) this.keepAlive = false
        job.handler.onResponseData(
          job,
          off === 0 && take === d.length ? d : d.subarray(off, off + take),
          true,
        )
        if (!job.done && this.job === job) this.#complete(job)
        return
      }
      case Body.UntilClose:
        if (off < d.length) job.handler.onResponseData(job, off === 0 ? d : d.subarray(off), false)
        return
      case Body.Chunked:
        this.#readChunked(job, d, off)
    }
  }

  #readChunked(job: Job, d: Buffer, off: number): void {
    let i = off
    while (i < d.length) {
      if (job.done || this.job !== job) return
      switch (this.chunk) {
        case Chunk.Data: {
          const n = Math.min(this.remaining, d.length - i)
          this.remaining -= n
          if (this.remaining === 0) this.chunk = Chunk.DataEnd
          const piece = d.subarray(i, i + n)
          i += n
          job.handler.onResponseData(job, piece, false)
          break
        }
        case Chunk.Size:
        case Chunk.DataEnd:
        case Chunk.Trailers: {
          const nl = d.indexOf(0x0a, i)
          const end = nl < 0 ? d.length : nl + 1
          const part = d.subarray(i, end)
          i = end
          const line = this.line === null ? part : Buffer.concat([this.line, part])
          if (nl < 0) {
            if (line.length > MAX_CHUNK_LINE)
              return void this.#bad(job, 'chunk header longer than 4096 bytes')
            this.line = line === part ? Buffer.from(part) : line
            break
          }
          this.line = null
          if (line.length < 2 || line[line.length - 2] !== 0x0d)
            return void this.#bad(job, 'chunked body line not ended by CRLF')
          const text = line.toString('latin1', 0, line.length - 2)
          if (this.chunk === Chunk.DataEnd) {
            if (text !== '') return void this.#bad(job, 'chunk data longer than its size')
            this.chunk = Chunk.Size
          } else if (this.chunk === Chunk.Size) {
            const semi = text.indexOf(';')
            const hex = (semi < 0 ? text : text.slice(0, semi)).trim()
            if (!/^[0-9a-fA-F]{1,12}$/.test(hex))
              return void this.#bad(job, `bad chunk size ${JSON.stringify(hex.slice(0, 20))}`)
            const size = parseInt(hex, 16)
            if (size === 0) this.chunk = Chunk.Trailers
            else {
              this.remaining = size
              this.chunk = Chunk.Data
            }
          } else if (text === '') {
            // The empty line after the (ignored) trailers: the body is complete.
            if (i < d.length) this.keepAlive = false
            this.#complete(job)
            return
          } else if ((this.remaining += line.length) > MAX_CHUNK_LINE * 4)
            return void this.#bad(job, 'trailers longer than 16 KB')
        }
      }
    }
  }

  #complete(job: Job): void {
    if (!job.bodySent) this.keepAlive = false
    this.job = null
    job.conn = null
    job.done = true
    if (job.paused) this.socket.resume()
    if (this.keepAlive && !this.dead) this.pool.idle(this)
    else this.kill()
    job.handler.onResponseEnd()
  }

  #bad(job: Job, message: string): number {
    this.kill()
    job.fail(upstreamError(BAD_RESPONSE, `bad response from upstream: ${message}`))
    return -1
  }

  #timeout(): void {
    const job = this.job
    if (job === null) {
      this.kill()
      return
    }
    this.kill()
    job.fail(
      this.headersDone
        ? upstreamError(BODY_TIMEOUT, `upstream sent nothing for ${this.pool.opts.bodyTimeoutMs} ms`)
        : upstreamError(HEADERS_TIMEOUT, `no response headers within ${this.pool.opts.headersTimeoutMs} ms`),
    )
  }

  #ended(): void {
    // A body that runs to the close ends here; anything else ending now was cut.
    const job = this.job
    if (job !== null && this.headersDone && this.body === Body.UntilClose) {
      this.keepAlive = false
      this.#complete(job)
      return
    }
    this.#failed(upstreamError(CLOSED, 'upstream closed the connection'))
  }

  #failed(err: UpstreamError): void {
    const job = this.job
    // A connection that never connected fails the request it was opened for (the pool's own listener).
    this.kill()
    if (job === null || job.done) return
    job.conn = null
    // A kept-alive connection the upstream had closed just before we wrote on it: one more try on a new one, for
    // a bodiless idempotent request that got no answer (nothing was processed, or it can safely be again).
    if (
      this.uses > 1 &&
      job.responseBytes === 0 &&
      !job.retried &&
      job.req.body === null &&
      IDEMPOTENT.has(job.req.method)
    ) {
      job.retried = true
      job.started = false
      this.pool.requeue(job)
      return
    }
    job.fail(err)
  }

  setTimeout(ms: number): void {
    if (ms === this.timeoutMs) return
    this.timeoutMs = ms
    this.socket.setTimeout(ms)
  }

  /** Closes the connection for good. */
  kill(): void {
    if (this.dead) return
    this.dead = true
    this.job = null
    this.socket.destroy()
    this.pool.gone(this)
  }
}

/**
 * Keep-alive HTTP/1.1 connections to one origin (`http:` or `https:`), at most `connections` at once, one
 * request at a time on each, most recently used first; requests beyond that wait in order.
 *
 * @example
 * ```ts
 * const pool = new H1Pool('http://127.0.0.1:8000', { connections: 64, connectTimeoutMs: 2000, headersTimeoutMs: 60_000, bodyTimeoutMs: 60_000 })
 * pool.dispatch({ method: 'GET', path: '/health', headers: [], body: null }, handler)
 * await pool.close()
 * ```
 */
export class H1Pool {
  readonly host: string
  /** How long a connection may stay idle (`opts.idleTimeoutMs`, 4 s by default). */
  readonly idleMs: number
  readonly #port: number
  readonly #hostname: string
  readonly #tls: boolean
  readonly #free: Conn[] = []
  readonly #queue: Job[] = []
  readonly #conns = new Set<Conn>()
  #connecting = 0
  closing = false
  #closed: (() => void) | null = null
  /**
   * The options, every field set, in one order: pools made with differently shaped option objects (the proxy's,
   * the agent's own requests') then share one hidden class, so the connection code reading them stays
   * monomorphic and is not deoptimized when a second kind of pool starts (docs/proxy.md#upstream-client).
   */
  readonly opts: Readonly<Required<H1PoolOptions>>

  constructor(origin: string, opts: H1PoolOptions) {
    this.opts = {
      connections: opts.connections,
      connectTimeoutMs: opts.connectTimeoutMs,
      headersTimeoutMs: opts.headersTimeoutMs,
      bodyTimeoutMs: opts.bodyTimeoutMs,
      idleTimeoutMs: opts.idleTimeoutMs ?? 4000,
      unrefIdle: opts.unrefIdle ?? false,
    }
    const u = new URL(origin)
    this.#tls = u.protocol === 'https:'
    this.host = u.host
    this.idleMs = this.opts.idleTimeoutMs
    this.#hostname = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname
    this.#port = u.port !== '' ? Number(u.port) : this.#tls ? 443 : 80
  }

  /** Connections open (busy, idle or connecting). */
  get size(): number {
    return this.#conns.size
  }

  /**
   * Sends a request (now, or when a connection is free); the control returned aborts it while it waits too
   * (the handler's `onRequestStart` gets the same one once it is written).
   */
  dispatch(req: UpstreamRequest, handler: UpstreamHandler): UpstreamControl {
    const job = new Job(this, req, handler)
    if (this.closing) {
      job.fail(upstreamError(POOL_CLOSED, 'upstream removed'))
      return job
    }
    this.#run(job)
    return job
  }

  #run(job: Job): void {
    const c = this.#free.pop()
    if (c !== undefined) {
      c.start(job)
      return
    }
    this.#queue.push(job)
    this.#openIfWanted()
  }

  /** Opens a connection when requests wait beyond those that connecting ones will take, within the limit. */
  #openIfWanted(): void {
    if (this.#queue.length > this.#connecting && this.#conns.size < this.opts.connections && !this.closing)
      this.#open()
  }

  #open(): void {
    const h = this.#hostname
    const socket = this.#tls
      ? tlsConnect({
          host: h,
          port: this.#port,
          ...(isIP(h) === 0 ? { servername: h } : {}),
          ALPNProtocols: ['http/1.1'],
        })
      : netConnect({ host: h, port: this.#port })
    this.#connecting++
    // Registered before the connection's own listeners: a failed connect is settled here first.
    let settled = false
    const fail = (err: UpstreamError) => {
      if (settled) return
      settled = true
      this.#connecting--
      clearTimeout(timer)
      // The request this connection was opened for fails. With no connection up, the upstream cannot be reached
      // now: those that no other attempt under way will take fail too, rather than wait for a connection that
      // nothing would open. Otherwise they wait for the connections up.
      this.#queue.shift()?.fail(err)
      let up = false
      for (const x of this.#conns) if (x.connected) up = true
      if (!up) for (const j of this.#queue.splice(this.#connecting)) j.fail(err)
    }
    socket.once('error', fail)
    socket.once(this.#tls ? 'secureConnect' : 'connect', () => {
      if (settled) return
      settled = true
      this.#connecting--
      clearTimeout(timer)
      c.connected = true
      this.idle(c)
    })
    const timer = setTimeout(() => {
      fail(
        upstreamError(
          CONNECT_TIMEOUT,
          `connecting to ${this.host} took over ${this.opts.connectTimeoutMs} ms`,
        ),
      )
      c.kill()
    }, this.opts.connectTimeoutMs)
    const c = new Conn(this, socket)
    this.#conns.add(c)
  }

  /** A connection is free: the next waiting request takes it, or it waits (idle) for one. */
  idle(c: Conn): void {
    const next = this.#queue.shift()
    if (next !== undefined) {
      c.start(next)
      return
    }
    if (this.closing) {
      c.kill()
      return
    }
    c.setTimeout(c.idleUntil)
    if (this.opts.unrefIdle) c.socket.unref()
    this.#free.push(c)
  }

  /** A connection closed: forget it, and open another when requests wait for one. */
  gone(c: Conn): void {
    if (!this.#conns.delete(c)) return
    const i = this.#free.indexOf(c)
    if (i >= 0) this.#free.splice(i, 1)
    // A working connection went away while requests wait: they need another.
    if (c.connected) this.#openIfWanted()
    if (this.#closed !== null && this.#conns.size === 0) {
      // Closing, and no connection left to serve what still waits: that fails rather than waits forever.
      const err = upstreamError(POOL_CLOSED, 'upstream removed')
      for (const j of this.#queue.splice(0)) j.fail(err)
      this.#closed()
    }
  }

  requeue(job: Job): void {
    this.#queue.unshift(job)
    this.#openIfWanted()
  }

  unqueue(job: Job): void {
    const i = this.#queue.indexOf(job)
    if (i >= 0) this.#queue.splice(i, 1)
  }

  /** Takes no new requests, lets those running or waiting finish, then closes every connection. */
  close(): Promise<void> {
    this.closing = true
    for (const c of this.#free.splice(0)) c.kill()
    if (this.#conns.size === 0) {
      const err = upstreamError(POOL_CLOSED, 'upstream removed')
      for (const j of this.#queue.splice(0)) j.fail(err)
      return Promise.resolve()
    }
    return new Promise((r) => (this.#closed = r))
  }

  /** Closes everything now; requests running or waiting fail with `TG_UPSTREAM_POOL_CLOSED`. */
  destroy(): Promise<void> {
    this.closing = true
    const err = upstreamError(POOL_CLOSED, 'upstream removed')
    for (const j of this.#queue.splice(0)) j.fail(err)
    for (const c of [...this.#conns]) {
      const j = c.job
      c.kill()
      j?.fail(err)
    }
    return Promise.resolve()
  }
}

import { BAD_RESPONSE, CLOSED, H1Pool } from './h1-client.js'
import type { UpstreamControl, UpstreamError, UpstreamHandler } from './h1-client.js'

/**
 * The agent's own outbound HTTP (interval reports to the collector, `/metrics` scrapes) on the proxy's
 * HTTP/1.1 client instead of the global `fetch`.
 *
 * Why not `fetch`: in an agent that also proxies, the first `fetch` loads and compiles undici (50–100 ms of the
 * agent's one thread on a 2-core machine, every proxied request waiting), and each of the first reports put
 * sockets and streams of undici's shapes through Node's stream functions that the proxy's hot path had been
 * optimized for, which V8 then deoptimized (docs/proxy.md#overhead). The proxy's own client uses the same socket
 * code as its upstream connections, so nothing new reaches those functions.
 *
 * Only what the agent needs: GET and POST, a whole body (string or Buffer), the answer's status and text, an
 * `AbortSignal`. No redirects (a 3xx is answered as is), no cookies, no compression.
 */

/** The answer to {@link HttpFetch}: the part of a `fetch` Response the agent reads. */
export interface HttpAnswer {
  readonly status: number
  /** Status 200-299. */
  readonly ok: boolean
  /** Response headers by lowercase name (the first of repeated ones). */
  readonly headers: { get(name: string): string | null }
  text(): Promise<string>
}

/** The headers of an answer, from the client's flat [lowercase name, value, …] list. */
class AnswerHeaders {
  constructor(private readonly flat: readonly string[]) {}
  get(name: string): string | null {
    const k = name.toLowerCase()
    for (let i = 0; i < this.flat.length; i += 2) if (this.flat[i] === k) return this.flat[i + 1]!
    return null
  }
}

/** For a 3xx answer, which the agent's client does not follow, a line saying where it pointed; else null. */
export function redirectNote(res: HttpAnswer): string | null {
  if (res.status < 300 || res.status >= 400) return null
  const to = res.headers.get('location')
  return `HTTP ${res.status} redirect${to !== null ? ` to ${to.slice(0, 200)}` : ''} (redirects are not followed: use the final URL)`
}

/** Why a non-2xx answer failed a request: where a redirect pointed, else the status. */
export function failureNote(res: HttpAnswer): string {
  return redirectNote(res) ?? `HTTP ${res.status}`
}

export interface HttpInit {
  readonly method?: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Buffer
  readonly signal?: AbortSignal
}

/** The narrow fetch the agent calls; the global `fetch` fits it too (tests pass one). */
export type HttpFetch = (url: string, init?: HttpInit) => Promise<HttpAnswer>

export interface H1Fetch extends HttpFetch {
  /** Closes every idle connection now and the others when their request ends (a later request opens new ones). */
  close(): Promise<void>
}

export interface H1FetchOptions {
  /** Most connections per origin (default 2). */
  readonly connectionsPerOrigin?: number
  /** Largest response body taken, bytes (default 64 MiB); a larger one fails the request. */
  readonly maxBodyBytes?: number
  /** Connect timeout, ms (default 10 s); the caller's `signal` bounds the whole request. */
  readonly connectTimeoutMs?: number
  /** How long an idle connection stays open, ms (default 4 s). */
  readonly idleTimeoutMs?: number
}

/** Collects one response; settles the promise of {@link createH1Fetch}'s function. */
class Collect implements UpstreamHandler {
  status = 0
  headers: readonly string[] = []
  readonly chunks: Buffer[] = []
  bytes = 0
  ctl: UpstreamControl | null = null
  onAbort: (() => void) | null = null
  /** Aborted while waiting for a connection: stopped as soon as it gets one. */
  cancelled: Error | null = null

  constructor(
    readonly url: string,
    readonly maxBytes: number,
    readonly signal: AbortSignal | undefined,
    readonly resolve: (a: HttpAnswer) => void,
    readonly reject: (e: Error) => void,
  ) {}

  onRequestStart(ctl: UpstreamControl): void {
    this.ctl = ctl
    if (this.cancelled !== null) ctl.abort(this.cancelled)
  }

  onResponseStart(_ctl: UpstreamControl, status: number, headers: string[]): void {
    this.status = status
    this.headers = headers
  }

  onResponseData(ctl: UpstreamControl, chunk: Buffer): void {
    this.bytes += chunk.length
    if (this.bytes > this.maxBytes) {
      ctl.abort(new Error(`response body from ${this.url} is larger than ${this.maxBytes} bytes`))
      return
    }
    this.chunks.push(chunk)
  }

  onResponseEnd(): void {
    this.#unlisten()
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)
    const status = this.status
    this.resolve({
      status,
      ok: status >= 200 && status < 300,
      headers: new AnswerHeaders(this.headers),
      text: () => Promise.resolve(body.toString('utf8')),
    })
  }

  onResponseError(_ctl: UpstreamControl | null, err: UpstreamError): void {
    this.#unlisten()
    // The client's messages say "upstream"; here the other end is whatever the caller asked.
    if (err.code === CLOSED) this.reject(new Error(`${this.url}: the server closed the connection`))
    else if (err.code === BAD_RESPONSE)
      this.reject(
        new Error(`${this.url}: ${err.message.replace('bad response from upstream', 'not HTTP/1.1')}`),
      )
    else this.reject(err)
  }

  #unlisten(): void {
    if (this.onAbort !== null) this.signal?.removeEventListener('abort', this.onAbort)
    this.onAbort = null
  }
}

async function* once(body: Buffer): AsyncGenerator<Buffer> {
  yield body
}

/**
 * Makes a fetch-like function with keep-alive connections per origin (`http:` and `https:`), for one owner that
 * closes it when it stops.
 *
 * @example
 * ```ts
 * const http = createH1Fetch()
 * const res = await http('http://127.0.0.1:7070/api/v1/reports', { method: 'POST', headers, body, signal: AbortSignal.timeout(15_000) })
 * if (res.ok) console.log(await res.text())
 * await http.close()
 * ```
 */
export function createH1Fetch(opts: H1FetchOptions = {}): H1Fetch {
  const pools = new Map<string, H1Pool>()
  const maxBytes = opts.maxBodyBytes ?? 64 * 1024 * 1024
  const poolFor = (origin: string): H1Pool => {
    let p = pools.get(origin)
    if (p === undefined) {
      p = new H1Pool(origin, {
        connections: opts.connectionsPerOrigin ?? 2,
        connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
        // The caller's signal is the request's deadline; these only stop a connection that hangs forever.
        headersTimeoutMs: 300_000,
        bodyTimeoutMs: 300_000,
        idleTimeoutMs: opts.idleTimeoutMs ?? 4000,
        // An idle connection keeps no process alive (the owners' timers are unref'd too).
        unrefIdle: true,
      })
      pools.set(origin, p)
    }
    return p
  }
  const h1 = (url: string, init: HttpInit = {}): Promise<HttpAnswer> =>
    new Promise((resolve, reject) => {
      let u: URL
      try {
        u = new URL(url)
      } catch {
        reject(new TypeError(`not a URL: ${JSON.stringify(url)}`))
        return
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') {
        reject(new TypeError(`${url}: only http: and https: URLs are supported`))
        return
      }
      const signal = init.signal
      if (signal?.aborted) {
        reject(signal.reason as Error)
        return
      }
      const headers: string[] = []
      for (const [k, v] of Object.entries(init.headers ?? {})) headers.push(k, v)
      let body: Buffer | null = null
      if (init.body !== undefined) {
        body = typeof init.body === 'string' ? Buffer.from(init.body) : init.body
        headers.push('content-length', String(body.length))
      }
      const handler = new Collect(url, maxBytes, signal, resolve, reject)
      if (signal !== undefined) {
        handler.onAbort = () => {
          const reason = signal.reason as Error
          if (handler.ctl !== null) handler.ctl.abort(reason)
          else {
            handler.cancelled = reason
            reject(reason)
          }
        }
        signal.addEventListener('abort', handler.onAbort, { once: true })
      }
      poolFor(u.origin).dispatch(
        {
          method: init.method ?? 'GET',
          path: u.pathname + u.search,
          headers,
          body: body === null ? null : once(body),
        },
        handler,
      )
    })
  return Object.assign(h1, {
    async close(): Promise<void> {
      const open = [...pools.values()]
      pools.clear()
      await Promise.all(open.map((p) => p.close()))
    },
  })
}

/**
 * The fetch a source or the shipper uses: the one it was given (tests), else a client of its own with one
 * connection per origin, which `close` closes when the owner stops.
 *
 * @example const http = fetchOrOwn(options.fetch); … await http.fetch(url, init); … await http.close()
 */
export function fetchOrOwn(given: HttpFetch | undefined): { fetch: HttpFetch; close(): Promise<void> } {
  if (given !== undefined) return { fetch: given, close: () => Promise.resolve() }
  const own = createH1Fetch({ connectionsPerOrigin: 1 })
  return { fetch: own, close: () => own.close() }
}

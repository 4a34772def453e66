import { GaugeFold } from './gauge.js'
import type { GaugeStat } from './gauge.js'
import { H1Pool } from './h1-client.js'

/** How an upstream takes requests: `active` gets new ones, `draining` only finishes what it has. */
export type UpstreamState = 'active' | 'draining'

/** What `GET /v1/upstreams` lists for one upstream (contract 2). */
export interface UpstreamView {
  readonly url: string
  readonly state: UpstreamState
  readonly inFlight: number
}

/** Pool settings shared by every upstream of a proxy. */
export interface UpstreamPoolOptions {
  /** Connections per upstream (kept alive and reused). */
  readonly connections: number
  readonly connectTimeoutMs: number
  /** Time to the upstream's response headers before a 504. */
  readonly headersTimeoutMs: number
  /** Longest silence between response body chunks. */
  readonly bodyTimeoutMs: number
  /** How long a removed or draining upstream may finish its requests before its connections are closed. */
  readonly drainGraceMs: number
  /** Monotonic milliseconds, for the busy gauge (default `performance.now`). */
  readonly clock?: () => number
}

/** One model server behind the proxy, with its pooled keep-alive connections. */
export interface Upstream {
  readonly url: string
  /** The URL's path without a trailing slash, prefixed to every request path ('' for none). */
  readonly basePath: string
  readonly pool: H1Pool
  state: UpstreamState
  inFlight: number
}

/**
 * The set of upstreams a proxy balances over (fewest requests in flight first), replaceable at runtime. A
 * removed or draining upstream gets no new requests and is dropped once its requests finish, or after
 * `drainGraceMs` (then its remaining requests are aborted with its connections).
 *
 * @example
 * ```ts
 * const set = createUpstreamSet(['http://127.0.0.1:8000'], poolOptions)
 * const u = set.pick(); set.take(u) … set.release(u)
 * set.replace([{ url: 'http://127.0.0.1:8001' }]) // 8000 drains, 8001 takes new requests
 * ```
 */
export interface UpstreamSet {
  /** The active upstream with the fewest requests in flight (round robin among equals); undefined if none. */
  pick(): Upstream | undefined
  /** Call when a request picked from `u` is sent to it. */
  take(u: Upstream): void
  /** Call when a request picked from `u` is over. */
  release(u: Upstream): void
  /**
   * How many upstreams had at least one request in flight, over the time since the last call (min, time-weighted
   * mean, max, last): with the requests in flight, the batch a busy replica shares (Little's law in the policy).
   */
  takeBusy(): GaugeStat
  replace(specs: ReadonlyArray<{ readonly url: string; readonly state?: UpstreamState }>): void
  view(): UpstreamView[]
  close(): Promise<void>
}

/** Parses and normalises an upstream URL (http only); throws a message naming the URL when it is not one. */
export function parseUpstreamUrl(url: string): { origin: string; basePath: string; normalized: string } {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new Error(`upstream ${JSON.stringify(url)} is not a URL (e.g. http://127.0.0.1:8000)`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new Error(`upstream ${JSON.stringify(url)}: only http:// and https:// are supported`)
  if (u.search || u.hash || u.username || u.password)
    throw new Error(`upstream ${JSON.stringify(url)}: no query, fragment or credentials allowed`)
  const basePath = u.pathname.replace(/\/+$/, '')
  return { origin: u.origin, basePath, normalized: u.origin + basePath }
}

class UpstreamSetImpl implements UpstreamSet {
  #list: Upstream[] = []
  #active: Upstream[] = []
  #rr = 0
  readonly #opts: UpstreamPoolOptions
  readonly #timers = new Map<Upstream, NodeJS.Timeout>()
  readonly #clock: () => number
  readonly #busy: GaugeFold

  constructor(urls: readonly string[], opts: UpstreamPoolOptions) {
    this.#opts = opts
    this.#clock = opts.clock ?? (() => performance.now())
    this.#busy = new GaugeFold(this.#clock())
    this.replace(urls.map((url) => ({ url })))
  }

  #make(url: string): Upstream {
    const { origin, basePath, normalized } = parseUpstreamUrl(url)
    const o = this.#opts
    const pool = new H1Pool(origin, {
      connections: o.connections,
      connectTimeoutMs: o.connectTimeoutMs,
      headersTimeoutMs: o.headersTimeoutMs,
      bodyTimeoutMs: o.bodyTimeoutMs,
    })
    return { url: normalized, basePath, pool, state: 'active', inFlight: 0 }
  }

  pick(): Upstream | undefined {
    const a = this.#active
    const n = a.length
    if (n === 0) return undefined
    if (n === 1) return a[0]
    const start = this.#rr++ % n
    let best = a[start]!
    for (let i = 1; i < n; i++) {
      const u = a[(start + i) % n]!
      if (u.inFlight < best.inFlight) best = u
    }
    return best
  }

  take(u: Upstream): void {
    if (u.inFlight++ === 0) this.#busy.add(1, this.#clock())
  }

  release(u: Upstream): void {
    if (--u.inFlight === 0) this.#busy.add(-1, this.#clock())
    if (u.state === 'draining' && u.inFlight <= 0) this.#drop(u)
  }

  replace(specs: ReadonlyArray<{ readonly url: string; readonly state?: UpstreamState }>): void {
    const wanted = new Map<string, UpstreamState>()
    for (const s of specs) wanted.set(parseUpstreamUrl(s.url).normalized, s.state ?? 'active')
    const next: Upstream[] = []
    for (const u of this.#list) {
      const state = wanted.get(u.url)
      if (state === 'active') {
        u.state = 'active'
        const t = this.#timers.get(u)
        if (t) clearTimeout(t)
        this.#timers.delete(u)
      } else this.#drain(u)
      next.push(u)
      wanted.delete(u.url)
    }
    for (const [url, state] of wanted) {
      const u = this.#make(url)
      next.push(u)
      if (state === 'draining') this.#drain(u)
    }
    this.#list = next
    this.#refresh()
    for (const u of [...this.#list]) if (u.state === 'draining' && u.inFlight <= 0) this.#drop(u)
  }

  #drain(u: Upstream): void {
    if (u.state === 'draining' && this.#timers.has(u)) return
    u.state = 'draining'
    const t = setTimeout(() => this.#drop(u), this.#opts.drainGraceMs)
    t.unref()
    this.#timers.set(u, t)
  }

  #drop(u: Upstream): void {
    const t = this.#timers.get(u)
    if (t) clearTimeout(t)
    this.#timers.delete(u)
    if (!this.#list.includes(u)) return
    this.#list = this.#list.filter((x) => x !== u)
    this.#refresh()
    // Graceful when nothing is in flight; after the grace period the rest is aborted.
    if (u.inFlight <= 0) void u.pool.close()
    else void u.pool.destroy()
  }

  #refresh(): void {
    this.#active = this.#list.filter((u) => u.state === 'active')
  }

  takeBusy(): GaugeStat {
    return this.#busy.take(this.#clock())
  }

  view(): UpstreamView[] {
    return this.#list.map((u) => ({ url: u.url, state: u.state, inFlight: u.inFlight }))
  }

  async close(): Promise<void> {
    for (const t of this.#timers.values()) clearTimeout(t)
    this.#timers.clear()
    const list = this.#list
    this.#list = []
    this.#refresh()
    await Promise.all(list.map((u) => u.pool.destroy()))
  }
}

/**
 * Makes an {@link UpstreamSet} from URLs.
 *
 * @example
 * ```ts
 * createUpstreamSet(['http://127.0.0.1:8000'], { connections: 64, connectTimeoutMs: 2000, headersTimeoutMs: 60_000, bodyTimeoutMs: 60_000, drainGraceMs: 30_000 })
 * ```
 */
export function createUpstreamSet(urls: readonly string[], opts: UpstreamPoolOptions): UpstreamSet {
  return new UpstreamSetImpl(urls, opts)
}

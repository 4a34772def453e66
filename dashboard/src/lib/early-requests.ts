/**
 * Requests sent before the page that wants them has rendered (the fleet page's, from `main.tsx`), kept by path and
 * query until that page's first request takes them: once, with the same token, while fresh. Pure bookkeeping; the
 * sending is `dashboard/src/api.ts`'s.
 *
 * @example
 * ```ts
 * const early = new EarlyRequests<Response>(5000)
 * early.put('fleet?from=-1h&to=now', token, fetch(url))
 * const inFlight = early.take('fleet?from=-1h&to=now', token) // the same promise; undefined the second time
 * ```
 */
export class EarlyRequests<R> {
  readonly #pending = new Map<string, { token: string; sentAt: number; response: Promise<R> }>()
  readonly #maxAgeMs: number
  readonly #now: () => number

  /** `maxAgeMs`: how long an early answer stays usable; past it, the page asks again rather than show stale data. */
  constructor(maxAgeMs: number, now: () => number = Date.now) {
    this.#maxAgeMs = maxAgeMs
    this.#now = now
  }

  /** Keeps a request in flight for `key`; one nobody takes must not reject unhandled, so a rejection is observed. */
  put(key: string, token: string, response: Promise<R>): void {
    response.catch(() => undefined)
    this.#pending.set(key, { token, sentAt: this.#now(), response })
  }

  /** The request kept for `key` if it was sent with `token` and is fresh; either way it is gone afterwards. */
  take(key: string, token: string): Promise<R> | undefined {
    const got = this.#pending.get(key)
    if (got === undefined) return undefined
    this.#pending.delete(key)
    return got.token === token && this.#now() - got.sentAt <= this.#maxAgeMs ? got.response : undefined
  }
}

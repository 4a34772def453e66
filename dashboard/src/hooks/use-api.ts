import { useEffect, useState } from 'react'
import { ApiError, apiGetIfChanged } from '../api.js'
import { useAuth } from '../auth.js'

/** Where a request stands. */
export type LoadStatus = 'loading' | 'success' | 'error'

/** What every data hook returns (pyrra's shape): the last good response, the last error, and the status. */
export interface ApiState<T> {
  readonly response: T | null
  readonly error: ApiError | null
  readonly status: LoadStatus
}

const LOADING = { response: null, error: null, status: 'loading' } as const

/**
 * The refresh interval that replaces every page's own when the page sets `window.tailguardRefreshMs` before the
 * dashboard loads (the end-to-end tests do, to see a poll within a second); values under 100 ms are ignored.
 * Production pages never set it, and poll every 10 s (60 s for ranges over an hour).
 *
 * @example refreshOverride() // null
 */
export function refreshOverride(): number | null {
  const v = (globalThis as { tailguardRefreshMs?: unknown }).tailguardRefreshMs
  return typeof v === 'number' && Number.isFinite(v) && v >= 100 ? v : null
}

/**
 * GETs `api/v1/<path>` with `params` whenever they change, and again every `refreshMs` when given.
 * A refresh keeps the last response on screen until the new one arrives; changing `reload` (a counter the page
 * bumps after a change it made) loads again at once, keeping the response on screen. A 401 (unknown token) or 403 (a
 * token without read scope) signs the user out with the collector's message, which the login form shows.
 *
 * Refreshes are conditional: each sends the `ETag` of the last answer as `If-None-Match`, and a `304 Not
 * Modified` keeps the response on screen as the same object, so nothing re-renders (only a shown error is cleared).
 *
 * @example const { response, error, status } = useApi<ServicesResponse>('services', {}, 10_000)
 */
export function useApi<T>(
  path: string,
  params: Readonly<Record<string, string | undefined>>,
  refreshMs?: number,
  reload = 0,
): ApiState<T> {
  const { token, signOut } = useAuth()
  const key = JSON.stringify([path, params])
  const [state, setState] = useState<{ key: string; value: ApiState<T> }>({ key, value: LOADING })

  useEffect(() => {
    if (token === null) return undefined
    let live = true
    let controller: AbortController | null = null
    // The ETag of the last answer for this key; a new key, token or reload starts without one.
    let etag: string | null = null
    const [p, q] = JSON.parse(key) as [string, Record<string, string | undefined>]
    const load = () => {
      controller?.abort()
      const c = new AbortController()
      controller = c
      apiGetIfChanged<T>(p, q, token, etag, c.signal).then(
        (got) => {
          if (!live || c.signal.aborted) return
          if (got.kind === 'changed') {
            etag = got.etag
            setState({ key, value: { response: got.body, error: null, status: 'success' } })
            return
          }
          // 304: the same state object when it already shows this key's response, so React bails out.
          setState((prev) =>
            prev.key === key && prev.value.status === 'success'
              ? prev
              : {
                  key,
                  value: {
                    response: prev.key === key ? prev.value.response : null,
                    error: null,
                    status: 'success',
                  },
                },
          )
        },
        (err: unknown) => {
          if (!live || c.signal.aborted) return
          const error =
            err instanceof ApiError ? err : new ApiError(0, 'UNKNOWN', 'the request failed unexpectedly')
          if (error.statusCode === 401 || error.statusCode === 403) {
            signOut(`The collector refused the token: ${error.message}`)
            return
          }
          setState((prev) => ({
            key,
            value: { response: prev.key === key ? prev.value.response : null, error, status: 'error' },
          }))
        },
      )
    }
    load()
    const every = refreshMs && refreshMs > 0 ? (refreshOverride() ?? refreshMs) : 0
    const timer = every > 0 ? window.setInterval(load, every) : undefined
    return () => {
      live = false
      controller?.abort()
      if (timer !== undefined) window.clearInterval(timer)
    }
  }, [key, token, refreshMs, signOut, reload])

  return state.key === key ? state.value : LOADING
}

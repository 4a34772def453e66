import { useEffect, useState } from 'react'
import { ApiError, apiGet } from '../api.js'
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
 * GETs `api/v1/<path>` with `params` whenever they change, and again every `refreshMs` when given.
 * A refresh keeps the last response on screen until the new one arrives; changing `reloadKey` fetches again
 * at once (after an action changed what the route answers). A 401 (unknown token) or 403 (a
 * token without read scope) signs the user out with the collector's message, which the login form shows.
 *
 * @example const { response, error, status } = useApi<ServicesResponse>('services', {}, 10_000)
 */
export function useApi<T>(
  path: string,
  params: Readonly<Record<string, string | undefined>>,
  refreshMs?: number,
  reloadKey?: number,
): ApiState<T> {
  const { token, signOut } = useAuth()
  const key = JSON.stringify([path, params])
  const [state, setState] = useState<{ key: string; value: ApiState<T> }>({ key, value: LOADING })

  useEffect(() => {
    if (token === null) return undefined
    let live = true
    let controller: AbortController | null = null
    const [p, q] = JSON.parse(key) as [string, Record<string, string | undefined>]
    const load = () => {
      controller?.abort()
      const c = new AbortController()
      controller = c
      apiGet<T>(p, q, token, c.signal).then(
        (response) => {
          if (live && !c.signal.aborted)
            setState({ key, value: { response, error: null, status: 'success' } })
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
    const timer = refreshMs && refreshMs > 0 ? window.setInterval(load, refreshMs) : undefined
    return () => {
      live = false
      controller?.abort()
      if (timer !== undefined) window.clearInterval(timer)
    }
  }, [key, token, refreshMs, signOut, reloadKey])

  return state.key === key ? state.value : LOADING
}

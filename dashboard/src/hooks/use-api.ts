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

/** Sets one key's state from its last one (undefined before the first answer); returning `prev` changes nothing. */
type StateUpdate<T> = (f: (prev: ApiState<T> | undefined) => ApiState<T> | undefined) => void

/**
 * Loads `key` (`JSON.stringify([path, params])`) now and every `refreshMs`, with ETags, handing each answer to
 * `update`; returns the function that stops it. The shared body of {@link useApi} and {@link useApiList}.
 */
function pollApi<T>(
  key: string,
  token: string,
  signOut: (reason: string) => void,
  refreshMs: number | undefined,
  update: StateUpdate<T>,
): () => void {
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
          update(() => ({ response: got.body, error: null, status: 'success' }))
          return
        }
        // 304: the same state object when it already shows this key's response, so React bails out.
        update((prev) =>
          prev?.status === 'success'
            ? prev
            : { response: prev?.response ?? null, error: null, status: 'success' },
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
        update((prev) => ({ response: prev?.response ?? null, error, status: 'error' }))
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
    return pollApi<T>(key, token, signOut, refreshMs, (f) =>
      setState((s) => {
        const prev = s.key === key ? s.value : undefined
        const next = f(prev)
        return next === prev || next === undefined ? s : { key, value: next }
      }),
    )
  }, [key, token, refreshMs, signOut, reload])

  return state.key === key ? state.value : LOADING
}

/**
 * {@link useApi} for a list of queries of one path (one per replica of a split chart, say), each polled on its own
 * with its own ETag; the states come back in the order of `paramsList`. The list may change length between renders.
 *
 * @example const states = useApiList<TimeseriesResponse>('timeseries', replicas.map((r) => ({ ...q, replica: r })), 10_000)
 */
export function useApiList<T>(
  path: string,
  paramsList: ReadonlyArray<Readonly<Record<string, string | undefined>>>,
  refreshMs?: number,
): ReadonlyArray<ApiState<T>> {
  const { token, signOut } = useAuth()
  const keys = paramsList.map((params) => JSON.stringify([path, params]))
  const joined = JSON.stringify(keys)
  const [states, setStates] = useState<Readonly<Record<string, ApiState<T>>>>({})

  useEffect(() => {
    if (token === null) return undefined
    const stops = (JSON.parse(joined) as string[]).map((key) =>
      pollApi<T>(key, token, signOut, refreshMs, (f) =>
        setStates((s) => {
          const prev = s[key]
          const next = f(prev)
          return next === prev || next === undefined ? s : { ...s, [key]: next }
        }),
      ),
    )
    return () => {
      for (const stop of stops) stop()
    }
  }, [joined, token, refreshMs, signOut])

  return keys.map((k) => states[k] ?? LOADING)
}

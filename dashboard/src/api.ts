/**
 * The dashboard's HTTP client for the collector's `/api/v1` (same origin; paths are relative so the
 * dashboard also works behind a path prefix). The token travels only in the `Authorization` header.
 *
 * @example
 * ```ts
 * const services = await apiGet<ServicesResponse>('services', {}, token, signal)
 * ```
 */
import type { ApiErrorBody } from './lib/api-types.js'
import { EarlyRequests } from './lib/early-requests.js'

/** GETs sent before the page that wants them rendered ({@link requestEarly}), usable for 5 s. */
const early = new EarlyRequests<Response>(5000)

/** An API failure: HTTP status (0 for network failures), the collector's error code and its message. */
export class ApiError extends Error {
  readonly statusCode: number
  readonly code: string

  constructor(statusCode: number, code: string, message: string) {
    super(message)
    this.name = 'ApiError'
    this.statusCode = statusCode
    this.code = code
  }
}

function isErrorBody(v: unknown): v is ApiErrorBody {
  return typeof v === 'object' && v !== null && typeof (v as ApiErrorBody).message === 'string'
}

/**
 * GETs `api/v1/<path>` with the query `params` (undefined and empty values left out) and the bearer token.
 * Resolves with the parsed body; rejects with an {@link ApiError} (or the abort error when `signal` fires).
 *
 * @example await apiGet<LatencyResponse>('latency', { service: 'chat', from: '-1h' }, token)
 */
export async function apiGet<T>(
  path: string,
  params: Readonly<Record<string, string | undefined>>,
  token: string,
  signal?: AbortSignal,
): Promise<T> {
  const res = await fetchApi('GET', pathWithQuery(path, params), undefined, token, signal)
  return parseAnswer<T>(res)
}

/** What {@link apiGetIfChanged} resolves with: the body and its `ETag`, or `unchanged` for a 304. */
export type Conditional<T> =
  | { readonly kind: 'changed'; readonly body: T; readonly etag: string | null }
  | { readonly kind: 'unchanged' }

/**
 * Like {@link apiGet}, but sends `If-None-Match: <etag>` when `etag` is given (the `ETag` of the last answer), so
 * that the collector answers `304 Not Modified` with no body when nothing changed: polling then costs neither the
 * body nor a parse nor a render.
 *
 * @example
 * ```ts
 * const got = await apiGetIfChanged<ServicesResponse>('services', {}, token, lastEtag)
 * if (got.kind === 'changed') { show(got.body); lastEtag = got.etag }
 * ```
 */
export async function apiGetIfChanged<T>(
  path: string,
  params: Readonly<Record<string, string | undefined>>,
  token: string,
  etag: string | null,
  signal?: AbortSignal,
): Promise<Conditional<T>> {
  const extra = etag !== null ? { 'if-none-match': etag } : undefined
  const pathAndQuery = pathWithQuery(path, params)
  const res = await ((etag === null ? early.take(pathAndQuery, token) : undefined) ??
    fetchApi('GET', pathAndQuery, undefined, token, signal, extra))
  if (res.status === 304) return { kind: 'unchanged' }
  const body = await parseAnswer<T>(res)
  return { kind: 'changed', body, etag: res.headers.get('etag') }
}

/**
 * Sends the first GET of a page before React has rendered it, so that the collector computes the answer while the
 * browser is still evaluating and rendering: the page's own first {@link apiGetIfChanged} for the same path, query
 * and token takes that request (once) instead of sending its own. Used for the page a sign-in opens (the fleet
 * page), whose first request otherwise left only after the bundle had run and the first render was done.
 *
 * @example requestEarly('fleet', { from: '-1h', to: 'now' }, token)
 */
export function requestEarly(
  path: string,
  params: Readonly<Record<string, string | undefined>>,
  token: string,
): void {
  const pathAndQuery = pathWithQuery(path, params)
  early.put(pathAndQuery, token, fetchApi('GET', pathAndQuery, undefined, token))
}

function pathWithQuery(path: string, params: Readonly<Record<string, string | undefined>>): string {
  const query = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') query.set(k, v)
  const qs = query.toString()
  return `${path}${qs ? `?${qs}` : ''}`
}

/**
 * Sends a change (`POST`, `PUT`, `DELETE`) to `api/v1/<path>` with a JSON body. Resolves with the parsed answer
 * (null for 204); rejects with an {@link ApiError} carrying the collector's message, e.g. the 403 for a read token
 * on an admin route: callers show it, they never swallow it.
 *
 * @example await apiSend('DELETE', `silences/${id}`, undefined, token)
 */
export function apiSend<T>(
  method: 'POST' | 'PUT' | 'DELETE',
  path: string,
  body: unknown,
  token: string,
): Promise<T> {
  return request<T>(method, path, body, token)
}

async function request<T>(
  method: string,
  pathAndQuery: string,
  body: unknown,
  token: string,
  signal?: AbortSignal,
): Promise<T> {
  return parseAnswer<T>(await fetchApi(method, pathAndQuery, body, token, signal))
}

/**
 * Sends one request. `cache: 'no-store'` keeps the browser's HTTP cache out of the way: conditional requests are
 * made here ({@link apiGetIfChanged}), and their 304 reaches the caller as it is.
 */
async function fetchApi(
  method: string,
  pathAndQuery: string,
  body: unknown,
  token: string,
  signal?: AbortSignal,
  extraHeaders?: Readonly<Record<string, string>>,
): Promise<Response> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    accept: 'application/json',
    ...extraHeaders,
  }
  if (body !== undefined) headers['content-type'] = 'application/json'
  try {
    return await fetch(`api/v1/${pathAndQuery}`, {
      method,
      headers,
      signal,
      cache: 'no-store',
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
  } catch (err) {
    if (signal?.aborted) throw err
    throw new ApiError(0, 'NETWORK', 'the collector could not be reached')
  }
}

async function parseAnswer<T>(res: Response): Promise<T> {
  let parsed: unknown = null
  try {
    parsed = res.status === 204 ? null : await res.json()
  } catch {
    parsed = null
  }
  if (!res.ok) {
    if (isErrorBody(parsed))
      throw new ApiError(res.status, parsed.code ?? `HTTP_${res.status}`, parsed.message)
    throw new ApiError(res.status, `HTTP_${res.status}`, `the collector answered ${res.status}`)
  }
  return parsed as T
}

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
  const query = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') query.set(k, v)
  const qs = query.toString()
  return request<T>('GET', `${path}${qs ? `?${qs}` : ''}`, undefined, token, signal)
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
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(`api/v1/${pathAndQuery}`, {
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

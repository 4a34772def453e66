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
  return request<T>(`api/v1/${path}${qs ? `?${qs}` : ''}`, { method: 'GET' }, token, signal)
}

/**
 * POSTs a JSON `body` (or none) to `api/v1/<path>` with the bearer token. Resolves with the parsed answer;
 * rejects with an {@link ApiError}: a 403 is a token without the scope the route needs (admin, for the
 * controller's mode and rollback), which the caller shows as a refusal. It never signs the user out.
 *
 * @example await apiPost<Controller>('controllers/chat/mode', { mode: 'enforce' }, token)
 */
export async function apiPost<T>(path: string, body: unknown, token: string): Promise<T> {
  return request<T>(
    `api/v1/${path}`,
    body === undefined
      ? { method: 'POST' }
      : { method: 'POST', body: JSON.stringify(body), contentType: 'application/json' },
    token,
  )
}

async function request<T>(
  url: string,
  init: { method: string; body?: string; contentType?: string },
  token: string,
  signal?: AbortSignal,
): Promise<T> {
  let res: Response
  try {
    res = await fetch(url, {
      method: init.method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(init.contentType ? { 'content-type': init.contentType } : {}),
      },
      ...(init.body !== undefined ? { body: init.body } : {}),
      signal,
      cache: 'no-store',
    })
  } catch (err) {
    if (signal?.aborted) throw err
    throw new ApiError(0, 'NETWORK', 'the collector could not be reached')
  }
  let body: unknown = null
  try {
    body = await res.json()
  } catch {
    body = null
  }
  if (!res.ok) {
    if (isErrorBody(body)) throw new ApiError(res.status, body.code ?? `HTTP_${res.status}`, body.message)
    throw new ApiError(res.status, `HTTP_${res.status}`, `the collector answered ${res.status}`)
  }
  return body as T
}

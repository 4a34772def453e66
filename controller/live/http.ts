/**
 * One small JSON-over-HTTP client for the actuators, on node:http/https so a Kubernetes service-account CA
 * can be trusted without an extra dependency. Failures are values (STYLE.md section 6): a network error or a
 * timeout answers `{ ok: false }`, an HTTP error answers its status and body.
 */
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'

/** What a request answered. `json` is the parsed body when it was JSON, else null. */
export type HttpResult =
  | { readonly ok: true; readonly status: number; readonly json: unknown; readonly text: string }
  | { readonly ok: false; readonly error: string }

/** Options of {@link httpJson}. */
export interface HttpOptions {
  readonly method?: string
  readonly body?: unknown
  /** Sent as `Authorization: Bearer <token>`; never logged. */
  readonly token?: string
  readonly headers?: Readonly<Record<string, string>>
  readonly contentType?: string
  readonly timeoutMs?: number
  /** Extra CA certificates (PEM) to trust, e.g. the in-cluster service-account CA. */
  readonly ca?: string
  /** Largest accepted response body, bytes (default 1 MiB). */
  readonly maxBytes?: number
}

/**
 * Sends a request with an optional JSON body and reads a JSON (or text) answer.
 *
 * @example
 * ```ts
 * const r = await httpJson('http://127.0.0.1:4318/v1/setpoints', { token })
 * if (r.ok && r.status === 200) console.log(r.json)
 * ```
 */
export function httpJson(url: string, opts: HttpOptions = {}): Promise<HttpResult> {
  return new Promise((resolve) => {
    let u: URL
    try {
      u = new URL(url)
    } catch {
      resolve({ ok: false, error: `bad URL ${url}` })
      return
    }
    const body =
      opts.body === undefined
        ? undefined
        : typeof opts.body === 'string'
          ? opts.body
          : JSON.stringify(opts.body)
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers }
    if (body !== undefined) {
      headers['content-type'] = opts.contentType ?? 'application/json'
      headers['content-length'] = String(Buffer.byteLength(body))
    }
    if (opts.token) headers['authorization'] = `Bearer ${opts.token}`
    const maxBytes = opts.maxBytes ?? 1 << 20
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      u,
      { method: opts.method ?? 'GET', headers, ...(opts.ca ? { ca: opts.ca } : {}) },
      (res) => {
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (c: Buffer) => {
          size += c.length
          if (size > maxBytes) {
            res.destroy()
            resolve({ ok: false, error: `${u.pathname}: response over ${maxBytes} bytes` })
          } else chunks.push(c)
        })
        res.on('error', (err) => resolve({ ok: false, error: `${u.pathname}: ${err.message}` }))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let json: unknown = null
          if (text.length > 0)
            try {
              json = JSON.parse(text) as unknown
            } catch {
              json = null
            }
          resolve({ ok: true, status: res.statusCode ?? 0, json, text })
        })
      },
    )
    req.setTimeout(opts.timeoutMs ?? 5000, () => {
      req.destroy(new Error(`timed out after ${opts.timeoutMs ?? 5000} ms`))
    })
    req.on('error', (err) =>
      resolve({ ok: false, error: `${opts.method ?? 'GET'} ${u.origin}${u.pathname}: ${err.message}` }),
    )
    if (body !== undefined) req.write(body)
    req.end()
  })
}

/**
 * A short description of a failed answer for an outcome: the status and the server's message.
 *
 * @example describeFailure('PUT /v1/setpoints', r) // 'PUT /v1/setpoints: 409 TG_ERR_SETPOINTS_FENCED: …'
 */
export function describeFailure(what: string, r: HttpResult): string {
  if (!r.ok) return r.error
  const j = r.json as { code?: unknown; message?: unknown; error?: unknown } | null
  const msg =
    j && typeof j === 'object'
      ? [j.code, j.message ?? j.error].filter((x) => typeof x === 'string').join(': ')
      : r.text.slice(0, 200)
  return `${what}: HTTP ${r.status}${msg ? ` ${msg}` : ''}`
}

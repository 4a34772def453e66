import { describeFailure, httpJson } from '../http.js'
import type { Actuator } from './types.js'

/** Options of {@link createModelServerActuator}. */
export interface ModelServerActuatorOptions {
  /** Every replica's base URL (each serves `/v1/batching`). */
  readonly urls: readonly string[]
  readonly token?: string
  readonly timeoutMs?: number
}

/**
 * Reads a `{ windowMs, maxBatch }` answer of the reference model server (contract 3), or null.
 *
 * @example parseBatching({ windowMs: 5, maxBatch: 16 }) // { windowMs: 5, maxBatch: 16 }
 */
export function parseBatching(json: unknown): { windowMs: number; maxBatch: number } | null {
  const j = json as { windowMs?: unknown; maxBatch?: unknown } | null
  if (!j || typeof j.windowMs !== 'number' || typeof j.maxBatch !== 'number') return null
  return { windowMs: j.windowMs, maxBatch: j.maxBatch }
}

/**
 * Puts a batching window and max batch on replicas of the reference model server (contract 3:
 * `GET`/`PUT /v1/batching`, admin bearer token when configured). Shared by the `model-server` actuator (fixed
 * URLs) and the `process` actuator (the replicas it started).
 *
 * @example await putBatching(['http://127.0.0.1:9001'], { windowMs: 8, maxBatch: 16 }, token)
 */
export async function putBatching(
  urls: readonly string[],
  b: { windowMs: number; maxBatch: number },
  token: string | undefined,
  timeoutMs = 5000,
): Promise<{ ok: true } | { ok: false; error: string }> {
  const results = await Promise.all(
    urls.map(async (u) => {
      const r = await httpJson(`${u.replace(/\/$/, '')}/v1/batching`, {
        method: 'PUT',
        body: { windowMs: b.windowMs, maxBatch: b.maxBatch },
        ...(token ? { token } : {}),
        timeoutMs,
      })
      return r.ok && r.status === 200 && parseBatching(r.json)
        ? null
        : `${u}: ${describeFailure('PUT /v1/batching', r)}`
    }),
  )
  const failed = results.filter((x): x is string => x !== null)
  return failed.length === 0 ? { ok: true } : { ok: false, error: failed.join('; ') }
}

/**
 * The batching window and max batch of reference model server replicas at fixed URLs.
 *
 * @example createModelServerActuator({ urls: ['http://127.0.0.1:9001', 'http://127.0.0.1:9002'] })
 */
export function createModelServerActuator(o: ModelServerActuatorOptions): Actuator {
  return {
    name: `model-server ${o.urls.join(',')}`,
    knobs: ['batching'],
    async read() {
      const r = await httpJson(`${o.urls[0]!.replace(/\/$/, '')}/v1/batching`, {
        ...(o.token ? { token: o.token } : {}),
        timeoutMs: o.timeoutMs ?? 5000,
      })
      const b = r.ok && r.status === 200 ? parseBatching(r.json) : null
      if (!b) return { ok: false, error: describeFailure('GET /v1/batching', r) }
      return { ok: true, reading: { batching: b } }
    },
    async apply(change) {
      if (!change.batching) return { ok: true, detail: 'nothing to change' }
      return putBatching(o.urls, change.batching, o.token, o.timeoutMs)
    },
  }
}

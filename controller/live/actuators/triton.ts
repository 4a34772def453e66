import { describeFailure, httpJson } from '../http.js'
import type { Actuator } from './types.js'

/** Options of {@link createTritonActuator}. */
export interface TritonActuatorOptions {
  /** Triton's HTTP endpoint, e.g. http://triton:8000. */
  readonly url: string
  readonly model: string
  readonly timeoutMs?: number
}

const toNum = (v: unknown): number | null =>
  typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : null

/**
 * Triton's dynamic batcher through the model repository extension: reads the model's configuration
 * (`GET /v2/models/{m}/config`), sets `max_batch_size` and `dynamic_batching.max_queue_delay_microseconds`,
 * and reloads the model with that configuration (`POST /v2/repository/models/{m}/load` with
 * `{"parameters":{"config":"<ModelConfig JSON>"}}`; 200 on success, `{"error": …}` otherwise). Triton must
 * run with `--model-control-mode=explicit`. uint64 fields may come back as JSON strings (protobuf's JSON
 * mapping); both are read.
 *
 * @example createTritonActuator({ url: 'http://triton:8000', model: 'resnet50' })
 */
export function createTritonActuator(o: TritonActuatorOptions): Actuator {
  const base = o.url.replace(/\/$/, '')
  const m = encodeURIComponent(o.model)
  const readConfig = async () => {
    const r = await httpJson(`${base}/v2/models/${m}/config`, { timeoutMs: o.timeoutMs ?? 10_000 })
    if (!r.ok || r.status !== 200 || !r.json || typeof r.json !== 'object')
      return { ok: false as const, error: describeFailure(`GET /v2/models/${o.model}/config`, r) }
    return { ok: true as const, config: r.json as Record<string, unknown> }
  }
  return {
    name: `triton ${base} model ${o.model}`,
    knobs: ['batching'],
    async read() {
      const c = await readConfig()
      if (!c.ok) return c
      const db = (c.config['dynamic_batching'] ?? {}) as Record<string, unknown>
      const maxBatch = toNum(c.config['max_batch_size']) ?? 0
      const delayUs = toNum(db['max_queue_delay_microseconds']) ?? 0
      return { ok: true, reading: { batching: { windowMs: delayUs / 1000, maxBatch } } }
    },
    async apply(change) {
      if (!change.batching) return { ok: true, detail: 'nothing to change' }
      const c = await readConfig()
      if (!c.ok) return c
      const config = {
        ...c.config,
        max_batch_size: Math.max(1, Math.round(change.batching.maxBatch)),
        dynamic_batching: {
          ...((c.config['dynamic_batching'] ?? {}) as Record<string, unknown>),
          max_queue_delay_microseconds: Math.max(0, Math.round(change.batching.windowMs * 1000)),
        },
      }
      const r = await httpJson(`${base}/v2/repository/models/${m}/load`, {
        method: 'POST',
        body: { parameters: { config: JSON.stringify(config) } },
        timeoutMs: o.timeoutMs ?? 120_000,
      })
      if (!r.ok || r.status !== 200)
        return { ok: false, error: describeFailure(`POST /v2/repository/models/${o.model}/load`, r) }
      return { ok: true }
    },
  }
}
